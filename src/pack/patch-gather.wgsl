// patch-gather.wgsl: a convolution's patch matrix read straight from its NHWC input (implicit im2col),
// one packed word at a time, shared by the PACK stage (./patches.wgsl, which writes the packed rows and
// their sums) and by the GEMM kernels that gather their lhs tile themselves (src/kernels/dot4-lhs-patches.wgsl,
// src/kernels/sgmat/sgmat-lhs-patches.wgsl: pack -> GEMM -> output with no packed lhs in memory). Patch row m
// is output pixel (b, oh, ow), m = (b * outH + oh) * outW + ow; its k = (kh * KW + kw) * C + c, the
// filter's OHWI order, holds input[b, oh * strideH - padTop + kh * dilationH, ow * strideW - padLeft +
// kw * dilationW, c] (pixels pixelStride bytes apart: C for a dense input, the row stride of a GPU matrix
// [B*H*W, C]), or the input zero point where that lies in the padding (TFLite's convention,
// src/layers/layers.ts conv2d). Words are those of the 'u8k4-*' formats (src/pack/formats.ts): 4
// consecutive k per u32, zero past K and for rows past M, int8 mapped into the uint8 domain (byte ^
// 0x80). Where C and the pixel stride are multiples of 4, a word is four channels of one tap: one
// aligned u32 of the input, read whole; otherwise byte by byte. Where C is a multiple of 16, a 16-byte
// piece of a row is one tap too (patchPiece, for the subgroup-matrix kernel's staging). Host values: ./patches.ts
// patchGeometryValues.

struct PatchGeometry {
  rows: u32,         // M: batch * outH * outW patch rows
  depth: u32,        // K = KH * KW * C
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
  signFlip: u32,     // 0x80 for int8 input, 0 for uint8
  padValue: u32,     // the input zero point in the uint8 domain: what a padded position holds
  pixelStride: u32,  // bytes from one input pixel to the next: C, or a GPU matrix's row stride
}

@group(0) @binding(8) var<uniform> geometry: PatchGeometry;
@group(0) @binding(9) var<storage, read> patchInput: array<u32>;

/** Where patch row m's taps start: its image's first pixel and the top-left tap's position (padding included). */
struct PatchRow {
  live: bool,   // m < rows
  pixel0: u32,  // b * H * W
  ih0: i32,     // oh * strideH - padTop
  iw0: i32,     // ow * strideW - padLeft
}

fn patchRow(m: u32) -> PatchRow {
  let ow = m % geometry.outW;
  let oh = (m / geometry.outW) % geometry.outH;
  let b = m / (geometry.outW * geometry.outH);
  return PatchRow(
    m < geometry.rows,
    b * geometry.H * geometry.W,
    i32(oh * geometry.strideH) - i32(geometry.padTop),
    i32(ow * geometry.strideW) - i32(geometry.padLeft),
  );
}

/**
 * What tapPixel gives for a tap in the padding: no byte index of a binding (below 4 GiB). A byte index is
 * a u32, not an i32 with -1 for the padding, so that an input above 2 GiB is read, not taken for padding.
 */
const PADDING_TAP: u32 = 0xffffffffu;

/** The first byte in patchInput of tap `tap` (kh * KW + kw) of row r, or PADDING_TAP in the padding. */
fn tapPixel(r: PatchRow, tap: u32) -> u32 {
  let ih = r.ih0 + i32((tap / geometry.KW) * geometry.dilationH);
  let iw = r.iw0 + i32((tap % geometry.KW) * geometry.dilationW);
  if (ih < 0 || ih >= i32(geometry.H) || iw < 0 || iw >= i32(geometry.W)) {
    return PADDING_TAP;
  }
  return (r.pixel0 + u32(ih) * geometry.W + u32(iw)) * geometry.pixelStride;
}

/** The uint8-domain value at k (< depth) of row r. */
fn patchValue(r: PatchRow, k: u32) -> u32 {
  let tap = k / geometry.C;
  let pixel = tapPixel(r, tap);
  if (pixel == PADDING_TAP) {
    return geometry.padValue;
  }
  let index = pixel + k - tap * geometry.C;
  return ((patchInput[index >> 2u] >> ((index & 3u) * 8u)) & 0xffu) ^ geometry.signFlip;
}

/**
 * Packed words w0 .. w0 + 3 of row r (w0 a multiple of 4: one 16-byte piece of the 'u8k4-*' row): where C
 * is a multiple of 16 and the pixel stride of 4, the piece is 16 bytes of one tap (k = 4 w0 is a multiple
 * of 16, and K of 16, so the piece lies inside the depth or past it whole), found once and read as four
 * u32; otherwise word by word (patchWord).
 */
fn patchPiece(r: PatchRow, w0: u32) -> vec4<u32> {
  let k = w0 * 4u;
  if (r.live && k < geometry.depth && geometry.C % 16u == 0u && geometry.pixelStride % 4u == 0u) {
    let tap = k / geometry.C;
    let pixel = tapPixel(r, tap);
    if (pixel == PADDING_TAP) {
      return vec4<u32>(geometry.padValue * 0x01010101u);
    }
    let i = (pixel + k - tap * geometry.C) >> 2u;
    let flip = vec4<u32>(geometry.signFlip * 0x01010101u);
    return vec4<u32>(patchInput[i], patchInput[i + 1u], patchInput[i + 2u], patchInput[i + 3u]) ^ flip;
  }
  return vec4<u32>(patchWord(r, w0), patchWord(r, w0 + 1u), patchWord(r, w0 + 2u), patchWord(r, w0 + 3u));
}

/** The sum of a word's four bytes: what a gathered word adds to its row's sum. */
fn byteSum(w: u32) -> u32 {
  let pairs = (w & 0x00ff00ffu) + ((w >> 8u) & 0x00ff00ffu);
  return (pairs & 0xffffu) + (pairs >> 16u);
}

/** Packed word w (k = 4w .. 4w + 3) of row r: zeros past the depth and for a row past M. */
fn patchWord(r: PatchRow, w: u32) -> u32 {
  let k = w * 4u;
  if (!r.live || k >= geometry.depth) {
    return 0u;
  }
  if (geometry.C % 4u == 0u && geometry.pixelStride % 4u == 0u) {
    let tap = k / geometry.C; // no word straddles two taps
    let pixel = tapPixel(r, tap);
    if (pixel == PADDING_TAP) {
      return geometry.padValue * 0x01010101u;
    }
    return patchInput[(pixel + k - tap * geometry.C) >> 2u] ^ (geometry.signFlip * 0x01010101u);
  }
  var word = 0u;
  for (var j = 0u; j < 4u; j++) {
    if (k + j < geometry.depth) {
      word |= patchValue(r, k + j) << (8u * j);
    }
  }
  return word;
}
