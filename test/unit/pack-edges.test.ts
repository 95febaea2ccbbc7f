// The planners' bounds at their exact edges (src/pack/patches.ts, src/pack/plan.ts, src/pack/formats.ts):
// an output row starting at the input's end is refused, an input or source of exactly the binding size is
// planned (one byte more is refused), k-sliced bands start on whole packed words, and prepacks pad to 256
// rows only for tiles above 128. Found by a mutation trial: each case fails with its comparison off by one.

import { describe, expect, it } from 'vitest';
import { InputError } from '../../src/errors.ts';
import type { PlanLimits } from '../../src/gpu/caps.ts';
import { PACK_FORMATS, prepackFormat } from '../../src/pack/formats.ts';
import { checkPatchGeometry, type PatchGeometry, planPatches } from '../../src/pack/patches.ts';
import { planPack } from '../../src/pack/plan.ts';

const g = (over: Partial<PatchGeometry> = {}): PatchGeometry => ({
  batch: 1,
  height: 4,
  width: 4,
  channels: 16,
  filterHeight: 1,
  filterWidth: 1,
  strideHeight: 1,
  strideWidth: 1,
  dilationHeight: 1,
  dilationWidth: 1,
  padTop: 0,
  padLeft: 0,
  outHeight: 4,
  outWidth: 4,
  ...over,
});
describe('patch geometry bounds', () => {
  it('refuses an output that starts exactly at the input end', () => {
    expect(() => checkPatchGeometry(g(), 256)).not.toThrow();
    expect(() => checkPatchGeometry(g({ outHeight: 5 }), 256)).toThrow(InputError);
    expect(() => checkPatchGeometry(g({ outWidth: 5 }), 256)).toThrow(/outWidth/);
  });
  it('plans an input of exactly maxStorageBufferBindingSize bytes, refuses one byte more', () => {
    const limits = {
      maxStorageBufferBindingSize: 4096,
      maxComputeWorkgroupsPerDimension: 65535,
      minStorageBufferOffsetAlignment: 256,
    } as PlanLimits;
    const geometry = g({ height: 8, width: 8, channels: 64, outHeight: 8, outWidth: 8 }); // 4096 bytes of input
    expect(planPatches(geometry, 4096, PACK_FORMATS['u8k4-r64'], limits).length).toBeGreaterThan(0);
    expect(() => planPatches(geometry, 4097, PACK_FORMATS['u8k4-r64'], limits)).toThrow(/convolution input/);
  });
});

const packLimits = (binding: number): PlanLimits => ({
  maxStorageBufferBindingSize: binding,
  maxComputeWorkgroupsPerDimension: 65535,
  maxBufferSize: 2 ** 40,
  maxComputeWorkgroupStorageSize: 16384,
  maxComputeInvocationsPerWorkgroup: 256,
  maxComputeWorkgroupSizeX: 256,
  minStorageBufferOffsetAlignment: 256,
  minUniformBufferOffsetAlignment: 256,
});

describe('planPack at the binding size', () => {
  it('a source of exactly maxStorageBufferBindingSize bytes is one band, never refused', () => {
    // lhs [2048, 2] col-major: k strided by 2048 bytes, 4096 bytes in all (too few k for a k-sliced band)
    const plan = planPack(
      { bytes: 4096, outerStride: 1, depthStride: 2048 },
      4096,
      2048,
      2,
      PACK_FORMATS['u8k4-r64'],
      packLimits(4096),
      'lhs',
    );
    expect(new Set(plan.map((d) => d.srcBase))).toEqual(new Set([0]));
    expect(plan.every((d) => d.srcSize === 4096 && d.depthBegin === 0 && d.depthEnd === 2)).toBe(true);
  });
});

describe('pack plans: words and row padding', () => {
  it('k-sliced bands start on whole packed words (4 k per u32, 8 for 4-bit values)', () => {
    const l = { ...packLimits(16384), minStorageBufferOffsetAlignment: 32 };
    for (const id of ['u8k4-r64', 'u4k8-r64'] as const) {
      const f = PACK_FORMATS[id];
      const plan = planPack({ bytes: 112 * 256, outerStride: 1, depthStride: 112 }, 112 * 256, 112, 256, f, l, 'rhs');
      expect(plan.length).toBeGreaterThan(1);
      for (const d of plan) expect(d.depthBegin % (32 / f.valueBits), id).toBe(0);
    }
  });
  it('pads prepacked rows to 128 for 64- and 128-row kernels, to 256 only above', () => {
    for (const rows of [0, 64, 128]) expect(prepackFormat({ dot4: true }, 'rhs', 8, rows)).toBe('u8k4-r128');
    expect(prepackFormat({ dot4: true }, 'rhs', 8, 256)).toBe('u8k4-r256');
  });
});
