// One token through a Sequential of fully connected layers on the GPU: the decode loop as a user runs it
// (pack -> gemm -> output per layer, chained on the device by Sequential.run, one read-back at the end;
// docs/gpu.md "One token through a Sequential"). Bundled by vite to dist/node/token.js beside the bench,
// so bench/device-run.sh runs it on a bare GPU machine. It times, in one process on one device:
//   - wall: `runs` calls of Sequential.run back to back (a context without timestamps), after calls that
//     raise the clocks, as long as the bench's (bench/timing.ts warmUp with FULL_POLICY); and `paused`
//     single calls, each after 200 ms idle;
//   - GPU: each layer's GEMM on its own (a context with timestamps: the layer's problem, its rhs
//     prepacked, the token's lhs from the CPU) summed over the layers, per run; and the GPU time of the
//     run itself, where Sequential.run reports it (a chain of GEMMs);
// and checks the token's output, the first run's and the last timed one's, against the CPU path
// (runLayers, backend 'cpu') bit for bit. A bad flag (or one given twice, or a --json path that is not a
// file in an existing folder: checked before the run) is exit 2, as is bad input the library finds in
// the environment (QGEMM_DAWN_TOGGLES); a mismatch or a failure exit 1; each in one line.
// usage: node dist/node/token.js [--layers 4] [--width 4096] [--runs 50] [--paused 5] [--json FILE]
// (QGEMM_DAWN_NODE names a dawn.node to load instead of the `webgpu` package.)

import { existsSync, statSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { type FullyConnectedParams, layerGemm } from '../src/layers/layers.ts';
import { runLayers, Sequential, type SequentialLayer } from '../src/layers/sequential.ts';
import { GpuContext } from '../src/scheduler/context.ts';
import { InputError } from '../src/errors.ts';
import { FULL_POLICY, stats, warmUp } from './timing.ts';
import { writeWhole } from './write-whole.ts';

const median = (xs: number[]) => stats(xs).medianMs;

const usage = (why: string): never => {
  process.stderr.write(`token: ${why}\n`);
  process.exit(2);
};
const values = (() => {
  try {
    const { values, tokens } = parseArgs({
      options: {
        layers: { type: 'string', default: '4' },
        width: { type: 'string', default: '4096' },
        runs: { type: 'string', default: '50' },
        paused: { type: 'string', default: '5' },
        json: { type: 'string' },
      },
      tokens: true,
    });
    const given = tokens.filter((t) => t.kind === 'option').map((t) => t.name);
    const twice = given.find((name, i) => given.indexOf(name) !== i);
    if (twice) usage(`--${twice}: given twice: give each flag once`);
    return values;
  } catch (e) {
    return usage((e as Error).message);
  }
})();
const count = (flag: string, text: string, least: number, most: number) => {
  if (!/^\d+$/.test(text) || Number(text) < least || Number(text) > most) {
    usage(`--${flag}: expected an integer from ${least} to ${most}, got ${JSON.stringify(text)}`);
  }
  return Number(text);
};
const layers = count('layers', values.layers, 1, 1000);
const width = count('width', values.width, 1, 32768);
const runs = count('runs', values.runs, 1, 100000);
const paused = count('paused', values.paused, 0, 1000);
if (layers * width * width > 2 ** 32) usage(`--layers x --width²: ${layers} layers of ${width}² weights exceed 4 GiB`);
/** --json: a file in an existing folder, checked before the run; written whole (a temporary file renamed). */
const jsonPath = (() => {
  if (values.json === undefined) return undefined;
  const path = resolve(values.json);
  if (
    !values.json ||
    (existsSync(path) && !statSync(path).isFile()) ||
    !existsSync(dirname(path)) ||
    !statSync(dirname(path)).isDirectory()
  ) {
    usage(`--json: ${JSON.stringify(values.json)} is not a file in an existing folder`);
  }
  return path;
})();

/** The layers: uint8 weights, per-tensor scales, int32 bias, RELU between layers; seeded. */
function tokenLayers(): { fc: SequentialLayer[]; x: { data: Uint8Array; shape: number[] } } {
  let seed = 20261128;
  const next = () => {
    seed = (Math.imul(seed, 1103515245) + 12345) >>> 0;
    return seed >>> 16;
  };
  let input = { scale: 0.02, zeroPoint: 128 };
  const fc: SequentialLayer[] = [];
  for (let i = 0; i < layers; i++) {
    const output = { scale: Math.fround(0.02 + (next() % 100) / 10000), zeroPoint: 100 + (next() % 50) };
    const weights = {
      data: Uint8Array.from({ length: width * width }, () => next() % 256),
      shape: [width, width],
      scale: 0.004,
      zeroPoint: 120,
    };
    const bias = Int32Array.from({ length: width }, () => (next() % 4001) - 2000);
    fc.push({
      op: 'fullyConnected',
      params: { input, weights, bias, output, activation: i === layers - 1 ? 'NONE' : 'RELU' },
    } as SequentialLayer);
    input = output;
  }
  return { fc, x: { data: Uint8Array.from({ length: width }, () => next() % 256), shape: [1, width] } };
}

/** The token's run: timed, checked, reported; its exit code. */
async function token(): Promise<number> {
  const { fc, x } = tokenLayers();
  const ctx = await GpuContext.create();
  const timedCtx = await GpuContext.create({ device: ctx.device, timestamps: true });
  const seq = await Sequential.create(ctx, fc);
  const timedSeq = await Sequential.create(timedCtx, fc);
  // Each layer's GEMM as the run derives it (src/layers/layers.ts), rhs prepacked, a 1 x width lhs.
  const layerProblems = [];
  for (const layer of fc) {
    const p = (layer as { params: FullyConnectedParams }).params;
    const { rhs, lhsZeroPoint, rhsZeroPoint, pipeline } = layerGemm('FULLY_CONNECTED', 'uint8', width, p.weights, 'weights', width, p);
    const lhs = { data: x.data, rows: 1, cols: width, order: 'row-major' as const };
    layerProblems.push({ lhs, rhs: await timedCtx.prepack('rhs', rhs), lhsZeroPoint, rhsZeroPoint, pipeline });
  }

  // The token's output against the CPU path's, bit for bit: the first run (which builds the chain plan) and
  // the last timed one (a replay of it).
  const want = (await runLayers(fc, x, { backend: 'cpu' })).data;
  let mismatches = 0;
  const check = (got: ArrayLike<number>) => {
    if (got.length !== want.length) mismatches += Math.max(got.length, want.length);
    else for (let i = 0; i < want.length; i++) if (want[i] !== got[i]) mismatches++;
  };
  check((await seq.run(x)).data);

  // The clocks rise: the bench's warm-up, until the calls are steady.
  const warm = await warmUp(FULL_POLICY, async () => {
    const t0 = performance.now();
    await seq.run(x);
    return performance.now() - t0;
  });
  const walls: number[] = [];
  let last: ArrayLike<number> = [];
  for (let i = 0; i < runs; i++) {
    const t0 = performance.now();
    last = (await seq.run(x)).data;
    walls.push(performance.now() - t0);
  }
  check(last);
  const sums: number[] = [];
  const runGpu: number[] = [];
  const kernels = new Set<string>();
  for (let i = 0; i < runs; i++) {
    let sum: number | null = 0;
    for (const lp of layerProblems) {
      const timing = { gpuMs: null as number | null };
      await timedCtx.gemm(lp, timing);
      sum = sum === null || timing.gpuMs === null ? null : sum + timing.gpuMs; // null: no timestamp queries
      kernels.add(String(timedCtx.lastRun.kernel));
    }
    if (sum !== null) sums.push(sum);
    const timing = { gpuMs: null as number | null };
    await timedSeq.run(x, { timing });
    if (timing.gpuMs !== null) runGpu.push(timing.gpuMs);
  }
  const pausedWalls: number[] = [];
  for (let i = 0; i < paused; i++) {
    await new Promise((r) => setTimeout(r, 200));
    const t0 = performance.now();
    await seq.run(x);
    pausedWalls.push(performance.now() - t0);
  }

  const report = {
    what: `one token (1 x ${width}, uint8) through ${layers} fully connected ${width} x ${width} layers, Sequential.run, resident weights`,
    adapter: ctx.summary,
    kernels: [...kernels],
    runs,
    verified: mismatches === 0, // the first run and the last timed one
    mismatches,
    wallMs: median(walls),
    wallMinMs: Math.min(...walls),
    warm,
    afterPauseWallMs: pausedWalls.length ? median(pausedWalls) : null,
    sumGpuMs: sums.length ? median(sums) : null,
    runGpuMs: runGpu.length ? median(runGpu) : null,
    wallOverSumGpu: sums.length ? median(walls) / median(sums) : null,
    node: process.version,
  };
  if (jsonPath) writeWhole(jsonPath, `${JSON.stringify(report, null, 1)}\n`);
  const f = (v: number | null) => (v === null ? '-' : v.toFixed(3));
  console.log('token: layers x width | wall ms | after pause | sum of GPU ms | run GPU ms | wall / GPU | verified');
  console.log(
    `token: ${layers} x ${width} | ${f(report.wallMs)} | ${f(report.afterPauseWallMs)} | ${f(report.sumGpuMs)} | ${f(report.runGpuMs)} | ${report.wallOverSumGpu === null ? '-' : report.wallOverSumGpu.toFixed(2)} | ${report.verified ? 'yes' : `NO (${mismatches} differ)`}`,
  );
  seq.destroy();
  timedSeq.destroy();
  timedCtx.destroy();
  ctx.destroy();
  return report.verified ? 0 : 1;
}

token().then(
  (code) => process.exit(code),
  (e) => {
    // Bad input the library found (QGEMM_DAWN_TOGGLES) is exit 2, anything else 1 (no adapter, a dawn.node
    // that does not load: NoAdapterError); one line.
    process.stderr.write(`token: ${String((e as Error)?.message ?? e).split('\n')[0]}\n`);
    process.exit(e instanceof InputError ? 2 : 1);
  },
);
