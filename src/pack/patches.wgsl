// patches.wgsl: the PACK stage (PACK -> gemm -> output) of a convolution's lhs, read straight from the
// NHWC input: implicit im2col, with no patch matrix in memory. Packed row m is the patch of output pixel
// (b, oh, ow), m = (b * outH + oh) * outW + ow, and its k = (kh * KW + kw) * C + c, the filter's OHWI
// order, holds input[b, oh * strideH - padTop + kh * dilationH, ow * strideW - padLeft + kw * dilationW, c]
// (pixels pixelStride bytes apart: C for a dense input, the row stride of a GPU matrix [B*H*W, C]),
// or the input zero point where that lies in the padding (TFLite's convention, src/layers/layers.ts
// conv2d). Written in the 'u8k4-*' formats of pack.wgsl (src/pack/formats.ts): 4 consecutive k per u32,
// K zero-padded to depthWords * 4, int8 mapped into the uint8 domain (byte ^ 0x80), with the row sums of
// the four-term expansion (src/types.ts) computed in the same pass (./row-sum.wgsl). One workgroup per packed row.

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

/** The uint8-domain value at k of the patch of output pixel (b, oh, ow). */
fn patchValue(b: u32, oh: u32, ow: u32, k: u32) -> u32 {
  let c = k % params.C;
  let kw = (k / params.C) % params.KW;
  let kh = k / (params.C * params.KW);
  let ih = i32(oh * params.strideH + kh * params.dilationH) - i32(params.padTop);
  let iw = i32(ow * params.strideW + kw * params.dilationW) - i32(params.padLeft);
  if (ih < 0 || ih >= i32(params.H) || iw < 0 || iw >= i32(params.W)) {
    return params.padValue;
  }
  let index = ((b * params.H + u32(ih)) * params.W + u32(iw)) * params.pixelStride + c;
  return ((src[index >> 2u] >> ((index & 3u) * 8u)) & 0xffu) ^ params.signFlip;
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
  var sum = 0u;
  for (var w = lid; w < params.depthWords; w += WORKGROUP_SIZE) {
    var word = 0u;
    for (var j = 0u; j < 4u; j++) {
      let k = w * 4u + j;
      if (k < params.depth) {
        let v = patchValue(b, oh, ow, k);
        word |= v << (8u * j);
        sum += v;
      }
    }
    packed[row * params.depthWords + w] = word;
  }
  let total = workgroupSum(lid, sum);
  if (lid == 0u) {
    sums[m] = bitcast<i32>(total);
  }
}
