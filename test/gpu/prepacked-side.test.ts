// A prepacked operand is for the side it was prepacked for (src/scheduler/operands.ts shapeOf): an lhs
// prepacked as lhs given as the rhs, or the reverse, is an InputError naming the field, not a GEMM run on
// the wrong layout.

import { afterAll, describe, expect, it } from 'vitest';
import { InputError } from '../../src/errors.ts';
import { GpuContext } from '../../src/scheduler/context.ts';
import { getGpu, releaseGpu } from './gpu-env.ts';

const gpu = await getGpu();
afterAll(releaseGpu);

describe.skipIf(!gpu)('a prepacked operand on the wrong side', () => {
  it('an lhs prepacked as lhs is refused as rhs, and the reverse', async () => {
    const ctx = await GpuContext.create({ device: gpu!.device });
    const a = { data: new Uint8Array(16 * 16).fill(3), rows: 16, cols: 16 };
    const [asLhs, asRhs] = await Promise.all([ctx.prepack('lhs', a), ctx.prepack('rhs', a)]);
    const e1 = await ctx.gemm({ lhs: a, rhs: asLhs }).catch((e: unknown) => e);
    expect(e1).toBeInstanceOf(InputError);
    expect((e1 as InputError).field).toBe('rhs');
    expect((e1 as InputError).message).toMatch(/prepacked as lhs/);
    const e2 = await ctx.gemm({ lhs: asRhs, rhs: a }).catch((e: unknown) => e);
    expect((e2 as InputError).field).toBe('lhs');
    ctx.destroy();
  });
});
