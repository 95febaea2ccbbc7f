// The heater's spin kernel (./heater.ts): outside pack -> gemm -> output, it only keeps the GPU busy
// while the tuner sets a configuration up, so that the clocks stay where the measured calls left them.
// Each invocation runs ROUNDS dependent integer multiply-adds (a linear congruential step) and writes
// its id only where the chain ends at 0, which the compiler cannot know: the loop stays.

override WORKGROUP_SIZE: u32 = 64;
override ROUNDS: u32 = 4096;

@group(0) @binding(0) var<storage, read_write> sink: array<u32>;

@compute @workgroup_size(WORKGROUP_SIZE)
fn main(@builtin(global_invocation_id) id: vec3<u32>) {
  var x = id.x;
  for (var i = 0u; i < ROUNDS; i++) {
    x = x * 1664525u + 1013904223u;
  }
  if (x == 0u) {
    sink[0] = id.x;
  }
}
