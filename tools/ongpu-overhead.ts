// gemmOnGpu's host time, two source trees side by side in one process on one device (as
// tools/decode-overhead.ts does for ctx.gemm): the wall time of a resident `gemmOnGpu` call (rhs
// prepacked, dst left on the GPU and released after the timing), with the lhs from the CPU (`cpu`) or a
// GpuMatrix uploaded once (`gpu`, the benchmark's `device` mode). The call returns once its work is
// submitted and its error scope popped, not when the GPU is done, so its wall (wallMs) is host time; the
// time until the queue is done (doneMs: onSubmittedWorkDone awaited after the call) and the GPU time of
// a timed call of the same problem (gpuMs, a context with timestamps) are given beside it. Per round:
// `calls` iterations, each running every tree's timed call then its untimed one, the trees in turn, so
// that the machine's load falls on both alike. The first tree's data (bench/problems.ts) for every tree.
// Run with Node 24 from the repository root (tools/ts-raw-hook.mjs lets it import the sources):
//   node --import ./tools/ts-raw-hook.mjs --experimental-transform-types --no-warnings tools/ongpu-overhead.ts \
//     --trees main=/path/to/main,branch=. [--shape 1x64x64] [--rounds 5] [--calls 60] [--out file.json]

import { writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { median, option, sourceTrees } from './side-by-side.ts';

const trees = sourceTrees('branch=.');
const [m, n, k] = option('--shape', '1x64x64').split('x').map(Number);
const rounds = Number(option('--rounds', '5'));
const calls = Number(option('--calls', '60'));
const out = option('--out', '');

// biome-ignore lint/suspicious/noExplicitAny: each tree's own GpuContext class, typed by its own sources
type Ctx = any;
const { makeShapeData } = await import(`${trees[0].root}/bench/problems.ts`);
const data = makeShapeData({ m, n, k, family: 'custom' }, 1, 'uint8');
let device: GPUDevice | undefined;
const setups: { name: string; lhs: 'cpu' | 'gpu'; timed: Ctx; plain: Ctx; timedInput: unknown; plainInput: unknown }[] = [];
for (const t of trees) {
  const { GpuContext } = await import(`${t.root}/src/scheduler/context.ts`);
  for (const lhs of ['cpu', 'gpu'] as const) {
    const timed: Ctx = await GpuContext.create({ ...(device ? { device } : {}), timestamps: true });
    device ??= timed.device as GPUDevice;
    const plain: Ctx = await GpuContext.create({ device, timestamps: false });
    const input = async (ctx: Ctx) => {
      const rhs = await ctx.prepack('rhs', data.problem.rhs);
      if (lhs === 'cpu') return { ...data.problem, rhs };
      const bytes: Uint8Array = data.problem.lhs.data;
      const buffer = device!.createBuffer({
        size: Math.ceil(bytes.length / 4) * 4,
        usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_DST,
      });
      device!.queue.writeBuffer(
        buffer,
        0,
        Uint8Array.from({ length: buffer.size }, (_, i) => bytes[i] ?? 0),
      );
      return { ...data.problem, rhs, lhs: { buffer, rows: m, cols: k, order: 'row-major', dtype: 'uint8', stride: k } };
    };
    const s = { name: t.name, lhs, timed, plain, timedInput: await input(timed), plainInput: await input(plain) };
    for (let i = 0; i < 10; i++) {
      timed.releaseMatrix(await timed.gemmOnGpu(s.timedInput, { gpuMs: null }));
      plain.releaseMatrix(await plain.gemmOnGpu(s.plainInput));
    }
    setups.push(s);
  }
}

const results: Record<string, unknown>[] = [];
for (let round = 0; round < rounds; round++) {
  const per = setups.map(() => ({ wall: [] as number[], gpu: [] as number[], done: [] as number[] }));
  for (let i = 0; i < calls; i++) {
    for (const [j, s] of setups.entries()) {
      const timing = { gpuMs: null as number | null };
      s.timed.releaseMatrix(await s.timed.gemmOnGpu(s.timedInput, timing));
      const t0 = performance.now();
      const dst = await s.plain.gemmOnGpu(s.plainInput);
      per[j].wall.push(performance.now() - t0);
      await device!.queue.onSubmittedWorkDone();
      per[j].done.push(performance.now() - t0);
      s.plain.releaseMatrix(dst);
      if (timing.gpuMs !== null) per[j].gpu.push(timing.gpuMs);
    }
  }
  for (const [j, s] of setups.entries()) {
    const row = {
      round,
      tree: s.name,
      lhs: s.lhs,
      kernel: s.plain.lastRun.kernel,
      gpuMs: median(per[j].gpu),
      wallMs: median(per[j].wall),
      doneMs: median(per[j].done),
      load1: loadavg()[0],
    };
    results.push(row);
    console.log(JSON.stringify(row, (_, v) => (typeof v === 'number' ? Number(v.toFixed(4)) : v)));
  }
}
if (out)
  writeFileSync(out, `${JSON.stringify({ shape: `${m}x${n}x${k}`, rounds, calls, node: process.version, trees, results }, null, 1)}\n`);
for (const s of setups) {
  s.timed.destroy();
  s.plain.destroy();
}
process.exit(0);
