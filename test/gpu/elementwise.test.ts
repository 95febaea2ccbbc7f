// GPU tier of the elementwise ops: src/elementwise/elementwise.wgsl through
// src/elementwise/gpu.ts against the CPU reference (src/reference/elementwise.ts), bit for
// bit, every submission inside validation/out-of-memory error scopes: every pair of 8-bit input values
// (a (256,1) tensor against a (1,256) one) under parameter sets that reach each path — TFLite add/sub with
// equal, distant and flushed scales, sub's GreaterThanOne multiplier, mul multipliers far below and above
// 1 (saturating), per-tensor and per-axis alignment with shifts up to 15 and the int32 wrap, clamps,
// and kernel path 'xnnpack' (XNNPACK's add/sub multipliers at both ends of the delegate's scale range, its
// float32 mul at both ends, exact ties) — for uint8 and int8; random broadcast problems in C and Fortran order; grids split over two dimensions;
// odd element counts (the last packed word); an empty result; and the typed errors (exceeded limits, a
// lost device).

import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseElementwiseSpec } from '../../src/cli/elementwise-spec.ts';
import { DeviceLostError, LimitExceededError } from '../../src/errors.ts';
import { runElementwisePlan } from '../../src/reference/elementwise.ts';
import type { ElementwiseProblem, ElementwiseResult, QuantizedTensor } from '../../src/problem/elementwise.ts';
import { prepareElementwise } from '../../src/problem/elementwise-plan.ts';
import { elementwiseOnGpu, type ElementwiseGpuTarget } from '../../src/elementwise/gpu.ts';
import { GpuContext } from '../../src/scheduler/context.ts';
import { writeRandomElementwiseSpec } from '../oracle/elementwise-random-spec.ts';
import { Rng } from '../oracle/random-spec.ts';
import { getGpu, releaseGpu, uncapturedErrors } from './gpu-env.ts';

const gpu = await getGpu();
afterAll(releaseGpu);

function diff(got: ElementwiseResult, want: ElementwiseResult): string | null {
  if (got.dtype !== want.dtype || JSON.stringify(got.shape) !== JSON.stringify(want.shape)) {
    return `dtype/shape ${got.dtype} (${got.shape}) vs ${want.dtype} (${want.shape})`;
  }
  let bad = 0;
  const first: string[] = [];
  for (let i = 0; i < want.data.length; i++) {
    if (got.data[i] !== want.data[i]) {
      bad++;
      if (first.length < 8) first.push(`[${i}] got ${got.data[i]} want ${want.data[i]}`);
    }
  }
  return bad ? `${bad}/${want.data.length} differ: ${first.join(', ')}` : null;
}

async function expectGpuMatches(target: ElementwiseGpuTarget, p: ElementwiseProblem, what: string): Promise<void> {
  const plan = prepareElementwise(p);
  expect(plan.kernelPath, `${what}: the path taken`).toBe(p.kernelPath ?? 'builtin');
  const d = diff(await elementwiseOnGpu(target, plan), runElementwisePlan(plan));
  if (d) expect.fail(`${what}: ${d}`);
}

/** a = every value as a column (256,1), b = every value as a row (1,256): all 65536 pairs. */
function allPairs(
  dtype: 'uint8' | 'int8',
  a: Omit<QuantizedTensor, 'data' | 'shape'>,
  b: Omit<QuantizedTensor, 'data' | 'shape'>,
): [QuantizedTensor, QuantizedTensor] {
  const values = Array.from({ length: 256 }, (_, i) => (dtype === 'uint8' ? i : i - 128));
  const data = () => (dtype === 'uint8' ? Uint8Array.from(values) : Int8Array.from(values));
  return [
    { ...a, data: data(), shape: [256, 1] },
    { ...b, data: data(), shape: [1, 256] },
  ];
}

type Params = {
  op: ElementwiseProblem['op'];
  sa: number | number[];
  sb: number;
  so: number;
  clamp?: [number, number];
  kernelPath?: 'xnnpack';
};
const PARAMETER_SETS: Array<[string, Params]> = [
  ['add, equal scales', { op: 'add', sa: 2 / 255, sb: 2 / 255, so: 4 / 255 }],
  ['add, scales 1000x apart', { op: 'add', sa: 0.5, sb: 0.0005, so: 0.7 }],
  ['add, b flushed (2^-40)', { op: 'add', sa: 0.02, sb: 0.02 * 2 ** -40, so: 0.03 }],
  ['add, float32 scales and a clamp', { op: 'add', sa: Math.fround(0.1), sb: Math.fround(0.3), so: Math.fround(0.25), clamp: [20, 90] }],
  ['sub, typical', { op: 'sub', sa: 0.02, sb: 0.03, so: 0.05 }],
  ['sub, GreaterThanOne (output multiplier ~19)', { op: 'sub', sa: 1, sb: 1, so: 1e-7 }],
  ['sub, GreaterThanOne with distinct scales', { op: 'sub', sa: 1, sb: 1 + 2 ** -19, so: 2 ** -21 }],
  ['mul, multiplier ~2^-10', { op: 'mul', sa: 0.01, sb: 0.02, so: 0.2 }],
  ['mul, multiplier ~2^14 (saturates)', { op: 'mul', sa: 0.9, sb: 0.7, so: 0.7 * 0.9 * 2 ** -14 }],
  ['alignedAdd, per tensor', { op: 'alignedAdd', sa: 0.05, sb: 0.1, so: 0.15 }],
  ['alignedSub, per tensor, positive output shift', { op: 'alignedSub', sa: 0.05, sb: 0.1, so: 0.001 }],
  [
    'alignedAdd, per axis over 256 channels spanning 2^14',
    { op: 'alignedAdd', sa: Array.from({ length: 256 }, (_, i) => 0.001 * 2 ** ((i * 14) / 255)), sb: 0.004, so: 1 },
  ],
  [
    'alignedAdd, shifts of 15 and the int32 wrap',
    { op: 'alignedAdd', sa: Array.from({ length: 256 }, (_, i) => (i === 7 ? 2 ** -15 : 255 / 128)), sb: 255 / 128, so: 1 },
  ],
  ['xnnpack add, dyadic scales (exact ties)', { op: 'add', sa: 0.5, sb: 0.25, so: 1, kernelPath: 'xnnpack' }],
  ['xnnpack add, float32 scales and a clamp', { op: 'add', sa: 0.1, sb: 0.3, so: 0.25, clamp: [20, 90], kernelPath: 'xnnpack' }],
  [
    'xnnpack add, ratios 255.9 and 2^-10 (shift 13, multipliers 2^21 apart)',
    { op: 'add', sa: 255.9, sb: 2 ** -10, so: 1, kernelPath: 'xnnpack' },
  ],
  ['xnnpack add, ratios just below 2^-9 (shift 30)', { op: 'add', sa: 2 ** -9 * 0.999, sb: 2 ** -10, so: 1, kernelPath: 'xnnpack' }],
  ['xnnpack sub, typical', { op: 'sub', sa: 0.02, sb: 0.03, so: 0.05, kernelPath: 'xnnpack' }],
  ['xnnpack mul, scale 3/8 (ties)', { op: 'mul', sa: 0.75, sb: 0.5, so: 1, kernelPath: 'xnnpack' }],
  ['xnnpack mul, scale 2^-16', { op: 'mul', sa: 2 ** -8, sb: 2 ** -8, so: 1, kernelPath: 'xnnpack' }],
  ['xnnpack mul, scale just below 2^8 (saturates)', { op: 'mul', sa: 0.9, sb: 0.7, so: (0.7 * 0.9) / 255.99, kernelPath: 'xnnpack' }],
];

describe.skipIf(!gpu)('WebGPU elementwise == CPU reference', () => {
  let ctx: GpuContext;
  const root = mkdtempSync(join(tmpdir(), 'qgemm-elementwise-gpu-'));
  beforeAll(async () => {
    ctx = await GpuContext.create({ device: gpu!.device });
  });
  afterAll(() => rmSync(root, { recursive: true, force: true }));

  for (const dtype of ['uint8', 'int8'] as const) {
    it.each(PARAMETER_SETS)(`all 65536 ${dtype} pairs: %s`, async (_name, s) => {
      const [lo, hi] = dtype === 'uint8' ? [0, 255] : [-128, 127];
      const mid = dtype === 'uint8' ? 128 : 0;
      const [a, b] = allPairs(
        dtype,
        Array.isArray(s.sa) ? { scale: s.sa, axis: 0, zeroPoint: mid - 3 } : { scale: s.sa, zeroPoint: mid - 3 },
        { scale: s.sb, zeroPoint: mid + 5 },
      );
      if (s.op.startsWith('aligned') && s.sb === 255 / 128) {
        a.zeroPoint = lo; // |q - z| up to 255 on both sides: the largest terms
        b.zeroPoint = lo;
      }
      const output = { scale: s.so, zeroPoint: mid + 1, ...(s.clamp ? { min: lo + s.clamp[0], max: Math.min(hi, lo + s.clamp[1]) } : {}) };
      await expectGpuMatches(ctx, { op: s.op, a, b, output, kernelPath: s.kernelPath }, `${dtype} ${s.op}`);
    });
  }

  it('random broadcast problems (shapes up to 4-D, C and Fortran order, per-axis scales), 120 specs', async () => {
    for (let seed = 0; seed < 120; seed++) {
      const { specPath } = writeRandomElementwiseSpec(join(root, String(seed)), 0x9e0000 + seed, { maxElements: 4096 });
      const spec = parseElementwiseSpec(JSON.parse(readFileSync(specPath, 'utf8')), dirname(specPath), (p) => readFileSync(p));
      await expectGpuMatches(ctx, spec.problem, `seed ${seed} ${readFileSync(specPath, 'utf8').replace(/\s+/g, ' ')}`);
    }
  });

  it('odd element counts fill the last packed word correctly', async () => {
    const rng = new Rng(3);
    for (const n of [1, 2, 3, 5, 6, 7, 9, 255, 257, 1023]) {
      const a = Int8Array.from({ length: n }, () => rng.int(-128, 127));
      const b = Int8Array.from({ length: n }, () => rng.int(-128, 127));
      await expectGpuMatches(
        ctx,
        {
          op: 'mul',
          a: { data: a, shape: [n], scale: 0.1, zeroPoint: 1 },
          b: { data: b, shape: [n], scale: 0.1, zeroPoint: -2 },
          output: { scale: 0.3, zeroPoint: -5 },
        },
        `n = ${n}`,
      );
    }
  });

  it('a grid split over two dimensions (lowered workgroup limit)', async () => {
    const target: ElementwiseGpuTarget = {
      device: ctx.device,
      lostReason: null,
      limits: { ...ctx.limits, maxComputeWorkgroupsPerDimension: 7 },
    };
    const rng = new Rng(5);
    const n = 3 * 7 * 64 * 4 + 13; // 22 workgroups of 256 elements: a 7 x 4 grid, the last row partial
    const a = Uint8Array.from({ length: n }, () => rng.int(0, 255));
    const b = Uint8Array.from({ length: 1 }, () => 77);
    await expectGpuMatches(
      target,
      {
        op: 'alignedSub',
        a: { data: a, shape: [n], scale: 0.03, zeroPoint: 120 },
        b: { data: b, shape: [], scale: 0.07, zeroPoint: 60 },
        output: { scale: 0.05, zeroPoint: 128 },
      },
      'split grid',
    );
  });

  it('an empty result needs no GPU work', async () => {
    const plan = prepareElementwise({
      op: 'add',
      a: { data: new Uint8Array(0), shape: [2, 0], scale: 1, zeroPoint: 0 },
      b: { data: Uint8Array.from([1]), shape: [1], scale: 1, zeroPoint: 0 },
      output: { scale: 1, zeroPoint: 0 },
    });
    const r = await elementwiseOnGpu(ctx, plan);
    expect(r.shape).toEqual([2, 0]);
    expect(r.data.length).toBe(0);
  });

  it('splits outputs larger than a binding and grids larger than the workgroup limit; typed errors otherwise', async () => {
    const plan = prepareElementwise({
      op: 'add',
      a: { data: new Uint8Array(5000), shape: [5000], scale: 1, zeroPoint: 0 },
      b: { data: new Uint8Array(1), shape: [], scale: 1, zeroPoint: 0 },
      output: { scale: 1, zeroPoint: 0 },
    });
    // An input larger than a binding cannot be split (broadcasting reads it anywhere).
    const small: ElementwiseGpuTarget = {
      device: ctx.device,
      lostReason: null,
      limits: { ...ctx.limits, maxStorageBufferBindingSize: 4096 },
    };
    await expect(elementwiseOnGpu(small, plan)).rejects.toThrow(LimitExceededError);
    // 20 workgroups > 4^2: several dispatches.
    const few: ElementwiseGpuTarget = {
      device: ctx.device,
      lostReason: null,
      limits: { ...ctx.limits, maxComputeWorkgroupsPerDimension: 4 },
    };
    await expectGpuMatches(
      few,
      {
        op: 'add',
        a: { data: Uint8Array.from({ length: 5000 }, (_, i) => (i * 7) & 255), shape: [5000], scale: 0.1, zeroPoint: 3 },
        b: { data: Uint8Array.of(9), shape: [], scale: 0.2, zeroPoint: 1 },
        output: { scale: 0.25, zeroPoint: 100 },
      },
      'split grid',
    );
    // A 100 x 60 output (6000 bytes) from small broadcast inputs: output bands of one binding each.
    await expectGpuMatches(
      small,
      {
        op: 'mul',
        a: { data: Uint8Array.from({ length: 100 }, (_, i) => i), shape: [100, 1], scale: 0.1, zeroPoint: 50 },
        b: { data: Uint8Array.from({ length: 60 }, (_, i) => 200 - i), shape: [1, 60], scale: 0.2, zeroPoint: 128 },
        output: { scale: 0.5, zeroPoint: 10 },
      },
      'output bands',
    );
    // A buffer of the op's own above maxBufferSize (the 5000-byte output) is refused, as the GEMM's are.
    const smallBuffers: ElementwiseGpuTarget = { device: ctx.device, lostReason: null, limits: { ...ctx.limits, maxBufferSize: 4096 } };
    await expect(elementwiseOnGpu(smallBuffers, plan)).rejects.toMatchObject({ name: 'LimitExceededError', limit: 'maxBufferSize' });
    const lost: ElementwiseGpuTarget = { device: ctx.device, lostReason: 'unknown: gone', limits: ctx.limits };
    await expect(elementwiseOnGpu(lost, plan)).rejects.toMatchObject({ name: 'DeviceLostError', reason: 'unknown: gone' });
  });

  it('on a destroyed context or a lost device: the DeviceLostError a GEMM gives, reason and words', async () => {
    const plan = prepareElementwise({
      op: 'add',
      a: { data: Uint8Array.of(1, 2), shape: [2], scale: 1, zeroPoint: 0 },
      b: { data: Uint8Array.of(3, 4), shape: [2], scale: 1, zeroPoint: 0 },
      output: { scale: 1, zeroPoint: 0 },
    });
    const gemm = {
      lhs: { data: Uint8Array.of(1, 2, 3, 4), rows: 2, cols: 2 },
      rhs: { data: Uint8Array.of(5, 6, 7, 8), rows: 2, cols: 2 },
      lhsZeroPoint: 0,
      rhsZeroPoint: 0,
    };
    const destroyed = await GpuContext.create({ device: gpu!.device }); // destroy() leaves a given device alive
    destroyed.destroy();
    const lost = await GpuContext.create({ allowSoftware: true });
    lost.device.destroy();
    await lost.device.lost;
    for (const [own, reason] of [
      [destroyed, /^destroyed$/],
      [lost, /^destroyed: ./], // GPUDeviceLostInfo's reason and message
    ] as const) {
      const viaGemm = await own.gemm(gemm).catch((e) => e);
      const viaElementwise = await elementwiseOnGpu(own, plan).catch((e) => e);
      expect(viaGemm).toBeInstanceOf(DeviceLostError);
      expect(viaElementwise).toBeInstanceOf(DeviceLostError);
      expect(own.lostReason).toMatch(reason);
      expect({ reason: viaElementwise.reason, message: viaElementwise.message }).toEqual({
        reason: viaGemm.reason,
        message: viaGemm.message,
      });
    }
  });

  it("destroy() during a GEMM and an elementwise op in flight: each resolves or rejects with the context's lostReason", async () => {
    const own = await GpuContext.create({ allowSoftware: true });
    const n = 1 << 20;
    const plan = prepareElementwise({
      op: 'add',
      a: { data: new Uint8Array(n).fill(7), shape: [n], scale: 1, zeroPoint: 0 },
      b: { data: new Uint8Array(n).fill(9), shape: [n], scale: 1, zeroPoint: 0 },
      output: { scale: 1, zeroPoint: 0 },
    });
    const m = 256;
    const gemm = {
      lhs: { data: new Uint8Array(m * m).fill(3), rows: m, cols: m },
      rhs: { data: new Uint8Array(m * m).fill(5), rows: m, cols: m },
      lhsZeroPoint: 0,
      rhsZeroPoint: 0,
    };
    await own.gemm(gemm); // compiled: the next one is on the GPU within milliseconds
    await own.exclusive(() => elementwiseOnGpu(own, plan));
    // A GEMM in flight when destroy() comes (a 256³ on SwiftShader takes tens of ms), an elementwise op
    // queued behind it, and both again after.
    const calls = [own.gemm(gemm), own.exclusive(() => elementwiseOnGpu(own, plan))];
    await new Promise((r) => setTimeout(r, 20));
    own.destroy();
    calls.push(own.gemm(gemm), elementwiseOnGpu(own, plan));
    const settled = await Promise.allSettled(calls);
    expect(own.lostReason).toBe('destroyed');
    for (const s of settled) {
      if (s.status === 'fulfilled') continue;
      expect(s.reason).toBeInstanceOf(DeviceLostError);
      expect(s.reason.reason).toBe('destroyed');
      expect(s.reason.message).not.toMatch(/: $/); // no dangling colon where the failure said nothing
    }
  });

  it('left no uncaptured GPU errors', () => {
    expect(uncapturedErrors).toEqual([]);
  });
});
