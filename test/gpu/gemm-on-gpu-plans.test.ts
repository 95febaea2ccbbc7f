// GPU tier: gemmOnGpu's plans (src/scheduler/plans.ts GpuCallPlan, call-plan.ts replayOnGpu). A repeated
// call with a prepacked rhs, with a CPU lhs or the same GpuMatrix lhs, replays its plan: the same dst
// buffer once the matrix was released, no buffer or bind group created, one submit, bit-exact against
// the CPU reference. A matrix the caller holds is never written by a later call (each held one has its
// own plan, or a call without one). A changed shape, zero point, per-channel vector edited in place, or
// another lhs buffer makes a new plan, never a stale one; a buffer brought anew by every call makes none
// (a plan for a buffer read in place is made at its second call). A released matrix as lhs is refused. A plan
// whose rhs is destroyed while its dst is held keeps that dst readable until it is released. A decode
// loop of two layers, each dst the next one's lhs, replays both plans; so does one whose last layer
// reads its GpuMatrix lhs back through ctx.gemm.

import { afterAll, describe, expect, it, vi } from 'vitest';
import { InputError } from '../../src/errors.ts';
import { referenceGemm } from '../../src/reference/gemm.ts';
import { GpuContext, type GpuMatrix, type PackedOperand } from '../../src/scheduler/context.ts';
import type { GemmProblem, GemmResult } from '../../src/types.ts';
import { diffResults, formatMismatch } from '../support/compare.ts';
import { Rng } from '../../tools/random.ts';
import { getGpu, releaseGpu } from './gpu-env.ts';

const gpu = await getGpu();
afterAll(releaseGpu);

const rng = new Rng(0x36);
const bytes = (n: number) => Uint8Array.from({ length: n }, () => rng.int(0, 255));

function problemOf(M: number, N: number, K: number): GemmProblem {
  return {
    lhs: { data: bytes(M * K), rows: M, cols: K, order: 'row-major' },
    rhs: { data: bytes(K * N), rows: K, cols: N, order: 'row-major' },
    lhsZeroPoint: 3,
    rhsZeroPoint: Int32Array.from({ length: N }, (_, n) => (n * 37) % 256),
    pipeline: [
      { type: 'bias', axis: 'col', values: Int32Array.from({ length: N }, (_, n) => n * 1000 - 30000) },
      { type: 'scaleInt32ByFixedPointAndExponent', multiplier: 1518500250, exponent: -9, offsetAfterShift: 128 },
      { type: 'saturatingCast', to: 'uint8' },
    ],
  };
}

/** The gemmOnGpu plans a context holds (busy, free, or dropped and waiting for their dst). */
const plansHeld = (ctx: GpuContext) => (ctx as unknown as { resources: { plans: { sizeOnGpu: number } } }).resources.plans.sizeOnGpu;

const withLhs = (p: GemmProblem) => ({ ...p, lhs: { ...p.lhs, data: bytes(p.lhs.data.length) } });

function expectExact(got: GemmResult, p: GemmProblem, what: string): void {
  const d = diffResults(got, referenceGemm(p));
  if (d) expect.fail(formatMismatch(d, what));
}

/** What the calls inside `fn` create and submit on the device. */
async function counted<T>(fn: () => Promise<T>): Promise<{ value: T; buffers: number; bindGroups: number; submits: number }> {
  const device = gpu!.device;
  const spies = [vi.spyOn(device, 'createBuffer'), vi.spyOn(device, 'createBindGroup'), vi.spyOn(device.queue, 'submit')];
  try {
    const value = await fn();
    const [buffers, bindGroups, submits] = spies.map((s) => s.mock.calls.length);
    return { value, buffers, bindGroups, submits };
  } finally {
    for (const s of spies) s.mockRestore();
  }
}

describe.skipIf(!gpu)('gemmOnGpu plans', () => {
  const contexts: GpuContext[] = [];
  const context = async () => {
    const ctx = await GpuContext.create({ device: gpu!.device });
    contexts.push(ctx);
    return ctx;
  };
  afterAll(() => {
    for (const c of contexts) c.destroy();
  });

  /** gemmOnGpu, read back and checked; the matrix is kept or released. */
  const onGpu = async (ctx: GpuContext, p: GemmProblem, rhs: PackedOperand, what: string, keep = false) => {
    const m = await ctx.gemmOnGpu({ ...p, rhs });
    expectExact(await ctx.read(m), p, what);
    if (!keep) ctx.releaseMatrix(m);
    return m;
  };

  it('replays a repeated call into the released dst: no buffer, no bind group, one submit, exact', async () => {
    const ctx = await context();
    const p = problemOf(1, 48, 40);
    const packed = await ctx.prepack('rhs', p.rhs);
    const first = await onGpu(ctx, p, packed, 'first');
    for (let i = 0; i < 3; i++) {
      const q = withLhs(p);
      const { value: m, buffers, bindGroups, submits } = await counted(() => ctx.gemmOnGpu({ ...q, rhs: packed }));
      expect({ buffers, bindGroups, submits }).toEqual({ buffers: 0, bindGroups: 0, submits: 1 });
      expect(m.buffer).toBe(first.buffer); // the plan's own dst, handed out again
      expectExact(await ctx.read(m), q, `replay ${i}`);
      ctx.releaseMatrix(m);
      await expect(ctx.read(m)).rejects.toThrow(InputError);
    }
    expect(() => ctx.releaseMatrix(first)).toThrow(/released/); // the first matrix object stays released
    packed.destroy();
  });

  it("hands out the caller's own matrix object: one edited before its release changes no replay", async () => {
    const ctx = await context();
    const p = problemOf(1, 24, 40);
    const packed = await ctx.prepack('rhs', p.rhs);
    const first = await ctx.gemmOnGpu({ ...p, rhs: packed });
    const { rows, cols, dtype } = first;
    Object.assign(first, { rows: 7, dtype: 'int32' });
    ctx.releaseMatrix(first);
    const again = await ctx.gemmOnGpu({ ...p, rhs: packed });
    expect(again.buffer).toBe(first.buffer); // the plan replayed
    expect({ rows: again.rows, cols: again.cols, dtype: again.dtype }).toEqual({ rows, cols, dtype });
    expectExact(await ctx.read(again), p, 'replay after an edited first matrix');
    ctx.releaseMatrix(again);
    packed.destroy();
  });

  it('never writes a matrix the caller holds: each held one has its own plan or none', async () => {
    const ctx = await context();
    const p = problemOf(2, 40, 24);
    const packed = await ctx.prepack('rhs', p.rhs);
    const held: { m: GpuMatrix; p: GemmProblem }[] = [];
    for (let i = 0; i < 6; i++) {
      const q = withLhs(p);
      held.push({ m: await ctx.gemmOnGpu({ ...q, rhs: packed }), p: q });
    }
    expect(new Set(held.map((h) => h.m.buffer)).size).toBe(6);
    expect(plansHeld(ctx)).toBe(4); // four plans per rhs; the fifth and sixth calls ran without one
    for (const [i, h] of held.entries()) expectExact(await ctx.read(h.m), h.p, `held ${i}, after every later call`);
    // Two given back: the next two calls replay into their buffers; the four still held are intact.
    const freed = held.splice(1, 2);
    for (const h of freed) ctx.releaseMatrix(h.m);
    for (let i = 0; i < 2; i++) {
      const q = withLhs(p);
      const { value: m, bindGroups } = await counted(() => ctx.gemmOnGpu({ ...q, rhs: packed }));
      expect(bindGroups).toBe(0);
      expect(freed.map((h) => h.m.buffer)).toContain(m.buffer);
      held.push({ m, p: q });
    }
    for (const [i, h] of held.entries()) expectExact(await ctx.read(h.m), h.p, `held ${i}, after the replays`);
    for (const h of held) ctx.releaseMatrix(h.m);
    packed.destroy();
  });

  it('makes a new plan for a changed problem, never a stale one', async () => {
    const ctx = await context();
    const base = problemOf(1, 48, 40);
    const packed = await ctx.prepack('rhs', base.rhs);
    const newPlan = async (p: GemmProblem, what: string) => {
      const { bindGroups } = await counted(() => onGpu(ctx, p, packed, what));
      return bindGroups > 0;
    };
    expect(await newPlan(base, 'first')).toBe(true);
    expect(await newPlan(withLhs(base), 'replay')).toBe(false);
    const zp = (base.rhsZeroPoint as Int32Array).slice();
    const edited = { ...base, rhsZeroPoint: zp };
    expect(await newPlan(edited, 'rhsZeroPoint copied')).toBe(false); // equal values: the same problem
    zp[5] = 200;
    expect(await newPlan(edited, 'rhsZeroPoint edited in place')).toBe(true);
    expect(await newPlan({ ...base, lhsZeroPoint: 9 }, 'lhsZeroPoint')).toBe(true);
    expect(await newPlan({ ...base, lhs: { ...base.lhs, data: bytes(2 * 40), rows: 2 } }, 'M = 2')).toBe(true);
    expect(await newPlan({ ...base, pipeline: [] }, 'int32 dst')).toBe(true);
    packed.destroy();
  });

  it('keys a GpuMatrix lhs by its buffer, refuses a released one, and replays a two-layer decode loop', async () => {
    const ctx = await context();
    const l1 = problemOf(1, 32, 40);
    const l2 = problemOf(1, 24, 32);
    const [w1, w2] = [await ctx.prepack('rhs', l1.rhs), await ctx.prepack('rhs', l2.rhs)];
    const token = async (what: string) => {
      const x = withLhs(l1);
      const h = await ctx.gemmOnGpu({ ...x, rhs: w1 });
      const hHost = await ctx.read(h);
      expectExact(hHost, x, `${what}: layer 1`);
      const y = await ctx.gemmOnGpu({ ...l2, lhs: h, rhs: w2 });
      expectExact(await ctx.read(y), { ...l2, lhs: { ...l2.lhs, data: hHost.data as Uint8Array } }, `${what}: layer 2`);
      ctx.releaseMatrix(y);
      ctx.releaseMatrix(h);
      return h;
    };
    await token('token 0');
    const { value: h, bindGroups, buffers } = await counted(() => token('token 1'));
    expect({ bindGroups, buffers }).toEqual({ bindGroups: 0, buffers: 0 });
    // The released matrix as lhs: refused, though its buffer keys a plan.
    await expect(ctx.gemmOnGpu({ ...l2, lhs: h, rhs: w2 })).rejects.toThrow(/released/);
    // Another buffer with the same shape: its first call runs without a plan (a buffer brought anew by
    // every call would never be replayed), its second makes one, reading that buffer.
    const buffer = gpu!.device.createBuffer({ size: 32, usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_DST });
    const lhs: GpuMatrix = { buffer, rows: 1, cols: 32, order: 'row-major', dtype: 'uint8', stride: 32 };
    const held = plansHeld(ctx);
    for (const what of ['a caller buffer', 'a caller buffer, again']) {
      const other = withLhs(l2);
      gpu!.device.queue.writeBuffer(buffer, 0, other.lhs.data as Uint8Array<ArrayBuffer>);
      const made = await counted(() => ctx.gemmOnGpu({ ...l2, lhs, rhs: w2 }));
      expect(made.bindGroups).toBeGreaterThan(0);
      expectExact(await ctx.read(made.value), other, what);
      ctx.releaseMatrix(made.value);
    }
    expect(plansHeld(ctx)).toBe(held + 1);
    // The same buffer, new contents: a replay that reads them.
    const again = withLhs(l2);
    gpu!.device.queue.writeBuffer(buffer, 0, again.lhs.data as Uint8Array<ArrayBuffer>);
    const replayed = await counted(() => ctx.gemmOnGpu({ ...l2, lhs, rhs: w2 }));
    expect(replayed.bindGroups).toBe(0);
    expectExact(await ctx.read(replayed.value), again, 'a caller buffer rewritten');
    ctx.releaseMatrix(replayed.value);
    buffer.destroy();
    w1.destroy();
    w2.destroy();
  });

  it("plans ctx.gemm's read-back calls with a GpuMatrix lhs the same way (a decode loop's last layer)", async () => {
    const ctx = await context();
    const l1 = problemOf(2, 32, 40);
    const l2 = problemOf(2, 24, 32);
    const [w1, w2] = [await ctx.prepack('rhs', l1.rhs), await ctx.prepack('rhs', l2.rhs)];
    const plans: string[] = [];
    const onTrace = (t: { plan: string }) => plans.push(t.plan);
    const token = async (what: string) => {
      const x = withLhs(l1);
      const h = await ctx.gemmOnGpu({ ...x, rhs: w1 });
      const hHost = await ctx.read(h);
      const y = await ctx.gemm({ ...l2, lhs: h, rhs: w2 }, undefined, { onTrace });
      expectExact(y, { ...l2, lhs: { ...l2.lhs, rows: 2, data: hHost.data as Uint8Array } }, what);
      ctx.releaseMatrix(h);
      return h;
    };
    await token('token 0');
    const { value: h, bindGroups, buffers } = await counted(() => token('token 1'));
    expect({ bindGroups, buffers }).toEqual({ bindGroups: 0, buffers: 0 });
    await token('token 2');
    expect(plans.splice(0)).toEqual(['new', 'hit', 'hit']);
    // The released matrix: refused, though its buffer keys a plan.
    await expect(ctx.gemm({ ...l2, lhs: h, rhs: w2 })).rejects.toThrow(/released/);
    // A buffer brought anew by each call (as a Sequential's elementwise outputs are): never a plan.
    const fresh: GPUBuffer[] = [];
    for (let i = 0; i < 3; i++) {
      const x = withLhs(l2);
      const buffer = gpu!.device.createBuffer({ size: 64, usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_DST });
      fresh.push(buffer);
      gpu!.device.queue.writeBuffer(buffer, 0, x.lhs.data as Uint8Array<ArrayBuffer>);
      const lhs: GpuMatrix = { buffer, rows: 2, cols: 32, order: 'row-major', dtype: 'uint8', stride: 32 };
      expectExact(await ctx.gemm({ ...l2, lhs, rhs: w2 }, undefined, { onTrace }), x, `a fresh buffer ${i}`);
    }
    expect(plans.splice(0)).toEqual(['none', 'none', 'none']);
    // One buffer, rewritten between calls: no plan at first sight, a plan at the second, then replays that read it.
    const [buffer] = fresh;
    const lhs: GpuMatrix = { buffer, rows: 2, cols: 32, order: 'row-major', dtype: 'uint8', stride: 32 };
    for (const what of ['a caller buffer', 'a caller buffer rewritten', 'rewritten again']) {
      const x = withLhs(l2);
      gpu!.device.queue.writeBuffer(buffer, 0, x.lhs.data as Uint8Array<ArrayBuffer>);
      expectExact(await ctx.gemm({ ...l2, lhs, rhs: w2 }, undefined, { onTrace }), x, what);
    }
    expect(plans.splice(0)).toEqual(['new', 'hit', 'hit']);
    for (const b of fresh) b.destroy();
    w1.destroy();
    w2.destroy();
  });

  it('keeps a held dst readable when its rhs is destroyed, frees it at release, and refuses later calls', async () => {
    const ctx = await context();
    const p = problemOf(1, 40, 24);
    const packed = await ctx.prepack('rhs', p.rhs);
    await onGpu(ctx, p, packed, 'plan made');
    const q = withLhs(p);
    const m = await onGpu(ctx, q, packed, 'replayed, held', true);
    packed.destroy();
    expectExact(await ctx.read(m), q, 'held after its rhs was destroyed');
    expect(plansHeld(ctx)).toBe(1); // dropped, its dst still held
    ctx.releaseMatrix(m);
    expect(plansHeld(ctx)).toBe(0);
    await expect(ctx.gemmOnGpu({ ...p, rhs: packed })).rejects.toThrow(/destroyed/);
  });
});
