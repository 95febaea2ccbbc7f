// The expectations of the driver-asserting CPU tests (test/support/cpu-drivers.ts) under both outcomes
// of the engine's relaxed-SIMD probe, held to literal tables: a CPU whose engine proves the relaxed dot
// exact (Intel with VNNI, ARM sdot) and one whose engine refuses it (AMD Zen 4 under V8: pmaddubsw
// saturates), so that a machine of either kind catches a wrong expectation of the other.

import { describe, expect, it } from 'vitest';
import { prepackedDriver, relaxedFewShape, verifyPrepackedDrivers } from '../support/cpu-drivers.ts';

const ROWS = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 12, 13, 16, 17];
const driversOf = (relaxedSimd: boolean, zL: number) => ROWS.map((M) => prepackedDriver({ relaxedSimd }, M, zL).source);

describe('which driver a prepacked 8-bit rhs runs', () => {
  it('relaxed dot refused: the byte lanes to 2 rows, widened tiles at 3, 5, 6, 9, else the 16-bit panels', () => {
    expect(driversOf(false, 0)).toEqual([
      '^gemm_lane_',
      '^gemm_lane_',
      '^gemm_wide_',
      '^gemm_i16$',
      '^gemm_wide_',
      '^gemm_wide_',
      '^gemm_i16$',
      '^gemm_i16$',
      '^gemm_wide_',
      '^gemm_i16$',
      '^gemm_i16$',
      '^gemm_i16$',
      '^gemm_i16$',
      '^gemm_i16$',
    ]);
    // lhs - zL within 16 bits up to |zL| = 32512; past it, the panels at every row count.
    expect(driversOf(false, -32512)).toEqual(driversOf(false, 0));
    expect(new Set(driversOf(false, 32513))).toEqual(new Set(['^gemm_i16$']));
  });
  it('relaxed dot exact: the relaxed few-row kernels to 4 rows and at 7, 8, 13-16, else the 6x8, at any zero point', () => {
    const want = [
      '^gemm_relaxed_1x4$',
      '^gemm_relaxed_2x2$',
      '^gemm_relaxed_4x1$',
      '^gemm_relaxed_4x1$',
      '^gemm_relaxed$',
      '^gemm_relaxed$',
      '^gemm_relaxed_4x1$',
      '^gemm_relaxed_4x1$',
      '^gemm_relaxed$',
      '^gemm_relaxed$',
      '^gemm_relaxed$',
      '^gemm_relaxed_4x1$',
      '^gemm_relaxed_4x1$',
      '^gemm_relaxed$',
    ];
    for (const zL of [0, 32512, 32513, -2147483648]) expect(driversOf(true, zL)).toEqual(want);
    expect(ROWS.map(relaxedFewShape)).toEqual(['1x4', '2x2', '4x1', '4x1', null, null, '4x1', '4x1', null, null, null, '4x1', '4x1', null]);
  });
  it("verify's prepacked row names the few-row drivers of the kernel it packed for", () => {
    const row = (relaxedSimd: boolean) => verifyPrepackedDrivers({ relaxedSimd }).map((r) => r.source);
    expect(row(false)).toEqual(['gemm_lane_1x4', 'gemm_wide_3x4']);
    expect(row(true)).toEqual(['gemm_relaxed_1x4', 'gemm_relaxed_2x2', 'gemm_relaxed_4x1']);
  });
});
