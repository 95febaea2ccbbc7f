// A convolution layer's passes and time, two source trees side by side in one process on one device
// (as tools/decode-overhead.ts compares trees): the suite's conv layers (bench/shapes.ts CONV_LAYERS) run
// as each tree's conv2d runs them on a GpuContext, the filter prepacked (the benchmark's `resident`
// mode): a tree with src/scheduler/patches.ts gives the patches to ctx.gemm as its lhs (the patch pack
// inside the GEMM's pass: one submission); an older tree packs them with ctx.packPatches first (a
// submission of its own), then runs ctx.gemm on the packed operand. Per round, `calls` iterations each
// run every tree's call with timestamp queries (GPU time: the sum of the call's passes) and then without
// (wall time), the trees in turn (in alternating order), so that the machine's load falls on both alike;
// medians per round.
// Also the submissions (queue.submit calls), compute passes and dispatches of one call per tree.
// `--as-hardware`: each tree's contexts take the configurations of a hardware adapter on a software one
// (createGpuContextAsHardware, as the tests do), for the forms a software adapter is not offered.
// Run with Node 24 from the repository root (tools/ts-raw-hook.mjs lets it import the sources):
//   node --import ./tools/ts-raw-hook.mjs --experimental-transform-types --no-warnings tools/conv-passes.ts \
//     --trees before=/path/to/main,after=. [--layers KEY,...] [--rounds 3] [--calls 5] [--as-hardware] [--out file.json]

import { existsSync, writeFileSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { median, option, sourceTrees } from './side-by-side.ts';

const trees = sourceTrees('after=.').map((t) => ({ ...t, fused: existsSync(`${t.root}/src/scheduler/patches.ts`) }));
const rounds = Number(option('--rounds', '3'));
const calls = Number(option('--calls', '5'));
const out = option('--out', '');
const asHardware = process.argv.includes('--as-hardware');

// biome-ignore lint/suspicious/noExplicitAny: each tree's own GpuContext class, typed by its own sources
type Ctx = any;
const loaded = [];
for (const t of trees) {
  const { GpuContext, createGpuContextAsHardware } = await import(`${t.root}/src/scheduler/context.ts`);
  const create = asHardware ? createGpuContextAsHardware : (o: unknown) => GpuContext.create(o);
  loaded.push({ ...t, GpuContext, create });
}
const { makeShapeData } = await import(`${trees[0].root}/bench/problems.ts`);
const { CONV_LAYERS, convKey, convShape, parseConvKey } = await import(`${trees[0].root}/bench/shapes.ts`);
// --layers conv14x14x64-k3x3-s1-o64,...: other layers (bench/shapes.ts convKey), e.g. smaller ones on a software adapter.
const layersArg = option('--layers', '');
const LAYERS = layersArg
  ? layersArg.split(',').map((key) => {
      const layer = parseConvKey(key);
      if (!layer) throw new Error(`--layers: ${key} is not a convolution layer key`);
      return convShape(layer);
    })
  : CONV_LAYERS;
const first: Ctx = await loaded[0].GpuContext.create({ timestamps: true });
const device: GPUDevice = first.device;

// Counts what one call records: submissions, compute passes, dispatches.
const counts = { submits: 0, passes: 0, dispatches: 0 };
const queue = device.queue;
const submit = queue.submit.bind(queue);
queue.submit = (buffers: Iterable<GPUCommandBuffer>) => {
  counts.submits++;
  submit(buffers);
};
const createEncoder = device.createCommandEncoder.bind(device);
device.createCommandEncoder = (d?: GPUCommandEncoderDescriptor) => {
  const encoder = createEncoder(d);
  const begin = encoder.beginComputePass.bind(encoder);
  encoder.beginComputePass = (pd?: GPUComputePassDescriptor) => {
    counts.passes++;
    const pass = begin(pd);
    const dispatch = pass.dispatchWorkgroups.bind(pass);
    pass.dispatchWorkgroups = (x: number, y?: number, z?: number) => {
      counts.dispatches++;
      dispatch(x, y, z);
    };
    return pass;
  };
  return encoder;
};

const results: Record<string, unknown>[] = [];
const passes: Record<string, unknown>[] = [];
for (const shape of LAYERS) {
  const conv = makeShapeData(shape, 1, 'uint8').conv;
  // biome-ignore lint/suspicious/noExplicitAny: per-tree contexts and calls, typed by their own sources
  const setups: any[] = [];
  for (const t of loaded) {
    const timed: Ctx = await t.create({ device, timestamps: true });
    const plain: Ctx = await t.create({ device, timestamps: false });
    const rhsTimed = await timed.prepack('rhs', conv.gemm.rhs);
    const rhsPlain = await plain.prepack('rhs', conv.gemm.rhs);
    // One layer call: GPU time the sum of its passes' timestamps.
    const call = async (ctx: Ctx, rhs: unknown, timing?: { gpuMs: number | null }) => {
      if (t.fused) {
        const lhs = { input: conv.input, geometry: conv.geometry, zeroPoint: conv.params.input.zeroPoint };
        return { result: await ctx.gemm({ ...conv.gemm, lhs, rhs }, timing), gpuMs: timing?.gpuMs ?? null };
      }
      const patchTiming = timing ? { gpuMs: null as number | null } : undefined;
      const lhs = await ctx.packPatches(conv.input, conv.geometry, conv.params.input.zeroPoint, patchTiming);
      try {
        const result = await ctx.gemm({ ...conv.gemm, lhs, rhs }, timing);
        const gpuMs = timing?.gpuMs != null && patchTiming?.gpuMs != null ? timing.gpuMs + patchTiming.gpuMs : null;
        return { result, gpuMs };
      } finally {
        lhs.destroy();
      }
    };
    for (let i = 0; i < 2; i++) {
      await call(timed, rhsTimed, { gpuMs: null });
      await call(plain, rhsPlain);
    }
    Object.assign(counts, { submits: 0, passes: 0, dispatches: 0 });
    const { result } = await call(plain, rhsPlain);
    const row = {
      layer: convKey(shape.conv),
      tree: t.name,
      path: t.fused ? 'patches in the GEMM pass' : 'packPatches, then gemm',
      kernel: plain.lastRun.kernel,
      ...counts,
    };
    passes.push(row);
    console.log(JSON.stringify(row));
    setups.push({ t, timed, plain, rhsTimed, rhsPlain, call, result });
  }
  const same = setups.every((s) => Buffer.compare(Buffer.from(s.result.data.buffer), Buffer.from(setups[0].result.data.buffer)) === 0);
  if (!same) throw new Error(`${convKey(shape.conv)}: the trees' outputs differ`);
  for (let round = 0; round < rounds; round++) {
    const per = setups.map(() => ({ gpu: [] as number[], wall: [] as number[] }));
    for (let i = 0; i < calls; i++) {
      // The trees in turn, the order reversed every other iteration (no tree always runs first).
      const order = [...setups.entries()];
      if (i % 2) order.reverse();
      for (const [j, s] of order) {
        const timing = { gpuMs: null as number | null };
        const { gpuMs } = await s.call(s.timed, s.rhsTimed, timing);
        if (gpuMs !== null) per[j].gpu.push(gpuMs);
        const t0 = performance.now();
        await s.call(s.plain, s.rhsPlain);
        per[j].wall.push(performance.now() - t0);
      }
    }
    for (const [j, s] of setups.entries()) {
      const row = {
        layer: convKey(shape.conv),
        round,
        tree: s.t.name,
        gpuMs: per[j].gpu.length ? median(per[j].gpu) : null,
        wallMs: median(per[j].wall),
        load1: loadavg()[0],
      };
      results.push(row);
      console.log(JSON.stringify(row, (_, v) => (typeof v === 'number' ? Number(v.toFixed(4)) : v)));
    }
  }
  for (const s of setups) {
    s.timed.destroy();
    s.plain.destroy();
  }
}

const summary = LAYERS.map((shape: { conv: unknown }) => {
  const layer = convKey(shape.conv);
  const of = (tree: string, key: 'gpuMs' | 'wallMs') =>
    median(results.filter((r) => r.layer === layer && r.tree === tree && r[key] !== null).map((r) => r[key] as number));
  const row: Record<string, unknown> = { layer };
  for (const t of trees) Object.assign(row, { [`${t.name}GpuMs`]: of(t.name, 'gpuMs'), [`${t.name}WallMs`]: of(t.name, 'wallMs') });
  if (trees.length === 2) {
    const [a, b] = trees.map((t) => t.name);
    row.gpuRatio = (row[`${b}GpuMs`] as number) / (row[`${a}GpuMs`] as number);
    row.wallRatio = (row[`${b}WallMs`] as number) / (row[`${a}WallMs`] as number);
  }
  return row;
});
console.log(JSON.stringify({ summary }, (_, v) => (typeof v === 'number' ? Number(v.toFixed(4)) : v)));
const adapter = first.caps?.isSoftware ? 'software adapter (SwiftShader: a CPU emulation; ratios only)' : 'hardware adapter';
if (out) {
  const report = {
    tool: 'tools/conv-passes.ts',
    node: process.version,
    cpus: cpus().length,
    cpu: cpus()[0]?.model,
    adapter,
    configurations: asHardware ? "a hardware adapter's (--as-hardware)" : "the adapter's own",
    rounds,
    calls,
    passes,
    results,
    summary,
  };
  writeFileSync(out, `${JSON.stringify(report, null, 1)}\n`);
}
first.destroy();
