// Unit tier: the bounds of the plan caches (src/scheduler/plans.ts), with stand-in plans and no device.
// gemmOnGpu plans (GPU_PLANS_PER_RHS = 4 per rhs) and chain plans (CHAIN_PLANS = 4 per context) push out
// the one unused longest: a hit moves a plan to the back. A busy gemmOnGpu plan (its dst handed out) is
// never pushed out, only marked, and freed when its dst comes back. Call plans are covered on the device
// (test/gpu/decode.test.ts).

import { describe, expect, it } from 'vitest';
import type { GpuMatrix, PackedOperand } from '../../src/scheduler/context.ts';
import { CallPlans, type ChainPlan } from '../../src/scheduler/plans.ts';
import type { LastRun, PlanBuilder } from '../../src/scheduler/record.ts';
import { snapshotProblem } from '../../src/problem/snapshot.ts';
import type { GemmProblem } from '../../src/types.ts';

/** A builder whose destroy() calls are recorded under `name`. */
function builder(name: string, freed: string[]): PlanBuilder {
  const destroy = () => freed.push(name);
  return { pool: { destroy }, uniforms: { destroy: () => {} }, staging: { destroy: () => {} }, commands: [] } as unknown as PlanBuilder;
}

/** A problem minus its rhs, told apart by M. */
const keyOf = (M: number): Omit<GemmProblem, 'rhs'> => ({
  lhs: { data: new Uint8Array(M * 4), rows: M, cols: 4, order: 'row-major' },
  lhsZeroPoint: 0,
  rhsZeroPoint: 0,
  pipeline: [],
});

const plans = () => new CallPlans({} as GPUDevice);

describe('chain plans: the one unused longest goes first', () => {
  it('a fifth chain pushes out the least recently used, not the oldest made', () => {
    const cache = plans().chains;
    const freed: string[] = [];
    const rhs = [{}, {}] as unknown as PackedOperand[];
    const chain = (M: number): ChainPlan => ({
      input: [snapshotProblem(keyOf(M)), snapshotProblem(keyOf(M))],
      rhs,
      builders: [builder(`M${M}`, freed)],
      call: {} as ChainPlan['call'],
    });
    for (const M of [1, 2, 3, 4]) cache.add(chain(M));
    expect(cache.find(rhs, [keyOf(1), keyOf(1)])).not.toBeNull(); // M = 1, made first, used last
    cache.add(chain(5));
    expect(freed).toEqual(['M2']);
    expect(cache.size).toBe(4);
    expect(cache.find(rhs, [keyOf(1), keyOf(1)])).not.toBeNull();
    expect(cache.find(rhs, [keyOf(2), keyOf(2)])).toBeNull();
    // another rhs (by identity) or another key of one GEMM is not served
    expect(cache.find([rhs[0], {} as PackedOperand], [keyOf(1), keyOf(1)])).toBeNull();
    expect(cache.find(rhs, [keyOf(1), keyOf(3)])).toBeNull();
    cache.destroy();
    expect(freed.sort()).toEqual(['M1', 'M2', 'M3', 'M4', 'M5']);
  });
});

describe('gemmOnGpu plans: the free one unused longest goes first, a busy one never', () => {
  const made = (M: number) => ({
    ran: {} as LastRun,
    lhsSource: {} as GPUBuffer,
    dst: { buffer: { M } as unknown as GPUBuffer } as GpuMatrix,
    label: `M${M}`,
    lhsMatrix: null,
  });
  /** A cache with four busy plans of one rhs, M = 1..4; `add` makes one more. */
  const fourHeld = () => {
    const cache = plans();
    const freed: string[] = [];
    const rhs = { destroyed: false } as PackedOperand;
    const add = (M: number) => cache.addOnGpu(builder(`M${M}`, freed), { ...keyOf(M), rhs }, made(M));
    return { cache, freed, rhs, add, held: [1, 2, 3, 4].map(add) };
  };
  it('a fifth plan of one rhs pushes out the free plan unused longest', () => {
    const { cache, freed, rhs, add, held } = fourHeld();
    for (const p of held) cache.releaseDst(p.dst.buffer);
    expect(cache.findOnGpu({ ...keyOf(1), rhs }, null)).toBe(held[0]); // M = 1 used last (and busy again)
    cache.releaseDst(held[0].dst.buffer);
    add(5);
    expect(freed).toEqual(['M2']);
    expect(cache.sizeOnGpu).toBe(4);
    expect(cache.findOnGpu({ ...keyOf(2), rhs }, null)).toBeNull();
  });
  it('busy plans are kept past the bound, marked, and freed when their dst comes back', () => {
    const { cache, freed, rhs, add, held } = fourHeld();
    expect(cache.roomOnGpu(rhs)).toBe(false); // four held: a fifth call runs without a plan
    cache.releaseDst(held[2].dst.buffer);
    expect(cache.roomOnGpu(rhs)).toBe(true);
    add(5);
    expect(freed).toEqual(['M3']); // the only free one
    cache.drop(rhs); // the rhs destroyed while four dsts are held: nothing freed yet
    expect(freed).toEqual(['M3']);
    expect(cache.sizeOnGpu).toBe(4);
    cache.releaseDst(held[0].dst.buffer);
    expect(freed).toEqual(['M3', 'M1']);
    expect(cache.releaseDst({} as GPUBuffer)).toBe(false); // a buffer of the pool, not a plan's
  });
});

describe('destroy frees the chain plans too', () => {
  it('CallPlans.destroy frees every chain plan', () => {
    const cache = plans();
    const freed: string[] = [];
    const rhs = [{}] as unknown as PackedOperand[];
    cache.chains.add({ input: [snapshotProblem(keyOf(1))], rhs, builders: [builder('chain', freed)], call: {} as ChainPlan['call'] });
    cache.destroy();
    expect(freed).toEqual(['chain']);
    expect(cache.chains.size).toBe(0);
  });
});
