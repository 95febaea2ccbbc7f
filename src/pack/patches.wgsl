// patches.wgsl: the PACK stage (PACK -> gemm -> output) of a convolution's lhs, read straight from the
// NHWC input: implicit im2col, with no patch matrix in memory. Packed row m is the patch of output pixel
// (b, oh, ow), m = (b * outH + oh) * outW + ow, and its k = (kh * KW + kw) * C + c, the filter's OHWI
// order, holds input[b, oh * strideH - padTop + kh * dilationH, ow * strideW - padLeft + kw * dilationW, c]
// (pixels pixelStride bytes apart: C for a dense input, the row stride of a GPU matrix [B*H*W, C]),
// or the input zero point where that lies in the padding (TFLite's convention, src/layers/layers.ts
// conv2d). Written in the 'u8k4-*' formats of pack.wgsl (src/pack/formats.ts): 4 consecutive k per u32,
// K zero-padded to depthWords * 4, int8 mapped into the uint8 domain (byte ^ 0x80), with the row sums of
// the four-term expansion (src/types.ts) computed in the same pass (./row-sum.wgsl). One workgroup per
// packed row. Where C and the pixel stride are multiples of 4, a packed word is four channels of one tap:
// one aligned u32 of the input, read whole (patchWord); otherwise byte by byte (patchValue).

override WORKGROUP_SIZE: u32 = 64u;

struct PatchParams {
  outerRows: u32,       // rows of this dispatch
  outerBase: u32,       // first row of this dispatch (the packed binding starts there)
  workgroupBase: u32,   // first row of this dispatch's flattened workgroup grid
  depth: u32,           // K = KH * KW * C
  depthWords: u32,      // u32 words per packed row: padded K / 4
  H: u32,
  W: u32,
  C: u32,
  KW: u32,
  outH: u32,
  outW: u32,
  strideH: u32,
  strideW: u32,
  dilationH: u32,
  dilationW: u32,
  padTop: u32,
  padLeft: u32,
  signFlip: u32,        // 0x80 for int8 input, 0 for uint8
  padValue: u32,        // the input zero point in the uint8 domain: what a padded position holds
  pixelStride: u32,     // bytes from one input pixel to the next: C, or a GPU matrix's row stride
}

@group(0) @binding(0) var<uniform> params: PatchParams;
@group(0) @binding(1) var<storage, read> src: array<u32>;
@group(0) @binding(2) var<storage, read_write> packed: array<u32>;
@group(0) @binding(3) var<storage, read_write> sums: array<i32>;

/** The input pixel under tap (kh, kw) of output pixel (b, oh, ow): its first byte in src, or -1 in the padding. */
fn tapPixel(b: u32, oh: u32, ow: u32, kh: u32, kw: u32) -> i32 {
  let ih = i32(oh * params.strideH + kh * params.dilationH) - i32(params.padTop);
  let iw = i32(ow * params.strideW + kw * params.dilationW) - i32(params.padLeft);
  if (ih < 0 || ih >= i32(params.H) || iw < 0 || iw >= i32(params.W)) {
    return -1;
  }
  return i32(((b * params.H + u32(ih)) * params.W + u32(iw)) * params.pixelStride);
}

/** The uint8-domain value at k of the patch of output pixel (b, oh, ow). */
fn patchValue(b: u32, oh: u32, ow: u32, k: u32) -> u32 {
  let tap = k / params.C;
  let pixel = tapPixel(b, oh, ow, tap / params.KW, tap % params.KW);
  if (pixel < 0) {
    return params.padValue;
  }
  let index = u32(pixel) + k % params.C;
  return ((src[index >> 2u] >> ((index & 3u) * 8u)) & 0xffu) ^ params.signFlip;
}

/**
 * The packed word of k = 4w .. 4w + 3 where C and pixelStride are multiples of 4: four channels of one
 * tap, one aligned u32 of the input (or four padding values).
 */
fn patchWord(b: u32, oh: u32, ow: u32, w: u32) -> u32 {
  let k = w * 4u;
  let tap = k / params.C;
  let pixel = tapPixel(b, oh, ow, tap / params.KW, tap % params.KW);
  if (pixel < 0) {
    return params.padValue * 0x01010101u;
  }
  return src[(u32(pixel) + k % params.C) >> 2u] ^ (params.signFlip * 0x01010101u);
}

@compute @workgroup_size(WORKGROUP_SIZE)
fn packPatches(
  @builtin(workgroup_id) wid: vec3<u32>,
  @builtin(num_workgroups) nwg: vec3<u32>,
  @builtin(local_invocation_index) lid: u32,
) {
  let row = params.workgroupBase + wid.x + wid.y * nwg.x;
  if (row >= params.outerRows) {
    return; // uniform across the workgroup, so the barriers below stay uniform
  }
  let m = params.outerBase + row;
  let ow = m % params.outW;
  let oh = (m / params.outW) % params.outH;
  let b = m / (params.outW * params.outH);
  let aligned = params.C % 4u == 0u && params.pixelStride % 4u == 0u; // then no word straddles two taps
  var sum = 0u;
  for (var w = lid; w < params.depthWords; w += WORKGROUP_SIZE) {
    var word = 0u;
    if (aligned) {
      if (w * 4u < params.depth) {
        word = patchWord(b, oh, ow, w); // past the depth: the zero padding of the format
      }
    } else {
      for (var j = 0u; j < 4u; j++) {
        let k = w * 4u + j;
        if (k < params.depth) {
          word |= patchValue(b, oh, ow, k) << (8u * j);
        }
      }
    }
    packed[row * params.depthWords + w] = word;
    sum += (word & 0xffu) + ((word >> 8u) & 0xffu) + ((word >> 16u) & 0xffu) + (word >> 24u);
  }
  let total = workgroupSum(lid, sum);
  if (lid == 0u) {
    sums[m] = bitcast<i32>(total);
  }
}
