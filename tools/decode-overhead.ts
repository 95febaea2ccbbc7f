// The decode call's overhead, two source trees side by side in one process on one device: the wall time
// of a resident GEMM (rhs prepacked, lhs from the CPU, dst read back) minus its GPU time (timestamp
// queries), for each tree's GpuContext (src/scheduler/context.ts), in alternating rounds so that the
// machine's load falls on both alike. Per round: `calls` iterations, each running every tree's call with
// timestamp queries (its wall time is what the benchmark reported before its untimed rows;
// timedWallMinusGpuMs is the median of each call's wall minus its own GPU time) and then its call on a
// context without timestamps (untimedWallMinusGpuMs: its wall minus the GPU time of the timed call just
// before it), the trees in turn; then `paused`
// single calls each after 200 ms idle; the first tree's data (bench/problems.ts) for every tree.
// Run with Node 24 from the repository root (tools/ts-raw-hook.mjs lets it import the sources):
//   node --import ./tools/ts-raw-hook.mjs --experimental-transform-types --no-warnings tools/decode-overhead.ts \
//     --trees main=/path/to/main,branch=. [--shape 1x64x64] [--rounds 5] [--calls 100] [--paused 5] [--sequential 4x64] [--out file.json]

import { writeFileSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { median, option, sourceTrees } from './side-by-side.ts';

const trees = sourceTrees('branch=.');
const [m, n, k] = option('--shape', '1x64x64').split('x').map(Number);
const rounds = Number(option('--rounds', '5'));
const calls = Number(option('--calls', '100'));
const paused = Number(option('--paused', '5'));
const out = option('--out', '');

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

// biome-ignore lint/suspicious/noExplicitAny: each tree's own GpuContext class, typed by its own sources
type Ctx = any;
const loaded = [];
for (const t of trees) {
  const { GpuContext } = await import(`${t.root}/src/scheduler/context.ts`);
  loaded.push({ ...t, GpuContext });
}
const { makeShapeData } = await import(`${trees[0].root}/bench/problems.ts`);
const data = makeShapeData({ m, n, k, family: 'custom' }, 1, 'uint8');
const first: Ctx = await loaded[0].GpuContext.create({ timestamps: true });
const device: GPUDevice = first.device;

interface Setup {
  name: string;
  timed: Ctx;
  plain: Ctx;
  timedInput: unknown;
  plainInput: unknown;
}
const setups: Setup[] = [];
for (const t of loaded) {
  const timed: Ctx = await t.GpuContext.create({ device, timestamps: true });
  const plain: Ctx = await t.GpuContext.create({ device, timestamps: false });
  const timedInput = { ...data.problem, rhs: await timed.prepack('rhs', data.problem.rhs) };
  const plainInput = { ...data.problem, rhs: await plain.prepack('rhs', data.problem.rhs) };
  for (let i = 0; i < 10; i++) {
    await timed.gemm(timedInput, { gpuMs: null });
    await plain.gemm(plainInput);
  }
  setups.push({ name: t.name, timed, plain, timedInput, plainInput });
}

const results: Record<string, unknown>[] = [];
for (let round = 0; round < rounds; round++) {
  // Per iteration, every tree's timed call then its untimed call, the trees in turn: the calls compared
  // run within a few milliseconds of each other, so that the machine's load falls on them alike.
  const per = setups.map(() => ({ timedWall: [] as number[], gpu: [] as number[], untimedWall: [] as number[] }));
  const timedPaired = setups.map(() => [] as number[]);
  const untimedPaired = setups.map(() => [] as number[]);
  for (let i = 0; i < calls; i++) {
    for (const [j, s] of setups.entries()) {
      const timing = { gpuMs: null as number | null };
      let t0 = performance.now();
      await s.timed.gemm(s.timedInput, timing);
      const timedWall = performance.now() - t0;
      t0 = performance.now();
      await s.plain.gemm(s.plainInput);
      const untimedWall = performance.now() - t0;
      per[j].timedWall.push(timedWall);
      per[j].untimedWall.push(untimedWall);
      if (timing.gpuMs !== null) {
        per[j].gpu.push(timing.gpuMs);
        timedPaired[j].push(timedWall - timing.gpuMs);
        untimedPaired[j].push(untimedWall - timing.gpuMs);
      }
    }
  }
  const pausedWall = setups.map(() => [] as number[]);
  for (let i = 0; i < paused; i++) {
    for (const [j, s] of setups.entries()) {
      await sleep(200);
      const t0 = performance.now();
      await s.plain.gemm(s.plainInput);
      pausedWall[j].push(performance.now() - t0);
    }
  }
  for (const [j, s] of setups.entries()) {
    const row = {
      round,
      tree: s.name,
      kernel: s.plain.lastRun.kernel,
      gpuMs: median(per[j].gpu),
      timedWallMs: median(per[j].timedWall),
      untimedWallMs: median(per[j].untimedWall),
      afterPauseWallMs: median(pausedWall[j]),
      timedWallMinusGpuMs: median(timedPaired[j]),
      untimedWallMinusGpuMs: median(untimedPaired[j]),
      load1: loadavg()[0],
    };
    results.push(row);
    console.log(JSON.stringify(row, (_, v) => (typeof v === 'number' ? Number(v.toFixed(4)) : v)));
  }
}

// --sequential LxW: one token (1 x W, uint8) through L fully connected W x W layers (Sequential.run), per
// tree, the trees in turn per run; medians over `calls` runs of the wall time (a context without
// timestamps). The GPU time: each layer's GEMM timed on its own (a context with timestamps: ctx.gemm of
// the layer's problem, the token's lhs from the CPU; the same kernels and dispatches as in the run),
// summed over the layers (sumGpuMs); and, where a tree's Sequential.run takes `timing`, the GPU time of
// the run itself (runGpuMs: one pass for the chain); and the median of each run's wall over the first
// tree's in the same iteration (wallOverFirstTreePaired), which the machine's load drifts least.
const sequential = option('--sequential', '');
const sequentialSummary: Record<string, unknown>[] = [];
if (sequential) {
  const [layers, width] = sequential.split('x').map(Number);
  let seed = 12345;
  const next = () => {
    seed = (seed * 1103515245 + 12345) >>> 0;
    return seed >>> 16;
  };
  let input = { scale: 0.02, zeroPoint: 128 };
  const params = Array.from({ length: layers }, (_, i) => {
    const output = { scale: Math.fround(0.02 + (next() % 100) / 10000), zeroPoint: 100 + (next() % 50) };
    const p = {
      input,
      weights: {
        data: Uint8Array.from({ length: width * width }, () => next() % 256),
        shape: [width, width],
        scale: 0.004,
        zeroPoint: 120,
      },
      bias: Int32Array.from({ length: width }, () => (next() % 4001) - 2000),
      output,
      activation: i === layers - 1 ? 'NONE' : 'RELU',
    };
    input = output;
    return p;
  });
  const x = { data: Uint8Array.from({ length: width }, () => next() % 256), shape: [1, width] };
  const fc = params.map((p) => ({ op: 'fullyConnected', params: p }));
  interface SequentialRun {
    name: string;
    ctx: Ctx;
    seq: Ctx;
    timedCtx: Ctx;
    timedSeq: Ctx;
    layerProblems: unknown[];
    walls: number[];
    sums: number[];
    runGpu: number[];
    out: string;
  }
  const runs: SequentialRun[] = [];
  for (const t of loaded) {
    const { Sequential } = await import(`${t.root}/src/layers/sequential.ts`);
    const ctx: Ctx = await t.GpuContext.create({ device });
    const seq = await Sequential.create(ctx, fc);
    const timedCtx: Ctx = await t.GpuContext.create({ device, timestamps: true });
    const timedSeq = await Sequential.create(timedCtx, fc);
    // each layer's GEMM as the run makes it (the Sequential's derived problem), its rhs prepacked, a 1 x W lhs
    const layerProblems = [];
    for (const n of seq.graph.nodes) {
      const { rhs, lhsZeroPoint, rhsZeroPoint, pipeline } = n.gemm;
      const lhs = { data: x.data, rows: 1, cols: width, order: 'row-major' };
      layerProblems.push({ lhs, rhs: await timedCtx.prepack('rhs', rhs), lhsZeroPoint, rhsZeroPoint, pipeline });
    }
    for (let i = 0; i < 5; i++) {
      await seq.run(x);
      await timedSeq.run(x, { timing: { gpuMs: null } });
      for (const lp of layerProblems) await timedCtx.gemm(lp, { gpuMs: null });
    }
    runs.push({
      name: t.name,
      ctx,
      seq,
      timedCtx,
      timedSeq,
      layerProblems,
      walls: [] as number[],
      sums: [] as number[],
      runGpu: [] as number[],
      out: '',
    });
  }
  // What one run asks of the device, counted (the calls of WebGPU's API made by the library per token).
  const countCalls = async (fn: () => Promise<unknown>) => {
    const counts = { submits: 0, commandBuffers: 0, maps: 0, errorScopes: 0, bindGroups: 0, buffers: 0 };
    const queue = Object.getPrototypeOf(device.queue);
    const probe = device.createBuffer({ size: 4, usage: GPUBufferUsage.MAP_READ });
    const bufferProto = Object.getPrototypeOf(probe);
    probe.destroy();
    const deviceProto = Object.getPrototypeOf(device);
    const wrap = (o: Record<string, (...a: unknown[]) => unknown>, name: string, count: (...a: unknown[]) => void) => {
      const f = o[name];
      o[name] = function (this: unknown, ...a: unknown[]) {
        count(...a);
        return f.apply(this, a);
      };
      return () => {
        o[name] = f;
      };
    };
    const undo = [
      wrap(queue, 'submit', (b) => {
        counts.submits++;
        counts.commandBuffers += [...(b as GPUCommandBuffer[])].length;
      }),
      wrap(bufferProto, 'mapAsync', () => counts.maps++),
      wrap(deviceProto, 'pushErrorScope', () => counts.errorScopes++),
      wrap(deviceProto, 'createBindGroup', () => counts.bindGroups++),
      wrap(deviceProto, 'createBuffer', () => counts.buffers++),
    ];
    try {
      await fn();
    } finally {
      for (const u of undo) u();
    }
    return counts;
  };
  const perToken = new Map<string, unknown>();
  for (const r of runs) perToken.set(r.name, await countCalls(() => r.seq.run(x)));
  for (let i = 0; i < calls; i++) {
    for (const r of runs) {
      const t0 = performance.now();
      const y = await r.seq.run(x);
      r.walls.push(performance.now() - t0);
      r.out = Array.from(y.data as Uint8Array).join(',');
      let sum = 0;
      for (const lp of r.layerProblems) {
        const timing = { gpuMs: null as number | null };
        await r.timedCtx.gemm(lp, timing);
        sum += timing.gpuMs ?? Number.NaN;
      }
      r.sums.push(sum);
      const timing = { gpuMs: null as number | null };
      await r.timedSeq.run(x, { timing });
      if (timing.gpuMs !== null) r.runGpu.push(timing.gpuMs);
    }
  }
  if (new Set(runs.map((r) => r.out)).size !== 1) throw new Error('the trees disagree on the Sequential output');
  for (const r of runs) {
    const medianMs = median(r.walls);
    const sumGpuMs = median(r.sums);
    sequentialSummary.push({
      tree: r.name,
      layers,
      width,
      runs: calls,
      medianMs,
      minMs: Math.min(...r.walls),
      sumGpuMs,
      wallOverSumGpu: medianMs / sumGpuMs,
      runGpuMs: r.runGpu.length ? median(r.runGpu) : null,
      // this tree's wall over the first tree's in the same iteration (calls a few milliseconds apart), median
      wallOverFirstTreePaired: median(r.walls.map((w, i) => w / runs[0].walls[i])),
      perToken: perToken.get(r.name),
      load1: loadavg()[0],
    });
    r.seq.destroy();
    r.timedSeq.destroy();
    r.ctx.destroy();
    r.timedCtx.destroy();
  }
  console.log(JSON.stringify(sequentialSummary));
}

const summary = setups.map((s) => {
  const rows = results.filter((r) => r.tree === s.name) as Record<string, number>[];
  const pick = (f: string) => median(rows.map((r) => r[f]));
  return {
    tree: s.name,
    kernel: s.plain.lastRun.kernel,
    rounds: rows.length,
    callsPerRound: calls,
    gpuMs: pick('gpuMs'),
    timedWallMs: pick('timedWallMs'),
    untimedWallMs: pick('untimedWallMs'),
    afterPauseWallMs: pick('afterPauseWallMs'),
    timedWallMinusGpuMs: pick('timedWallMinusGpuMs'),
    untimedWallMinusGpuMs: pick('untimedWallMinusGpuMs'),
  };
});
console.log(JSON.stringify(summary, null, 1));
if (out) {
  const report = {
    what: `resident ${m}x${n}x${k} GEMM (uint8 output pipeline), wall minus GPU time, trees side by side in one process on one device`,
    adapter: first.summary,
    machine: { cpus: cpus().length, cpu: cpus()[0]?.model, node: process.version, loadavgAtEnd: loadavg() },
    trees: trees.map((t) => t.name),
    summary,
    rounds: results,
    ...(sequential ? { sequential: sequentialSummary } : {}),
  };
  writeFileSync(out, `${JSON.stringify(report, null, 1)}\n`);
}
for (const s of setups) {
  s.timed.destroy();
  s.plain.destroy();
}
process.exit(0);
