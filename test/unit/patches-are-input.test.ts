// src/pack/patches.ts patchesAreInput: the geometries whose patch matrix is the NHWC input itself, row for
// row, which the scheduler hands a kernel that does not gather as a plain lhs (src/scheduler/gemm.ts). The
// predicate is checked against the normative im2col: where it names a form, im2col returns the input's
// bytes unchanged; the geometries one step away from each form (a stride, a padding, a dilation, a
// smaller filter) are not the input.

import { describe, expect, it } from 'vitest';
import { im2col, type PatchGeometry, patchesAreInput } from '../../src/pack/patches.ts';

const base = (g: Partial<PatchGeometry>): PatchGeometry => ({
  ...{ batch: 2, height: 3, width: 4, channels: 5, filterHeight: 1, filterWidth: 1 },
  ...{ strideHeight: 1, strideWidth: 1, dilationHeight: 1, dilationWidth: 1, padTop: 0, padLeft: 0 },
  ...{ outHeight: 3, outWidth: 4 },
  ...g,
});

describe('patchesAreInput', () => {
  const input = Uint8Array.from({ length: 2 * 3 * 4 * 5 }, (_, i) => (i * 37 + 1) & 0xff);
  it.each([
    ['a 1x1 filter at stride 1', base({}), 'pixels'],
    ['a 1x1 filter at dilation 2 (no effect on one tap)', base({ dilationHeight: 2, dilationWidth: 2 }), 'pixels'],
    ['a filter the size of the image', base({ filterHeight: 3, filterWidth: 4, outHeight: 1, outWidth: 1 }), 'images'],
    [
      '... at stride 2 (one position)',
      base({ filterHeight: 3, filterWidth: 4, strideHeight: 2, strideWidth: 2, outHeight: 1, outWidth: 1 }),
      'images',
    ],
  ] as const)('%s: %s, and im2col is the input', (_, g, form) => {
    expect(patchesAreInput(g)).toBe(form);
    expect(Array.from(im2col(input, g, 9))).toEqual(Array.from(input));
  });
  it.each([
    ['a 1x1 filter at stride 2', base({ strideHeight: 2, strideWidth: 2, outHeight: 2, outWidth: 2 })],
    ['a 1x1 filter with padding', base({ padTop: 1, outHeight: 5 })],
    ['a 3x3 filter, VALID', base({ filterHeight: 3, filterWidth: 3, outHeight: 1, outWidth: 2 })],
    ['a filter the size of the image, padded', base({ filterHeight: 3, filterWidth: 4, padTop: 1, padLeft: 1, outHeight: 1, outWidth: 1 })],
    ['a filter the size of the image, dilated', base({ filterHeight: 3, filterWidth: 4, dilationHeight: 2, outHeight: 1, outWidth: 1 })],
    ['... dilated in width only', base({ filterHeight: 3, filterWidth: 4, dilationWidth: 2, outHeight: 1, outWidth: 1 })],
    ['... padded on the left only', base({ filterHeight: 3, filterWidth: 4, padLeft: 1, outHeight: 1, outWidth: 1 })],
  ] as const)('%s: null', (_, g) => {
    expect(patchesAreInput(g)).toBeNull();
  });
});
