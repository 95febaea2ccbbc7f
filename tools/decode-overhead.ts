// The decode call's overhead, two source trees side by side in one process on one device: the wall time
// of a resident GEMM (rhs prepacked, lhs from the CPU, dst read back) minus its GPU time (timestamp
// queries), for each tree's GpuContext (src/scheduler/context.ts), in alternating rounds so that the
// machine's load falls on both alike. Per round and tree: `calls` calls with timestamp queries (their
// wall time is what the benchmark reported before its untimed rows; timedWallMinusGpuMs is the median of
// each call's wall minus its own GPU time; their median GPU time is the GPU time of the other figures),
// `calls` calls on a context without timestamps (the untimed wall time, minus that GPU time), and `paused`
// single calls each after 200 ms idle; the first tree's data (bench/problems.ts) for every tree.
// Run with Node 24 from the repository root (tools/ts-raw-hook.mjs lets it import the sources):
//   node --import ./tools/ts-raw-hook.mjs --experimental-transform-types --no-warnings tools/decode-overhead.ts \
//     --trees main=/path/to/main,branch=. [--shape 1x64x64] [--rounds 5] [--calls 100] [--paused 5] [--out file.json]

import { writeFileSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { resolve } from 'node:path';

const args = process.argv.slice(2);
const opt = (name: string, dflt: string) => {
  const i = args.indexOf(name);
  return i >= 0 ? args[i + 1] : dflt;
};
const trees = opt('--trees', 'branch=.')
  .split(',')
  .map((t) => {
    const [name, path] = t.split('=');
    return { name, root: resolve(path) };
  });
const [m, n, k] = opt('--shape', '1x64x64').split('x').map(Number);
const rounds = Number(opt('--rounds', '5'));
const calls = Number(opt('--calls', '100'));
const paused = Number(opt('--paused', '5'));
const out = opt('--out', '');

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[s.length >> 1] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};
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
  for (const s of setups) {
    const timedWall: number[] = [];
    const gpu: number[] = [];
    const paired: number[] = [];
    const plainWall: number[] = [];
    for (let i = 0; i < calls; i++) {
      const timing = { gpuMs: null as number | null };
      const t0 = performance.now();
      await s.timed.gemm(s.timedInput, timing);
      timedWall.push(performance.now() - t0);
      if (timing.gpuMs !== null) {
        gpu.push(timing.gpuMs);
        paired.push(timedWall[i] - timing.gpuMs);
      }
    }
    for (let i = 0; i < calls; i++) {
      const t0 = performance.now();
      await s.plain.gemm(s.plainInput);
      plainWall.push(performance.now() - t0);
    }
    const pausedWall: number[] = [];
    for (let i = 0; i < paused; i++) {
      await sleep(200);
      const t0 = performance.now();
      await s.plain.gemm(s.plainInput);
      pausedWall.push(performance.now() - t0);
    }
    const g = median(gpu);
    const row = {
      round,
      tree: s.name,
      kernel: s.plain.lastRun.kernel,
      gpuMs: g,
      timedWallMs: median(timedWall),
      untimedWallMs: median(plainWall),
      afterPauseWallMs: median(pausedWall),
      timedWallMinusGpuMs: median(paired),
      untimedWallMinusGpuMs: median(plainWall) - g,
      load1: loadavg()[0],
    };
    results.push(row);
    console.log(JSON.stringify(row, (_, v) => (typeof v === 'number' ? Number(v.toFixed(4)) : v)));
  }
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
  };
  writeFileSync(out, `${JSON.stringify(report, null, 1)}\n`);
}
for (const s of setups) {
  s.timed.destroy();
  s.plain.destroy();
}
process.exit(0);
