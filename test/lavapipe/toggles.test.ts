// Lavapipe tier for Dawn's device toggles (docs/gpu.md "Dawn toggles"): the subgroup-matrix kernel with
// Dawn's REAL builtins (subgroupMatrixLoad / Store on workgroup memory, 8x8x8 fragments) on a device with
// `disable_workgroup_init` and `disable_robustness`, every shader's workgroup memory poisoned first
// (test/support/poison-workgroup.ts), so that a staged byte read before it is written, the row padding, or
// the zero-staged tail past the packed depth would show: the registry's tiling and two more of the family
// (a 128-byte k step; a 128-row tile), on a sample of the verify suite, every index and every fragment
// load's and store's span counted (test/support/bounds-check.ts), none out of range; and a probe that
// the span counts are right for the real builtins.
// Run by tools/test-lavapipe.sh, never by the default `vitest run`.

import { afterAll, describe, expect, it, vi } from 'vitest';
import { acquireDevice } from '../../src/gpu/acquire.ts';
import { DEFAULT_TILING, type SgmatConfig, sgmatTilings, tilingId } from '../../src/kernels/sgmat/config.ts';
import { sgmatSource, sgmatVariant } from '../../src/kernels/sgmat/kernel.ts';
import { GPU_KERNELS } from '../../src/kernels/registry.ts';
import { verifyGpuKernel, verifyProblems } from '../../src/verify.ts';
import { boundsCheckDevice, runProbe } from '../support/bounds-check.ts';
import { poisonDevice } from '../support/poison-workgroup.ts';

vi.setConfig({ testTimeout: 600_000, hookTimeout: 600_000 });

const gpu = await acquireDevice({ allowSoftware: true, toggles: ['disable_workgroup_init', 'disable_robustness'] });
const poisoned = poisonDevice(gpu.device);
const bounds = boundsCheckDevice(gpu.device); // after the poison: its fills run unchecked
afterAll(() => gpu.device.destroy());

describe('the bounds check counts the spans of the real fragment loads and stores', () => {
  // One subgroup of 8 loads a left fragment (8 rows of 8 bytes: 2 words each, 2 apart) from a (16 words)
  // at LOAD_AT, and stores the 8 x 8 result (8 words a row, 8 apart) into o (64 words) at STORE_AT: each
  // of the 8 invocations counts a span that ends past its array, or starts past it.
  const code = `enable subgroups;
enable chromium_experimental_subgroup_matrix;
diagnostic(off, chromium.subgroup_matrix_uniformity);
alias LeftFragment = subgroup_matrix_left<u8, 8, 8>;
alias RightFragment = subgroup_matrix_right<u8, 8, 8>;
alias ResultFragment = subgroup_matrix_result<u32, 8, 8>;
override LOAD_AT: u32;
override STORE_AT: u32;
@group(0) @binding(0) var<storage, read_write> o: array<u32>;
@group(0) @binding(1) var<storage, read> a: array<u32>;
@compute @workgroup_size(8) fn main() {
  let l = subgroupMatrixLoad<LeftFragment, row_major>(&a, LOAD_AT, 2u);
  let r = subgroupMatrixLoad<RightFragment, col_major>(&a, 0u, 2u);
  var acc = ResultFragment();
  acc = subgroupMatrixMultiplyAccumulate(l, r, acc);
  subgroupMatrixStore<row_major>(&o, STORE_AT, acc, 8u);
}`;

  it.each([
    [0, 0, {}],
    [2, 0, { 'probe: a load span': 8 }],
    [0, 1, { 'probe: o store span': 8 }],
    [0, 2 ** 32 - 64, { 'probe: o store span': 8 }], // an offset gone below 0: its u32 span sum wraps to 0
  ])('load at %i, store at %i: %o', async (LOAD_AT, STORE_AT, expected) => {
    const d = await acquireDevice({ allowSoftware: true, toggles: [] }); // robustness on: the probe's own reads are clamped
    try {
      const check = boundsCheckDevice(d.device);
      await runProbe(d.device, code, [256, 64], 1, { LOAD_AT, STORE_AT }); // o: 64 words, a: 16
      expect(await check.take()).toEqual(expected);
      expect([check.modules, check.uncompiled]).toEqual([1, []]);
    } finally {
      d.device.destroy();
    }
  });
});

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
    expect(await bounds.take(), 'indices or spans out of range').toEqual({});
    expect(bounds.uncompiled).toEqual([]);
  });
});
