// Lavapipe tier for Dawn's device toggles (docs/gpu.md "Dawn toggles"): the subgroup-matrix kernel with
// Dawn's REAL builtins (subgroupMatrixLoad / Store on workgroup memory, 8x8x8 fragments) on a device with
// `disable_workgroup_init` and `disable_robustness`, every shader's workgroup memory poisoned first
// (test/support/poison-workgroup.ts), so that a staged byte read before it is written, the row padding, or
// the zero-staged tail past the packed depth would show: the registry's tiling and two more of the family
// (a 128-byte k step; a 128-row tile), on a sample of the verify suite.
// Run by tools/test-lavapipe.sh, never by the default `vitest run`.

import { afterAll, describe, expect, it, vi } from 'vitest';
import { acquireDevice } from '../../src/gpu/acquire.ts';
import { DEFAULT_TILING, type SgmatConfig, sgmatTilings, tilingId } from '../../src/kernels/sgmat/config.ts';
import { sgmatSource, sgmatVariant } from '../../src/kernels/sgmat/kernel.ts';
import { GPU_KERNELS } from '../../src/kernels/registry.ts';
import { verifyGpuKernel, verifyProblems } from '../../src/verify.ts';
import { poisonDevice } from '../support/poison-workgroup.ts';

vi.setConfig({ testTimeout: 600_000, hookTimeout: 600_000 });

const gpu = await acquireDevice({ allowSoftware: true, toggles: ['disable_workgroup_init', 'disable_robustness'] });
const poisoned = poisonDevice(gpu.device);
afterAll(() => gpu.device.destroy());

describe('sgmat with both toggles and poisoned workgroup memory on lavapipe', () => {
  const u8: SgmatConfig = { componentType: 'u8', M: 8, N: 8, K: 8, subgroupSize: 8 };
  const limits = gpu.device.limits as unknown as Parameters<typeof sgmatTilings>[1];
  const all = sgmatTilings(u8, limits);
  // The registry's tiling, a 128-byte k step (its last step reaches past a K padded to 64: zero-staged),
  // and a 128-row tile; built without the self-test gate (the lavapipe tier runs it in ./sgmat.test.ts).
  const picks = [DEFAULT_TILING, all.find((t) => t.kStep === 128), all.find((t) => t.tileM === 128)].filter((t) => t !== undefined);
  const kernels = picks.map(
    (t) =>
      [tilingId(t), sgmatVariant(`${tilingId(t)}-poisoned`, (c) => (c.subgroupMatrix.length ? u8 : null), sgmatSource, false, t)] as const,
  );
  // Every fourth problem of the suite.
  const suite = verifyProblems().filter((_, i) => i % 4 === 0);

  it.each(kernels)('%s: exact', async (_, kernel) => {
    expect(gpu.summary.description).toMatch(/llvmpipe/);
    const row = await verifyGpuKernel(gpu.device, kernel, suite, { kernels: [kernel, ...GPU_KERNELS] });
    console.log(`[lavapipe toggles] ${kernel.id}: ${row.problems} problems, ${row.mismatches} mismatches, ${(row.ms / 1000).toFixed(1)} s`);
    expect([row.detail, row.mismatches, row.problems]).toEqual(['', 0, suite.length]);
    expect(poisoned.rewritten).toBeGreaterThan(0);
  });
});
