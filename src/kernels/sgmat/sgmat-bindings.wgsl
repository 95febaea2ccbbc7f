// sgmat-bindings.wgsl: the declarations of the subgroup-matrix kernel (./sgmat.wgsl): its constants and
// its staging buffer (TileParams and the operand bindings: ../tile.wgsl). They are a file of their own
// because they are what the host code reflects (src/gpu/reflect.ts), and the reflection parser does not
// read subgroup-matrix syntax; the kernel's source is enable + fragment constants (./config.ts) +
// libraries + ../tile.wgsl + this file + sgmat.wgsl. StageWord (u32 for u8 fragments, i32 for i8) comes
// from the fragment constants; the reflected declarations get it from config.ts's reflection alias.

const KSTEP: u32 = 64u;          // bytes of k per step (a multiple of every fragment K this kernel takes)
const ROW_BYTES: u32 = 80u;      // padded row of a staged tile (a multiple of 16)
const ROW_WORDS: u32 = ROW_BYTES / 4u;
const TILE_WORDS: u32 = 64u * ROW_WORDS; // one staged 64-row operand tile
const BUFFER_WORDS: u32 = 2u * TILE_WORDS; // lhs tile, then rhs tile
const OUT_STRIDE: u32 = 64u;     // elements per row of the staged 64 x 64 result


// Two staging buffers (lhs tile then rhs tile each) during the k loop; the 64 x 64 raw sums after it.
var<workgroup> stage: array<StageWord, 2u * BUFFER_WORDS>;
