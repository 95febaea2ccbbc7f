// dot4-block.wgsl: an invocation's register block in the dot4 GEMM kernels (pack -> GEMM -> output;
// ./dot4-tile.wgsl for dot4-tiled and split-K, ./dot4-wide/gemm.wgsl): THREAD_M x THREAD_N raw sums
// (generated constants, ./banded.ts dot4ThreadBlock) as QUADS_M x QUADS_N 4x4 quads, 1 or 2 each. A Quad
// holds rows 0..3 of a quad, each a vec4 of its 4 columns, as the shared epilogue's storeBlock takes it.
// In the k loop the kernels keep the quads as named variables (q00, q01, q10, q11; those outside QUADS_M x
// QUADS_N under constant conditions, so they cost nothing), never as an array indexed at run time, so
// that no index is computed and a compiler that does not unroll the loops around them still keeps them in
// registers; each step adds dot4Quad's products to them by value. A Block carries the four out of a
// function (./dot4-tile.wgsl); it is named `sums`, as the reflection parser (wgsl_reflect,
// src/gpu/reflect.ts) reads `block` as a keyword. Raw sums wrap mod 2^32. Composed after
// dot4-native.wgsl or dot4-emulated.wgsl (dot4).

const QUADS_M: u32 = THREAD_M / 4u;
const QUADS_N: u32 = THREAD_N / 4u;

alias Quad = array<vec4<u32>, 4>;

/** The four quads of a register block: q{m}{n} is quad m along M, n along N, in the kernel's strides. */
struct Block {
  q00: Quad,
  q01: Quad,
  q10: Quad,
  q11: Quad,
}

/** q plus the products of one packed k word (4 k): the quad's 4 lhs words (rows) by its 4 rhs words (columns). */
fn dot4Quad(q: Quad, a: vec4<u32>, b: vec4<u32>) -> Quad {
  return Quad(
    q[0] + vec4<u32>(dot4(a.x, b.x), dot4(a.x, b.y), dot4(a.x, b.z), dot4(a.x, b.w)),
    q[1] + vec4<u32>(dot4(a.y, b.x), dot4(a.y, b.y), dot4(a.y, b.z), dot4(a.y, b.w)),
    q[2] + vec4<u32>(dot4(a.z, b.x), dot4(a.z, b.y), dot4(a.z, b.z), dot4(a.z, b.w)),
    q[3] + vec4<u32>(dot4(a.w, b.x), dot4(a.w, b.y), dot4(a.w, b.z), dot4(a.w, b.w)),
  );
}
