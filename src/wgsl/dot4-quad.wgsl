// dot4-quad.wgsl: one 4x4 quad of a dot4 GEMM's raw sums (pack -> GEMM -> output), the unit of the dot4
// kernels' register blocks (src/kernels/dot4-tile.wgsl, src/kernels/dot4-wide/gemm.wgsl) and of the
// shared epilogue's storeBlock: a Quad holds rows 0..3 of the quad, each a vec4 of its 4 columns.
// dot4Quad adds the products of one packed k word (4 k): the quad's 4 lhs words (one per row) by its 4 rhs
// words (one per column), 16 dot4s; raw sums wrap mod 2^32. The kernels keep their quads as named
// variables (q00, q01, q10, q11), never as an array indexed at run time, so that no index is computed and
// a compiler that does not unroll the loops around them still keeps them in registers. Composed after
// dot4-native.wgsl or dot4-emulated.wgsl (./source.ts dot4Library).

alias Quad = array<vec4<u32>, 4>;

fn dot4Quad(q: Quad, a: vec4<u32>, b: vec4<u32>) -> Quad {
  return Quad(
    q[0] + vec4<u32>(dot4(a.x, b.x), dot4(a.x, b.y), dot4(a.x, b.z), dot4(a.x, b.w)),
    q[1] + vec4<u32>(dot4(a.y, b.x), dot4(a.y, b.y), dot4(a.y, b.z), dot4(a.y, b.w)),
    q[2] + vec4<u32>(dot4(a.z, b.x), dot4(a.z, b.y), dot4(a.z, b.z), dot4(a.z, b.w)),
    q[3] + vec4<u32>(dot4(a.w, b.x), dot4(a.w, b.y), dot4(a.w, b.z), dot4(a.w, b.w)),
  );
}
