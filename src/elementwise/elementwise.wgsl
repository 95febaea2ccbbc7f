// elementwise.wgsl: the elementwise ops on WebGPU, one kernel for all of them: TFLite's
// quantized add, sub and mul (the builtin kernels' arithmetic, or XNNPACK's on kernel path 'xnnpack'),
// and the integer-only alignment of different scales (alignedAdd, alignedSub), for uint8 and int8 data
// with numpy broadcasting up to 4-D. The math is specified in src/problem/elementwise.ts
// (src/reference/elementwise.ts is the CPU reference); this computes the same bits, element by element,
// with the functions of fixedpoint.wgsl and float32.wgsl (concatenated in front of this file by ./gpu.ts).
// Per-call values come through the uniform struct ElementwiseParams, whose layout ./gpu.ts reads by
// reflection (one per band of the output, src/gpu/plan.ts); per-channel alignment data through a storage
// buffer. 8-bit data is packed 4 per u32, little-endian, in and out: each invocation computes 4
// consecutive output elements and writes one word, so no two invocations share a word.
//
// Broadcasting is by strides: output element o has 4-D coordinates (c0, c1, c2, c3) in the output
// shape padded with leading 1s; its inputs are at sum_k c_k * stride_k, with stride 0 on dimensions an
// input repeats (TFLite's NdArrayDesc).

struct ElementwiseParams {
  count: u32,          // output elements
  kind: u32,           // an ELEMENTWISE_* code: add/sub (TFLite), mul, aligned (alignedAdd/alignedSub), xnnpackAdd/xnnpackMul
  subtract: u32,       // 1 for sub and alignedSub
  signedData: u32,     // 1: int8, 0: uint8
  dim1: u32,           // 4-D output sizes (dim0 is implied by count)
  dim2: u32,
  dim3: u32,
  aStride0: u32,
  aStride1: u32,
  aStride2: u32,
  aStride3: u32,
  bStride0: u32,
  bStride1: u32,
  bStride2: u32,
  bStride3: u32,
  aChannelDim: i32,    // 4-D dimension whose coordinate is a's channel, or -1 (one channel)
  bChannelDim: i32,
  bChannelBase: u32,   // index of b's first (mantissa, shift) pair in `channels`
  zeroA: i32,
  zeroB: i32,
  zeroOut: i32,
  actMin: i32,
  actMax: i32,
  leftShift: u32,      // add/sub: 20
  input1Multiplier: i32,
  input1Shift: i32,
  input2Multiplier: i32,
  input2Shift: i32,
  outputMultiplier: i32,
  outputShift: i32,
  xnnpackAMultiplier: i32, // xnnpackAdd: XNNPACK's multipliers (b's negated for sub) and shift (12..30)
  xnnpackBMultiplier: i32,
  xnnpackShift: u32,
  xnnpackScaleBits: i32,   // xnnpackMul: the float32 bits of f32(f32(sa * sb) / so)
  wordBegin: u32,      // first output word of this band (outData is bound from it)
  bandWords: u32,      // output words of this band
  workgroupBase: u32,  // first workgroup of this dispatch's flattened grid
}

@group(0) @binding(0) var<uniform> params: ElementwiseParams;
@group(0) @binding(1) var<storage, read> aData: array<u32>;
@group(0) @binding(2) var<storage, read> bData: array<u32>;
// alignedAdd/alignedSub: (mantissa, shift) per channel, a's channels first, b's from bChannelBase.
@group(0) @binding(3) var<storage, read> channels: array<i32>;
@group(0) @binding(4) var<storage, read_write> outData: array<u32>;

override WORKGROUP_SIZE: u32 = 64u;

/** Byte i of packed 8-bit data, as the int8 or uint8 value it holds. */
fn loadA(i: u32) -> i32 {
  let byte = (aData[i >> 2u] >> ((i & 3u) * 8u)) & 0xffu;
  return select(i32(byte), (bitcast<i32>(byte << 24u)) >> 24u, params.signedData == 1u);
}

fn loadB(i: u32) -> i32 {
  let byte = (bData[i >> 2u] >> ((i & 3u) * 8u)) & 0xffu;
  return select(i32(byte), (bitcast<i32>(byte << 24u)) >> 24u, params.signedData == 1u);
}

/** The channel of an input at 4-D coordinates c: the coordinate along its axis, or 0. */
fn channelOf(dim: i32, c: vec4<u32>) -> u32 {
  if (dim < 0) {
    return 0u;
  }
  return c[dim];
}

/** One output element from its inputs (src/reference/elementwise.ts evalElement). */
fn evalElement(qa: i32, qb: i32, channelA: u32, channelB: u32) -> i32 {
  var raw: i32;
  if (params.kind == ELEMENTWISE_XNNPACK_ADD) {
    // XNNPACK's qs8/qu8 vadd: |sum| < 2^31, and >> on i32 is arithmetic (floor): ties toward +infinity.
    let sum = (1 << (params.xnnpackShift - 1u)) + params.xnnpackAMultiplier * (qa - params.zeroA) + params.xnnpackBMultiplier * (qb - params.zeroB);
    return clamp((sum >> params.xnnpackShift) + params.zeroOut, params.actMin, params.actMax);
  }
  if (params.kind == ELEMENTWISE_XNNPACK_MUL) {
    // XNNPACK's fp32 vmul: rint(f32(f32(product) * scale)) + zo, in integers (float32.wgsl).
    let product = (qa - params.zeroA) * (qb - params.zeroB);
    return clamp(requantizeFloat32(product, params.xnnpackScaleBits, params.zeroOut), params.actMin, params.actMax);
  }
  if (params.kind == ELEMENTWISE_ADD) {
    // TFLite add.h / sub.h: inputs scaled to 2^20 and rescaled to a common scale, then the output multiplier.
    let x = (qa - params.zeroA) * (1 << params.leftShift);
    let y = (qb - params.zeroB) * (1 << params.leftShift);
    let sx = multiplyByQuantizedMultiplierDouble(x, params.input1Multiplier, params.input1Shift);
    let sy = multiplyByQuantizedMultiplierDouble(y, params.input2Multiplier, params.input2Shift);
    let sum = select(sx + sy, sx - sy, params.subtract == 1u);
    raw = multiplyByQuantizedMultiplierDouble(sum, params.outputMultiplier, params.outputShift);
  } else if (params.kind == ELEMENTWISE_MUL) {
    // TFLite mul.h MulElementwise.
    raw = multiplyByQuantizedMultiplierDouble((qa - params.zeroA) * (qb - params.zeroB), params.outputMultiplier, params.outputShift);
  } else {
    // Alignment to F fractional bits: ((q - z) * m) << (F - frac), per channel; + and - wrap.
    let ia = 2u * channelA;
    let ib = params.bChannelBase + 2u * channelB;
    let ta = ((qa - params.zeroA) * channels[ia]) << u32(channels[ia + 1u]);
    let tb = ((qb - params.zeroB) * channels[ib]) << u32(channels[ib + 1u]);
    let sum = select(ta + tb, ta - tb, params.subtract == 1u);
    raw = multiplyByQuantizedMultiplierDouble(sum, params.outputMultiplier, params.outputShift);
  }
  return clamp(raw + params.zeroOut, params.actMin, params.actMax);
}

@compute @workgroup_size(WORKGROUP_SIZE)
fn elementwise(
  @builtin(workgroup_id) wid: vec3<u32>,
  @builtin(num_workgroups) nwg: vec3<u32>,
  @builtin(local_invocation_index) lid: u32,
) {
  let local = (params.workgroupBase + wid.x + wid.y * nwg.x) * WORKGROUP_SIZE + lid;
  if (local >= params.bandWords) {
    return;
  }
  let first = (params.wordBegin + local) * 4u;
  var packed = 0u;
  for (var j = 0u; j < 4u; j++) {
    let o = first + j;
    if (o >= params.count) {
      break;
    }
    var c: vec4<u32>;
    c.w = o % params.dim3;
    var t = o / params.dim3;
    c.z = t % params.dim2;
    t = t / params.dim2;
    c.y = t % params.dim1;
    c.x = t / params.dim1;
    let ia = c.x * params.aStride0 + c.y * params.aStride1 + c.z * params.aStride2 + c.w * params.aStride3;
    let ib = c.x * params.bStride0 + c.y * params.bStride1 + c.z * params.bStride2 + c.w * params.bStride3;
    let v = evalElement(loadA(ia), loadB(ib), channelOf(params.aChannelDim, c), channelOf(params.bChannelDim, c));
    packed = packed | ((bitcast<u32>(v) & 0xffu) << (8u * j));
  }
  outData[local] = packed;
}
