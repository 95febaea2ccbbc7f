// float32.wgsl: XNNPACK's fp32 requantization (the requantizeFloat32 stage of src/types.ts) in integer
// arithmetic only, for the output stage (pack -> gemm -> OUTPUT). It does not trust a GPU's float
// conversion or rounding (WGSL leaves i32 -> f32 rounding and f32 multiplication's rounding to the
// implementation): each float32 rounding is done here on integer significands, ties to even, as IEEE
// does it. It computes bit for bit what requantizeFloat32 of src/quant/float32.ts computes with
// Math.fround; test/gpu/float32.test.ts checks both against an exact rational oracle on edge cases
// (|acc| > 2^24, ties at every step, subnormal and huge scales). Built on fixedpoint.wgsl (mulWide,
// add64, saturateToInt32).

/** v / 2^s rounded to nearest, ties to even, s in 1..31 (v unsigned). */
fn roundShiftRightEvenU32(v: u32, s: u32) -> u32 {
  let q = v >> s;
  let rem = v & ((1u << s) - 1u);
  let half = 1u << (s - 1u);
  return q + select(0u, 1u, rem > half || (rem == half && (q & 1u) == 1u));
}

/**
 * saturateToInt32(rint(f32(f32(x) * f32 scale)) + zeroPoint), scale given by its float32 bits (finite),
 * each rounding to nearest with ties to even, computed exactly in integers.
 */
fn requantizeFloat32(x: i32, scaleBits: i32, zeroPoint: i32) -> i32 {
  let sb = bitcast<u32>(scaleBits);
  let negative = (x < 0) != ((sb >> 31u) != 0u);
  // f32(x) = ma * 2^ea: |x| rounded to 24 significant bits (|INT32_MIN| = 2^31 fits a u32).
  var ma = select(bitcast<u32>(x), 0u - bitcast<u32>(x), x < 0);
  var ea = 0;
  if (ma >= 0x1000000u) {
    let sh = firstLeadingBit(ma) - 23u; // 1..8
    ma = roundShiftRightEvenU32(ma, sh); // up to 2^24
    ea = i32(sh);
  }
  // scale = ms * 2^es (subnormal: no implicit bit, exponent -149).
  let expBits = (sb >> 23u) & 0xffu;
  var ms = sb & 0x7fffffu;
  var es = -149;
  if (expBits != 0u) {
    ms = ms | 0x800000u;
    es = i32(expBits) - 150;
  }
  if (ma == 0u || ms == 0u) {
    return zeroPoint;
  }
  // The exact product ma * ms < 2^49, rounded to 24 significant bits: q * 2^e. (Where float32 would
  // round to a subnormal instead, the value is below 2^-126 and rint gives 0 either way.)
  let p = mulWide(i32(ma), i32(ms));
  var bits = firstLeadingBit(p.x) + 1u;
  if (p.y != 0u) {
    bits = 33u + firstLeadingBit(p.y);
  }
  var q = p.x;
  var e = ea + es;
  if (bits > 24u) {
    let d = bits - 24u; // 1..25
    let hi = shiftRight64(p, d).x;
    let rem = p.x & ((1u << d) - 1u);
    let half = 1u << (d - 1u);
    q = hi + select(0u, 1u, rem > half || (rem == half && (hi & 1u) == 1u)); // up to 2^24
    e = e + i32(d);
  }
  // rint(q * 2^e), ties to even, as a magnitude on 64 bits; 2^32 stands for anything >= 2^32.
  var mag = vec2<u32>(0u, 0u);
  if (e >= 0) {
    if (i32(firstLeadingBit(q)) + 1 + e > 32) {
      mag = vec2<u32>(0u, 1u);
    } else {
      mag = vec2<u32>(q << u32(e), 0u);
    }
  } else if (e >= -25) {
    mag = vec2<u32>(roundShiftRightEvenU32(q, u32(-e)), 0u);
  } // else q * 2^e <= 2^24 * 2^-26 < 1/2: 0
  if (negative) {
    mag = add64(vec2<u32>(~mag.x, ~mag.y), vec2<u32>(1u, 0u));
  }
  return saturateToInt32(add64(mag, int64From32(zeroPoint)));
}
