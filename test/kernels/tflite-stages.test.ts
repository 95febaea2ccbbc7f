// The TFLite-path output stages (requantizeFloat32, 'double-up' rounding) in every CPU kernel of the
// registry (the JavaScript kernel, the WebAssembly kernels with native float32 and 64-bit integer
// arithmetic) against the BigInt/rational oracle, on the edge cases of test/support/float32-cases.ts:
// a K = 1 GEMM (lhs 1, rhs 0) whose per-column bias puts each edge accumulator in place, followed by
// the stage with per-column scales (or multipliers and exponents).

import { describe, expect, it } from 'vitest';
import { readyCpuCaps } from '../../src/kernels/cpu-caps.ts';
import { CPU_KERNELS } from '../../src/kernels/registry.ts';
import { normalizeProblem } from '../../src/problem/problem.ts';
import type { GemmProblem } from '../../src/types.ts';
import { mbqmDoubleUpBig, requantizeFloat32Big } from '../oracle/bigint-float32.ts';
import { float32Cases, multiplierCases } from '../support/float32-cases.ts';

const caps = await readyCpuCaps();

function expectSame(name: string, got: ArrayLike<number>, want: (i: number) => number, args: (i: number) => string) {
  let count = 0;
  const examples: string[] = [];
  for (let i = 0; i < got.length; i++) {
    if (got[i] !== want(i)) {
      count++;
      if (examples.length < 8) examples.push(`${name}(${args(i)}): ${got[i]}, oracle ${want(i)}`);
    }
  }
  if (count) expect.fail(`${name}: ${count} of ${got.length} differ\n${examples.join('\n')}`);
}

/** A 1 x N GEMM whose accumulators are exactly `acc` (K = 1, lhs 1, rhs 0, bias = acc). */
const oneRow = (acc: Int32Array, pipeline: GemmProblem['pipeline']): GemmProblem => ({
  lhs: { data: Uint8Array.of(1), rows: 1, cols: 1 },
  rhs: { data: new Uint8Array(acc.length), rows: 1, cols: acc.length },
  pipeline: [{ type: 'bias', axis: 'col', values: acc }, ...(pipeline ?? [])],
});

describe.each(CPU_KERNELS.map((k) => [k.id, k] as const))('CPU kernel %s: TFLite-path stages == oracle', (_id, kernel) => {
  it('requantizeFloat32, per-column scales and zero points over the edge cases', async () => {
    const c = float32Cases(4000, 13);
    // one zero point per GEMM: group the cases by zero point
    for (const zp of new Set(c.zeroPoint)) {
      const idx = c.zeroPoint.flatMap((z, i) => (z === zp ? [i] : []));
      const acc = Int32Array.from(idx, (i) => c.x[i]);
      const scale = new Float32Array(Int32Array.from(idx, (i) => c.scaleBits[i]).buffer);
      const p = normalizeProblem(oneRow(acc, [{ type: 'requantizeFloat32', scale, zeroPoint: zp, axis: 'col' }]));
      if (!kernel.supports(caps, p)) return;
      const got = (await kernel.run(p, { threads: 1 })).data;
      expectSame(
        'requantizeFloat32',
        got,
        (j) => requantizeFloat32Big(acc[j], c.scaleBits[idx[j]], zp),
        (j) => `${acc[j]}, 0x${(c.scaleBits[idx[j]] >>> 0).toString(16)}, ${zp}`,
      );
    }
  });

  it("'double-up' rounding, per-column multipliers and exponents", async () => {
    const c = multiplierCases(4000, 17);
    const acc = Int32Array.from(c.x);
    const p = normalizeProblem(
      oneRow(acc, [
        {
          type: 'scaleInt32ByFixedPointAndExponent',
          multiplier: Int32Array.from(c.m),
          exponent: Int32Array.from(c.shift),
          offsetAfterShift: 0,
          rounding: 'double-up',
          axis: 'col',
        },
      ]),
    );
    if (!kernel.supports(caps, p)) return;
    const got = (await kernel.run(p, { threads: 1 })).data;
    expectSame(
      'double-up',
      got,
      (i) => mbqmDoubleUpBig(c.x[i], c.m[i], c.shift[i]),
      (i) => `${c.x[i]}, ${c.m[i]}, ${c.shift[i]}`,
    );
  });
});
