// Test-only entry point for src/wgsl/float32.wgsl and the 'double-up' multiplier of fixedpoint.wgsl
// (concatenated after them): evaluates one function, picked by OP, on every element, so that
// test/gpu/float32.test.ts can compare it bit for bit with the BigInt oracle.
// 0 requantizeFloat32(a, b = scale bits, c = zero point); 1 multiplyByQuantizedMultiplierDoubleUp(a, b, c)

@group(0) @binding(0) var<storage, read> inA: array<i32>;
@group(0) @binding(1) var<storage, read> inB: array<i32>;
@group(0) @binding(2) var<storage, read> inC: array<i32>;
@group(0) @binding(3) var<storage, read_write> outV: array<i32>;

override OP: u32 = 0u;

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {
  let i = gid.x + gid.y * groups.x * 64u;
  if (i >= arrayLength(&inA)) {
    return;
  }
  switch OP {
    case 0u: { outV[i] = requantizeFloat32(inA[i], inB[i], inC[i]); }
    default: { outV[i] = multiplyByQuantizedMultiplierDoubleUp(inA[i], inB[i], inC[i]); }
  }
}
