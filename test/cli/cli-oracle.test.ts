// Differential test of the `qgemm` CLI against the independent BigInt oracle (test/oracle): for a few
// hundred seeded random gemm specs (shapes up to ~100 from the sweep, uint8/int8, both storage
// orders, scalar/extreme/vector zero points, every output stage kind incl. per-channel variants),
// `qgemm run spec.json --backend cpu` must write exactly what oracleGemm computes. Most runs call
// the CLI in-process through `main`; a few spawn the real `bin/qgemm.mjs` (building dist/ first if
// needed). A mismatch reports, per seed, the number of bad elements, the max abs diff, the first few
// (m, n, got, want) and the spec JSON; the failing spec's folder is kept for reproduction, and
// `writeRandomSpec(dir, seed)` (with `{ bitDepth: true }` for the bitDepth ones) regenerates it anywhere.
//
// The same specs run through `--backend webgpu` (Dawn; SwiftShader on a machine without a GPU): a few
// hundred plain and bitDepth specs and every boundary case, against the same oracle.
//
// Knobs: QGEMM_ORACLE_SPECS (number of in-process specs, default 500), QGEMM_ORACLE_LOWBIT_SPECS
// (bitDepth specs, default 200), QGEMM_ORACLE_GPU_SPECS (webgpu specs, default 200, plus half as many
// bitDepth ones), QGEMM_ORACLE_SEED (first seed).

import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { main } from '../../src/cli/main.ts';
import { parseNpy, serializeNpy } from '../../src/io/npy.ts';
import { loadGemmSpec, oracleGemm, type OracleResult } from '../oracle/gemm-oracle.ts';
import { writeRandomSpec, type RandomSpecOptions } from '../oracle/random-spec.ts';
import { getGpu } from '../gpu/gpu-env.ts';

const COUNT = Number(process.env.QGEMM_ORACLE_SPECS ?? 500);
const FIRST_SEED = Number(process.env.QGEMM_ORACLE_SEED ?? 0x5eed0000);
const COUNT_LOWBIT = Number(process.env.QGEMM_ORACLE_LOWBIT_SPECS ?? 200);
const COUNT_GPU = Number(process.env.QGEMM_ORACLE_GPU_SPECS ?? 200);
type Backend = 'cpu' | 'webgpu';
const BATCH = 50;
const REPO = resolve(import.meta.dirname, '../..');
const MIN32 = -2147483648;
const MAX32 = 2147483647;

const root = mkdtempSync(join(tmpdir(), 'qgemm-cli-oracle-'));
const keep = new Set<string>(); // folders of failing specs, kept for reproduction
afterAll(() => {
  if (keep.size === 0) rmSync(root, { recursive: true, force: true });
  else for (const d of keep) console.error(`kept failing spec folder: ${d}`);
});

/** Compares the CLI's .npy output with the oracle; returns a failure report, or null when bit-exact. */
function compare(seed: number, dir: string, want: OracleResult, outBytes: Buffer, specJson: string): string | null {
  const head = `seed ${seed} (${dir}), spec ${specJson}`;
  let got: ReturnType<typeof parseNpy>;
  try {
    got = parseNpy(new Uint8Array(outBytes));
  } catch (e) {
    return `${head}\n  output .npy does not parse: ${(e as Error).message}`;
  }
  const [M, N] = want.shape;
  const meta: string[] = [];
  if (got.dtype !== want.dtype) meta.push(`dtype ${got.dtype}, want ${want.dtype}`);
  if (JSON.stringify(got.shape) !== JSON.stringify([M, N])) meta.push(`shape ${JSON.stringify(got.shape)}, want [${M},${N}]`);
  if (got.fortranOrder) meta.push('written in Fortran order, want C order');
  if (meta.length > 0 && (got.data.length !== M * N || got.fortranOrder)) return `${head}\n  ${meta.join('; ')}`;
  let bad = 0;
  let maxDiff = 0;
  const first: string[] = [];
  for (let m = 0; m < M; m++) {
    for (let n = 0; n < N; n++) {
      const g = Number(got.data[m * N + n]);
      const w = want.data[m * N + n];
      if (g !== w) {
        bad++;
        maxDiff = Math.max(maxDiff, Math.abs(g - w));
        if (first.length < 6) first.push(`(${m},${n}) got ${g} want ${w}`);
      }
    }
  }
  if (bad === 0 && meta.length === 0) return null;
  return `${head}\n  ${meta.join('; ')}${meta.length ? '; ' : ''}${bad}/${M * N} elements differ, max |diff| ${maxDiff}; first: ${first.join(', ')}`;
}

async function runOne(seed: number, options: RandomSpecOptions = {}, backend: Backend = 'cpu'): Promise<string | null> {
  const dir = join(root, `${backend}-${options.bitDepth ? 'b' : 's'}${seed}`);
  const { specPath } = writeRandomSpec(dir, seed, options);
  const specJson = readFileSync(specPath, 'utf8').replace(/\s+/g, ' ');
  const { spec, arrays } = loadGemmSpec(specPath);
  const want = oracleGemm(spec, arrays);
  const code = await main(['run', specPath, '--backend', backend]);
  const outPath = join(dir, 'out.npy');
  let failure: string | null;
  if (code !== 0) failure = `seed ${seed} (${dir}), spec ${specJson}\n  qgemm run exited with ${code}`;
  else if (!existsSync(outPath)) failure = `seed ${seed} (${dir}), spec ${specJson}\n  exit 0 but no ${outPath}`;
  else failure = compare(seed, dir, want, readFileSync(outPath), specJson);
  if (failure !== null) keep.add(dir);
  else rmSync(dir, { recursive: true, force: true });
  return failure;
}

describe(`qgemm run --backend cpu is bit-exact with the BigInt oracle (${COUNT} random specs)`, () => {
  const batches: Array<[number, number]> = [];
  for (let start = 0; start < COUNT; start += BATCH) batches.push([FIRST_SEED + start, FIRST_SEED + Math.min(COUNT, start + BATCH)]);

  it.each(batches)('seeds %i..%i (in-process main)', async (from, to) => {
    const failures: string[] = [];
    for (let seed = from; seed < to; seed++) {
      const f = await runOne(seed);
      if (f !== null) failures.push(f);
    }
    expect(failures.length, `${failures.length} of ${to - from} specs differ:\n${failures.join('\n')}`).toBe(0);
  });
});

// The less-than-8-bit path (src/quant/lowbit.ts).
describe(`bitDepth: qgemm run --backend cpu against the oracle (${COUNT_LOWBIT} specs)`, () => {
  const batches: Array<[number, number]> = [];
  for (let start = 0; start < COUNT_LOWBIT; start += BATCH) {
    batches.push([FIRST_SEED + 0x10000 + start, FIRST_SEED + 0x10000 + Math.min(COUNT_LOWBIT, start + BATCH)]);
  }
  it.each(batches)('seeds %i..%i (in-process main, bitDepth)', async (from, to) => {
    const failures: string[] = [];
    for (let seed = from; seed < to; seed++) {
      const f = await runOne(seed, { bitDepth: true });
      if (f !== null) failures.push(f);
    }
    expect(failures.length, `${failures.length} of ${to - from} specs differ:\n${failures.join('\n')}`).toBe(0);
  });
});

const gpu = await getGpu(); // null: skip locally (with a notice); in CI a missing adapter fails
describe.skipIf(!gpu)(
  `qgemm run --backend webgpu is bit-exact with the BigInt oracle (${COUNT_GPU} + ${COUNT_GPU >> 1} bitDepth specs)`,
  () => {
    const batches: Array<[number, number, boolean]> = [];
    for (let start = 0; start < COUNT_GPU; start += BATCH)
      batches.push([FIRST_SEED + 0x20000 + start, FIRST_SEED + 0x20000 + Math.min(COUNT_GPU, start + BATCH), false]);
    for (let start = 0; start < COUNT_GPU >> 1; start += BATCH)
      batches.push([FIRST_SEED + 0x30000 + start, FIRST_SEED + 0x30000 + Math.min(COUNT_GPU >> 1, start + BATCH), true]);
    it.each(batches)('seeds %i..%i (bitDepth: %s)', async (from, to, bitDepth) => {
      const failures: string[] = [];
      for (let seed = from; seed < to; seed++) {
        const f = await runOne(seed, { bitDepth }, 'webgpu');
        if (f !== null) failures.push(f);
      }
      expect(failures.length, `${failures.length} of ${to - from} specs differ:\n${failures.join('\n')}`).toBe(0);
    });
  },
);

describe('boundary parameters, in-process main', () => {
  // Valid corner cases the random draws reach only rarely, against extreme zero points.
  const CASES: Array<[string, unknown[]]> = [
    ['tanh, largest amplitude', [{ type: 'tanh', realZeroAsInt32: 7, realAmplitudeAsInt32: 268435455 }]],
    ['tanh, amplitude 1 at the top', [{ type: 'tanh', realZeroAsInt32: 2147483639, realAmplitudeAsInt32: 1 }]],
    ['tanh, amplitude 1 at the bottom', [{ type: 'tanh', realZeroAsInt32: -2147483639, realAmplitudeAsInt32: 1 }]],
    [
      'double, exponent 31',
      [{ type: 'scaleInt32ByFixedPointAndExponent', multiplier: 1 << 30, exponent: 31, offsetAfterShift: 0, rounding: 'double' }],
    ],
    [
      'double (default), exponent 31, negative multiplier',
      [{ type: 'scaleInt32ByFixedPointAndExponent', multiplier: -(1 << 30), exponent: 31, offsetAfterShift: 0 }],
    ],
    [
      'double, exponent -31, INT32_MIN multiplier',
      [{ type: 'scaleInt32ByFixedPointAndExponent', multiplier: MIN32, exponent: -31, offsetAfterShift: -1 }],
    ],
    [
      'single, exponent 30',
      [{ type: 'scaleInt32ByFixedPointAndExponent', multiplier: MAX32, exponent: 30, offsetAfterShift: 5, rounding: 'single' }],
    ],
    [
      'single, exponent -31, INT32_MIN multiplier',
      [{ type: 'scaleInt32ByFixedPointAndExponent', multiplier: MIN32, exponent: -31, offsetAfterShift: 0, rounding: 'single' }],
    ],
    [
      'fixed point, shift 31, INT32_MIN multiplier',
      [{ type: 'quantizeDownInt32ByFixedPoint', multiplier: MIN32, shift: 31, offsetAfterShift: MAX32 }],
    ],
    ['legacy scale, shift 31, wrapping', [{ type: 'quantizeDownInt32ToUint8Scale', offset: MAX32, multiplier: MIN32, shift: 31 }]],
    ['legacy scale, shift 0', [{ type: 'quantizeDownInt32ToUint8Scale', offset: -1, multiplier: -1, shift: 0 }]],
    [
      'bias wrap + truncating cast',
      [
        { type: 'bias', axis: 'col', values: [MAX32, MIN32] },
        { type: 'truncatingCast', to: 'uint8' },
      ],
    ],
    [
      'clamp to a point + int16 cast',
      [
        { type: 'clamp', min: -40000, max: -40000 },
        { type: 'saturatingCast', to: 'int16' },
      ],
    ],
    [
      'full clamp + int8 cast',
      [
        { type: 'clamp', min: MIN32, max: MAX32 },
        { type: 'saturatingCast', to: 'int8' },
      ],
    ],
  ];
  const zeroPoints: Array<[number, number]> = [
    [0, 0],
    [MAX32, -5],
    [MIN32, MAX32],
    [-128, 255],
  ];
  let edgeCount = 0;
  const backends: Backend[] = gpu ? ['cpu', 'webgpu'] : ['cpu'];
  it.each(CASES)('%s', async (_name, pipeline) => {
    const failures: string[] = [];
    for (const backend of backends)
      for (const [zl, zr] of zeroPoints) {
        const dir = join(root, `edge-${edgeCount++}`);
        mkdirSync(dir);
        writeFileSync(
          join(dir, 'a.npy'),
          serializeNpy({ dtype: 'int8', shape: [3, 2], fortranOrder: false, data: Int8Array.from([-128, 127, 5, -7, 0, 1]) }),
        );
        writeFileSync(
          join(dir, 'b.npy'),
          serializeNpy({ dtype: 'uint8', shape: [2, 2], fortranOrder: true, data: Uint8Array.from([255, 0, 3, 200]) }),
        );
        const specJson = JSON.stringify({
          op: 'gemm',
          lhs: 'a.npy',
          rhs: 'b.npy',
          lhsZeroPoint: zl,
          rhsZeroPoint: zr,
          pipeline,
          out: 'o.npy',
        });
        const specPath = join(dir, 'spec.json');
        writeFileSync(specPath, specJson);
        const { spec, arrays } = loadGemmSpec(specPath);
        const want = oracleGemm(spec, arrays);
        const code = await main(['run', specPath, '--backend', backend]);
        const f = code !== 0 ? `${backend} ${specJson}: exit ${code}` : compare(0, dir, want, readFileSync(join(dir, 'o.npy')), specJson);
        if (f !== null) {
          failures.push(f);
          keep.add(dir);
        }
      }
    expect(failures.length, failures.join('\n')).toBe(0);
  });
});

describe('the real qgemm binary (node bin/qgemm.mjs)', () => {
  const cli = join(REPO, 'dist/node/cli.js');
  beforeAll(() => {
    if (!existsSync(cli)) execFileSync('npx', ['vite', 'build'], { cwd: REPO, stdio: 'pipe' });
  });

  it.each([0x0b1a0001, 0x0b1a0002, 0x0b1a0003])('seed %i', (seed) => {
    const dir = join(root, `bin${seed}`);
    const { specPath } = writeRandomSpec(dir, seed);
    const specJson = readFileSync(specPath, 'utf8').replace(/\s+/g, ' ');
    const { spec, arrays } = loadGemmSpec(specPath);
    const want = oracleGemm(spec, arrays);
    const r = spawnSync(process.execPath, [join(REPO, 'bin/qgemm.mjs'), 'run', 'spec.json', '--backend', 'cpu'], {
      cwd: dir,
      encoding: 'utf8',
    });
    expect(r.status, `exit ${r.status}, stderr: ${r.stderr}`).toBe(0);
    const failure = compare(seed, dir, want, readFileSync(join(dir, 'out.npy')), specJson);
    if (failure !== null) keep.add(dir);
    expect(failure).toBeNull();
  });
});
