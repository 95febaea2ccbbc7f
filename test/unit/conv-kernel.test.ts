// Unit tier for the kernel a convolution layer runs (src/kernels/registry.ts, src/tune.ts) on an H100-like
// adapter, for the suite's two conv layers as GEMMs (3136x64x576, 3136x64x288): the rules take the 64x64
// subgroup-matrix tile; a tuning table's conv entry is taken instead, a 128-row tiling included, whether the
// patches are packed in the GEMM's pass (no prepacked lhs format) or by packPatches ('u8k4-r128'); and the
// tuner's candidates for these shapes span the larger subgroup-matrix tilings and the dot4 tiles.

import { describe, expect, it } from 'vitest';
import { kernelOf } from '../../src/kernels/kernel-configs.ts';
import { selectGemmKernel } from '../../src/kernels/registry.ts';
import { TUNING_FORMAT, type TuningTable, tunedKernel } from '../../src/kernels/tuning.ts';
import { candidates } from '../../src/tune.ts';
import { h100Caps } from '../support/caps.ts';

const shape = (M: number, N: number, K: number) => ({ M, N, K, dstType: 'uint8' as const, dstOrder: 'row-major' as const });
const layers = [shape(3136, 64, 576), shape(3136, 64, 288)];

describe('the kernel of a conv layer', () => {
  const caps = h100Caps();
  const tiling = { family: 'sgmat' as const, tileM: 128, tileN: 64, sgRows: 4, sgCols: 2, kStep: 64, buffers: 2 as const };
  const table: TuningTable = {
    format: TUNING_FORMAT,
    adapter: { vendor: 'nvidia', architecture: 'hopper', device: 'nvidia-h100-80gb-hbm3', description: '' },
    entries: [{ class: 'conv', shape: { M: 3136, N: 64, K: 576 }, kernel: tiling }],
  };
  const tuned = { kernelFor: (s: ReturnType<typeof shape>) => tunedKernel(table, s), kernels: [kernelOf(tiling)] };

  it("the rules' 64x64 tile, a table's 128-row tiling where its conv entry serves, any lhs format the patches take", () => {
    for (const s of layers) {
      expect(selectGemmKernel(caps, s, { force: '' }).id).toBe('sgmat-64x64');
      expect(selectGemmKernel(caps, s, { force: '', tuned }).id).toBe(kernelOf(tiling).id);
      expect(selectGemmKernel(caps, s, { force: '', tuned, lhsPackFormat: 'u8k4-r128' }).id).toBe(kernelOf(tiling).id);
    }
  });

  it("the tuner's candidates at the conv shapes: 128-row sgmat tilings and the dot4 tiles", () => {
    for (const s of layers) {
      const ids = candidates(caps, s, selectGemmKernel(caps, s, { force: '' })).map((k) => k.id);
      expect(ids[0]).toBe('sgmat-64x64');
      expect(ids.some((id) => id.startsWith('sgmat-128x64-'))).toBe(true);
      expect(ids.some((id) => id.startsWith('dot4-'))).toBe(true);
    }
  });
});
