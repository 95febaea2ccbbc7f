// The patch planner's bounds at their exact edges (src/pack/patches.ts checkPatchGeometry, planPatches):
// an output row starting at the input's end is refused, an input of exactly the binding size is planned
// and one byte more is refused. Each case fails with its comparison off by one.

import { describe, expect, it } from 'vitest';
import { InputError } from '../../src/errors.ts';
import type { PlanLimits } from '../../src/gpu/caps.ts';
import { PACK_FORMATS } from '../../src/pack/formats.ts';
import { checkPatchGeometry, type PatchGeometry, planPatches } from '../../src/pack/patches.ts';

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
