// Differential test of `qgemm run` on the elementwise ops (add, sub, mul, alignedAdd,
// alignedSub) against the independent BigInt oracle (test/oracle/elementwise-oracle.ts), on both
// backends: hundreds of seeded random specs (uint8/int8, broadcast shapes up to 4-D, C and Fortran
// order, per-tensor and per-axis scales, scale ratios that take sub's GreaterThanOne path and flush
// tiny multipliers, optional clamps; see test/oracle/elementwise-random-spec.ts) go through
// `main(['run', spec, '--backend', 'cpu'])` and `--backend webgpu`, and the written .npy must equal the
// oracle's result bit for bit (dtype, shape, C order, data). Spoiled specs must exit 2, write nothing,
// and be rejected by the oracle too. The webgpu half runs on whatever adapter test/gpu/gpu-env.ts finds
// (SwiftShader on a machine without a GPU): it skips locally without one and fails in CI.
//
// Knobs: QGEMM_ELEMENTWISE_SPECS (random specs per backend, default 300), QGEMM_ELEMENTWISE_SEED.

import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { main } from '../../src/cli/main.ts';
import { parseNpy, serializeNpy } from '../../src/io/npy.ts';
import { elementwiseReference } from '../../src/reference/elementwise.ts';
import { getGpu, releaseGpu } from '../gpu/gpu-env.ts';
import { loadElementwiseSpec, oracleElementwise, type ElementwiseOracleResult } from '../oracle/elementwise-oracle.ts';
import { writeRandomElementwiseSpec, type RandomElementwiseOptions } from '../oracle/elementwise-random-spec.ts';

const COUNT = Number(process.env.QGEMM_ELEMENTWISE_SPECS ?? 300);
const FIRST_SEED = Number(process.env.QGEMM_ELEMENTWISE_SEED ?? 0xe1e70000);
const BATCH = 50;

const gpu = await getGpu();
afterAll(releaseGpu);

const root = mkdtempSync(join(tmpdir(), 'qgemm-elementwise-cli-'));
const keep = new Set<string>();
afterAll(() => {
  if (keep.size === 0) rmSync(root, { recursive: true, force: true });
  else for (const d of keep) console.error(`kept failing spec folder: ${d}`);
});

/** Silences the CLI's stderr line while `fn` runs, returning it. */
async function captureStderr(fn: () => Promise<number>): Promise<{ code: number; stderr: string }> {
  const write = process.stderr.write.bind(process.stderr);
  let stderr = '';
  process.stderr.write = ((chunk: string | Uint8Array) => {
    stderr += String(chunk);
    return true;
  }) as typeof process.stderr.write;
  try {
    return { code: await fn(), stderr };
  } finally {
    process.stderr.write = write;
  }
}

function compare(want: ElementwiseOracleResult, outPath: string): string | null {
  const got = parseNpy(new Uint8Array(readFileSync(outPath)));
  const meta: string[] = [];
  if (got.dtype !== want.dtype) meta.push(`dtype ${got.dtype}, want ${want.dtype}`);
  if (JSON.stringify(got.shape) !== JSON.stringify(want.shape)) meta.push(`shape (${got.shape}), want (${want.shape})`);
  if (got.fortranOrder) meta.push('Fortran order, want C order');
  if (meta.length) return meta.join('; ');
  let bad = 0;
  let maxDiff = 0;
  const first: string[] = [];
  for (let i = 0; i < want.data.length; i++) {
    const g = Number(got.data[i]);
    if (g !== want.data[i]) {
      bad++;
      maxDiff = Math.max(maxDiff, Math.abs(g - want.data[i]));
      if (first.length < 6) first.push(`[${i}] got ${g} want ${want.data[i]}`);
    }
  }
  return bad === 0 ? null : `${bad}/${want.data.length} elements differ, max |diff| ${maxDiff}; first: ${first.join(', ')}`;
}

/** One seed through the CLI; returns a failure report or null. */
async function runOne(seed: number, backend: 'cpu' | 'webgpu', options: RandomElementwiseOptions = {}): Promise<string | null> {
  const dir = join(root, `${backend}-${options.invalid ? 'bad' : 'ok'}-${seed.toString(16)}`);
  const { specPath, spoiled } = writeRandomElementwiseSpec(dir, seed, options);
  const specJson = readFileSync(specPath, 'utf8').replace(/\s+/g, ' ');
  const { spec, arrays } = loadElementwiseSpec(specPath);
  let want: ElementwiseOracleResult | null = null;
  let rejected = '';
  try {
    want = oracleElementwise(spec, arrays);
  } catch (e) {
    rejected = (e as Error).message;
  }
  const { code, stderr } = await captureStderr(() => main(['run', specPath, '--backend', backend]));
  const outPath = join(dir, 'out.npy');
  const head = `seed 0x${seed.toString(16)} (${backend}${spoiled ? `, spoiled ${spoiled}` : ''}) ${specJson}\n  `;
  let failure: string | null = null;
  if (want === null) {
    if (code !== 2 || existsSync(outPath))
      failure = `${head}oracle rejects (${rejected}) but qgemm exited ${code}${existsSync(outPath) ? ' and wrote out.npy' : ''}: ${stderr.trim()}`;
    else if (!/^qgemm: error: (a|b|output|op)(\.[A-Za-z]+(\[\d+\])?)?: /.test(stderr))
      failure = `${head}the error does not name a field: ${stderr.trim()}`;
  } else if (code !== 0) failure = `${head}qgemm exited ${code}: ${stderr.trim()}`;
  else failure = compare(want, outPath);
  if (failure !== null && !failure.startsWith('seed')) failure = head + failure;
  if (failure !== null) keep.add(dir);
  else rmSync(dir, { recursive: true, force: true });
  return failure;
}

function batches(first: number, count: number): Array<[number, number]> {
  const out: Array<[number, number]> = [];
  for (let s = 0; s < count; s += BATCH) out.push([first + s, first + Math.min(count, s + BATCH)]);
  return out;
}

async function runBatch(from: number, to: number, backend: 'cpu' | 'webgpu', options: RandomElementwiseOptions = {}): Promise<void> {
  const failures: string[] = [];
  for (let seed = from; seed < to; seed++) {
    const f = await runOne(seed, backend, options);
    if (f !== null) failures.push(f);
  }
  expect(failures.length, `${failures.length} of ${to - from} specs differ:\n${failures.join('\n')}`).toBe(0);
}

describe(`qgemm run (elementwise ops) --backend cpu == BigInt oracle (${COUNT} random specs)`, () => {
  it.each(batches(FIRST_SEED, COUNT))('seeds %i..%i', (from, to) => runBatch(from, to, 'cpu'));

  it('spoiled specs exit 2 naming the field, write nothing, and the oracle rejects them (60 specs)', () =>
    runBatch(FIRST_SEED + 0x8000, FIRST_SEED + 0x8000 + 60, 'cpu', { invalid: true }));
});

describe.skipIf(!gpu)(`qgemm run (elementwise ops) --backend webgpu == BigInt oracle (${COUNT} random specs)`, () => {
  it.each(batches(FIRST_SEED + 0x4000, COUNT))('seeds %i..%i', (from, to) => runBatch(from, to, 'webgpu'));

  it('larger tensors (up to 64k elements, many workgroups)', () =>
    runBatch(FIRST_SEED + 0xc000, FIRST_SEED + 0xc000 + 6, 'webgpu', { maxElements: 65536 }));

  it('spoiled specs exit 2 before any GPU work (20 specs)', () =>
    runBatch(FIRST_SEED + 0x9000, FIRST_SEED + 0x9000 + 20, 'webgpu', { invalid: true }));
});

describe('qgemm run (elementwise ops) with "kernelPath"', () => {
  // every int8 pair of -8..7 at scales 1/2 and 1/4: exact ties, which the two arithmetics round apart
  const values = Int8Array.from({ length: 16 }, (_, i) => i - 8);
  const problem = (kernelPath: 'xnnpack' | 'builtin') =>
    elementwiseReference({
      op: 'add',
      a: { data: values, shape: [16, 1], scale: 0.5, zeroPoint: 0 },
      b: { data: values, shape: [1, 16], scale: 0.25, zeroPoint: 0 },
      output: { scale: 1, zeroPoint: 0 },
      kernelPath,
    });
  function writeSpec(name: string, kernelPath: unknown): string {
    const dir = join(root, `kernel-path-${name}`);
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, 'a.npy'), serializeNpy({ dtype: 'int8', shape: [16, 1], fortranOrder: false, data: values }));
    writeFileSync(join(dir, 'b.npy'), serializeNpy({ dtype: 'int8', shape: [1, 16], fortranOrder: false, data: values }));
    const spec = {
      op: 'add',
      a: { data: 'a.npy', scale: 0.5, zeroPoint: 0 },
      b: { data: 'b.npy', scale: 0.25, zeroPoint: 0 },
      output: { scale: 1, zeroPoint: 0 },
      ...(kernelPath === undefined ? {} : { kernelPath }),
      out: 'c.npy',
    };
    writeFileSync(join(dir, 'spec.json'), JSON.stringify(spec));
    return dir;
  }
  it("the two arithmetics differ on these ties (the test's premise)", () => {
    expect(Array.from(problem('xnnpack').data)).not.toEqual(Array.from(problem('builtin').data));
  });
  for (const kernelPath of [undefined, 'builtin', 'xnnpack'] as const)
    it(`kernelPath ${kernelPath ?? 'absent (builtin)'}: == elementwiseReference on that path`, async () => {
      const dir = writeSpec(kernelPath ?? 'absent', kernelPath);
      const r = await captureStderr(() => main(['run', join(dir, 'spec.json'), '--backend', 'cpu']));
      expect(r.code, r.stderr).toBe(0);
      const got = parseNpy(new Uint8Array(readFileSync(join(dir, 'c.npy'))));
      expect(Array.from(got.data as Int8Array)).toEqual(Array.from(problem(kernelPath ?? 'builtin').data));
    });
  it('an unknown kernelPath, or null, exits 2 naming it, nothing written', async () => {
    for (const [name, kernelPath] of [
      ['bad', 'optimized'],
      ['null', null],
    ]) {
      const dir = writeSpec(name as string, kernelPath);
      const r = await captureStderr(() => main(['run', join(dir, 'spec.json'), '--backend', 'cpu']));
      expect(r.code).toBe(2);
      expect(r.stderr).toMatch(/^qgemm: error: kernelPath: /);
      expect(existsSync(join(dir, 'c.npy'))).toBe(false);
    }
  });
  it("shapes that do not broadcast exit 2 naming the input's file (b.data), as the library names b.shape", async () => {
    const dir = writeSpec('nobroadcast', undefined);
    writeFileSync(join(dir, 'b.npy'), serializeNpy({ dtype: 'int8', shape: [4, 2], fortranOrder: false, data: new Int8Array(8) }));
    const r = await captureStderr(() => main(['run', join(dir, 'spec.json'), '--backend', 'cpu']));
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/^qgemm: error: b\.data: shape \(4, 2\) does not broadcast with a's shape \(16, 1\)/);
    expect(existsSync(join(dir, 'c.npy'))).toBe(false);
  });
});
