// Test-only entry point for shaders/fixedpoint.wgsl (concatenated after it): evaluates one function,
// picked by the override constant OP, on every element of the input arrays, so that
// test/gpu/fixedpoint.test.ts can compare each function bit for bit with src/quant on the CPU.
// Element i reads inA[i], inB[i], inC[i]; the OPs name which of them they use. One invocation per
// element, 64 per workgroup, the grid possibly 2-D (x * y workgroups) for large inputs.

@group(0) @binding(0) var<storage, read> inA: array<i32>;
@group(0) @binding(1) var<storage, read> inB: array<i32>;
@group(0) @binding(2) var<storage, read> inC: array<i32>;
@group(0) @binding(3) var<storage, read_write> outV: array<i32>;

// 0 mulWide(a, b) -> outV[2i] = lo, outV[2i+1] = hi
// 1 saturatingRoundingDoublingHighMul(a, b)
// 2 roundingDivideByPOT(a, u32(b))
// 3 saturatingLeftShift(a, u32(b))
// 4 multiplyByQuantizedMultiplierDouble(a, b, c)
// 5 multiplyByQuantizedMultiplierSingle(a, b, c)
// 6 roundingHalfSum(a, b)
// 7 fixedPointTanhF3(a)
// 8 tanhStage(a, params): b = index of a 9-int TanhParams record in inC
override OP: u32 = 0u;

fn loadTanhParams(k: u32) -> TanhParams {
  let o = 9u * k;
  return TanhParams(inC[o], inC[o + 1u], inC[o + 2u], inC[o + 3u], inC[o + 4u], inC[o + 5u], inC[o + 6u], inC[o + 7u], inC[o + 8u]);
}

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {
  let i = gid.x + gid.y * groups.x * 64u;
  if (i >= arrayLength(&inA)) {
    return;
  }
  let a = inA[i];
  let b = inB[min(i, arrayLength(&inB) - 1u)];
  let c = inC[min(i, arrayLength(&inC) - 1u)];
  switch OP {
    case 0u: {
      let w = mulWide(a, b);
      outV[2u * i] = bitcast<i32>(w.x);
      outV[2u * i + 1u] = bitcast<i32>(w.y);
    }
    case 1u: { outV[i] = saturatingRoundingDoublingHighMul(a, b); }
    case 2u: { outV[i] = roundingDivideByPOT(a, u32(b)); }
    case 3u: { outV[i] = saturatingLeftShift(a, u32(b)); }
    case 4u: { outV[i] = multiplyByQuantizedMultiplierDouble(a, b, c); }
    case 5u: { outV[i] = multiplyByQuantizedMultiplierSingle(a, b, c); }
    case 6u: { outV[i] = roundingHalfSum(a, b); }
    case 7u: { outV[i] = fixedPointTanhF3(a); }
    case 8u: { outV[i] = tanhStage(a, loadTanhParams(u32(b))); }
    default: { outV[i] = 0; }
  }
}
