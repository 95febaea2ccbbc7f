// gemm.wgsl: the wide-tile dot4 GEMM kernel (pack -> GEMM -> output) for adapters without subgroup
// matrices. Each invocation owns an 8 x 8 block of dst (64 int32 accumulators, twice the arithmetic per
// loaded byte of the 4 x 4 blocks of ../dot4-tiled), a workgroup of THREADS_Y x THREADS_X invocations a
// TILE_M x TILE_N tile (128 x 128 by default, read from 'u8k4-r128' packs, so no bounds checks).
// k advances TILE_KW packed words (4 k each) per stage. Stages are double-buffered: every invocation
// loads its vec4 pieces of stage s + 1 into registers (coalesced: consecutive invocations read
// consecutive 16-byte pieces of a packed row) while the workgroup multiplies stage s from workgroup
// memory, then stores them into the other buffer; one barrier per stage. Staged tiles are k-major
// ([stage][kw][row / 4] as vec4), so an invocation reads its 8 rows (or columns) as two vec4s, and the
// 16 invocations of a row read 16 consecutive vec4s (no bank conflicts; lhs reads are broadcasts).
// The inner product is dot4 (dot4-native.wgsl or dot4-emulated.wgsl); raw sums wrap mod 2^32, and
// each 4 x 4 quarter of the block goes to the shared epilogue (storeBlock). Host code: ./kernel.ts.

override THREADS_X: u32 = 16u;   // invocations along N (8 columns each)
override THREADS_Y: u32 = 16u;   // invocations along M (8 rows each)
override TILE_KW: u32 = 8u;      // packed words per stage (32 k); a multiple of 4
override TILE_M: u32 = THREADS_Y * 8u;
override TILE_N: u32 = THREADS_X * 8u;
override THREADS: u32 = THREADS_X * THREADS_Y;
override PIECES: u32 = TILE_KW / 4u;                  // vec4 pieces per packed row per stage
override LOADS_A: u32 = TILE_M * PIECES / THREADS;    // vec4 loads per invocation per stage (1 or 2)
override LOADS_B: u32 = TILE_N * PIECES / THREADS;
override STAGE_A: u32 = TILE_KW * TILE_M / 4u;        // vec4s per staged lhs stage
override STAGE_B: u32 = TILE_KW * TILE_N / 4u;

var<workgroup> lhsTile: array<vec4<u32>, 2u * STAGE_A>;
var<workgroup> rhsTile: array<vec4<u32>, 2u * STAGE_B>;

/** Loads invocation t's pieces of stage s of the tile at `origin` into registers (coalesced). */
fn prefetch(regA: ptr<function, array<vec4<u32>, 2>>, regB: ptr<function, array<vec4<u32>, 2>>, origin: TileOrigin, rowVec4s: u32, s: u32, t: u32) {
  for (var i = 0u; i < LOADS_A; i++) {
    let e = t + i * THREADS;
    (*regA)[i] = lhsPacked[(origin.rowBase + e / PIECES) * rowVec4s + s * PIECES + e % PIECES];
  }
  for (var i = 0u; i < LOADS_B; i++) {
    let e = t + i * THREADS;
    (*regB)[i] = rhsPacked[(origin.colBase + e / PIECES) * rowVec4s + s * PIECES + e % PIECES];
  }
}

/** Stores prefetched pieces into stage buffer `stage`, k-major. */
fn stageStore(regA: ptr<function, array<vec4<u32>, 2>>, regB: ptr<function, array<vec4<u32>, 2>>, stage: u32, t: u32) {
  for (var i = 0u; i < LOADS_A; i++) {
    let e = t + i * THREADS;
    let row = e / PIECES;
    let q = e % PIECES;
    for (var j = 0u; j < 4u; j++) {
      lhsTile[stage * STAGE_A + (q * 4u + j) * (TILE_M / 4u) + row / 4u][row % 4u] = (*regA)[i][j];
    }
  }
  for (var i = 0u; i < LOADS_B; i++) {
    let e = t + i * THREADS;
    let col = e / PIECES;
    let q = e % PIECES;
    for (var j = 0u; j < 4u; j++) {
      rhsTile[stage * STAGE_B + (q * 4u + j) * (TILE_N / 4u) + col / 4u][col % 4u] = (*regB)[i][j];
    }
  }
}

@compute @workgroup_size(THREADS_X, THREADS_Y)
fn gemm(
  @builtin(workgroup_id) wid: vec3<u32>,
  @builtin(num_workgroups) nwg: vec3<u32>,
  @builtin(local_invocation_id) lid: vec3<u32>,
  @builtin(local_invocation_index) t: u32,
) {
  let origin = tileOrigin(wid, nwg, TILE_M, TILE_N);
  if (!origin.live) {
    return;
  }
  let rowVec4s = tile.depthWords / 4u;
  let stages = tile.depthWords / TILE_KW;

  var regA: array<vec4<u32>, 2>;
  var regB: array<vec4<u32>, 2>;
  prefetch(&regA, &regB, origin, rowVec4s, 0u, t);
  stageStore(&regA, &regB, 0u, t);
  workgroupBarrier();

  var acc: array<vec4<u32>, 16>; // acc[r * 2 + h]: row 8*lid.y + r, columns 8*lid.x + 4h .. + 3
  for (var s = 0u; s < stages; s++) {
    let more = s + 1u < stages;
    if (more) { // uniform
      prefetch(&regA, &regB, origin, rowVec4s, s + 1u, t);
    }
    let a0 = (s % 2u) * STAGE_A + lid.y * 2u;
    let b0 = (s % 2u) * STAGE_B + lid.x * 2u;
    for (var kw = 0u; kw < TILE_KW; kw++) {
      let aLo = lhsTile[a0 + kw * (TILE_M / 4u)];
      let aHi = lhsTile[a0 + kw * (TILE_M / 4u) + 1u];
      let bLo = rhsTile[b0 + kw * (TILE_N / 4u)];
      let bHi = rhsTile[b0 + kw * (TILE_N / 4u) + 1u];
      for (var r = 0u; r < 4u; r++) {
        acc[r * 2u] += vec4<u32>(dot4(aLo[r], bLo.x), dot4(aLo[r], bLo.y), dot4(aLo[r], bLo.z), dot4(aLo[r], bLo.w));
        acc[r * 2u + 1u] += vec4<u32>(dot4(aLo[r], bHi.x), dot4(aLo[r], bHi.y), dot4(aLo[r], bHi.z), dot4(aLo[r], bHi.w));
        acc[8u + r * 2u] += vec4<u32>(dot4(aHi[r], bLo.x), dot4(aHi[r], bLo.y), dot4(aHi[r], bLo.z), dot4(aHi[r], bLo.w));
        acc[9u + r * 2u] += vec4<u32>(dot4(aHi[r], bHi.x), dot4(aHi[r], bHi.y), dot4(aHi[r], bHi.z), dot4(aHi[r], bHi.w));
      }
    }
    if (more) {
      stageStore(&regA, &regB, (s + 1u) % 2u, t);
    }
    workgroupBarrier();
  }

  let m0 = tile.bandM + origin.rowBase + lid.y * 8u;
  let n0 = tile.bandN + origin.colBase + lid.x * 8u;
  for (var rh = 0u; rh < 2u; rh++) {
    for (var ch = 0u; ch < 2u; ch++) {
      let o = rh * 8u + ch;
      storeBlock(array<vec4<u32>, 4>(acc[o], acc[o + 2u], acc[o + 4u], acc[o + 6u]), m0 + rh * 4u, n0 + ch * 4u);
    }
  }
}
