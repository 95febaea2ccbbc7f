// The contract between the WebAssembly module and the TypeScript that drives it (pack -> gemm -> output):
// the problem lives in the module's linear memory as a context record of i32 words at address 0 (the
// shapes, the address and strides of every region, the zero-point terms, the output program), written
// by prepare.ts and read by the generated code (gen-gemm.ts, gen-output.ts). Every region
// starts at or above DATA_START and is 64-byte aligned.

/** Word index of each context field; its byte address is 4 * index. */
export const CTX = {
  M: 0,
  N: 1,
  K: 2,
  Kp: 3,
  Np: 4,
  Mp: 5,
  lhsPacked: 6,
  rhsPacked: 7,
  C: 8,
  // Operand sources: element (o, k) of the lhs (o = row) or rhs (o = column) is the byte at
  // src + o*so + k*sk; it is XORed with `xor` (0 or 0x80), then read signed when `sh` is 24, unsigned when 0.
  lhsSrc: 9,
  lhsSo: 10,
  lhsSk: 11,
  lhsXor: 12,
  lhsSh: 13,
  rhsSrc: 14,
  rhsSo: 15,
  rhsSk: 16,
  rhsXor: 17,
  rhsSh: 18,
  /** Sums of the packed values: per lhs row (length Mp) and per rhs column (length Np). */
  rowSums: 19,
  colSums: 20,
  /** The packed values are the operands minus cA, cB (0 for the 16-bit kernel, +-128 for relaxed SIMD). */
  cA: 21,
  cB: 22,
  /** Zero points in the packing domain, one per row (length Mp) and per column (length Np). */
  zL: 23,
  zR: 24,
  /** 1 when all three RoundingMultiplyByConstantFraction are the identity (8-bit operands). */
  identity: 25,
  /** RMBCF constants (intQuotient, scaledRemainingNumerator) of the xx, x1 and 1x fractions. */
  xxQ: 26,
  xxS: 27,
  x1Q: 28,
  x1S: 29,
  onexQ: 30,
  onexS: 31,
  /** The output program: `stages` records of STAGE_WORDS words at `program`. */
  program: 32,
  stages: 33,
  /** dst: element (m, n) at dst + (m*dstSm + n*dstSn) * dstSize. */
  dst: 34,
  dstSize: 35,
  dstSm: 36,
  dstSn: 37,
  /** rhs panels per cache block of the driver loop. */
  nBlock: 38,
} as const;

export const CTX_WORDS = 48;
/**
 * The counters of a split by panels over threads (gen-nibble.ts dyn_*): one per thread, the next panel
 * of its range, each in a cache line of its own (`stride` bytes) from byte `at`, below DATA_START;
 * `count` covers the pool's most threads (job.ts CONTROL.maxThreads, which makePlan caps T at).
 */
export const CHUNK_COUNTERS = { at: 4096, stride: 64, count: 256 } as const;
export const DATA_START = CHUNK_COUNTERS.at + CHUNK_COUNTERS.stride * CHUNK_COUNTERS.count;
export const NR = 8;

/** One output-program record: [op, mode, a, b, c, d, e, f], op a STAGE_OP code (src/problem/stages/stage.ts); a-f by op (stages.ts). */
export const STAGE_WORDS = 8;
/** Where a stage's operands are: one scalar each, a vector along rows (one value per row), or along columns. */
export const STAGE_MODE = { scalar: 0, row: 1, col: 2 } as const;

/** The kernels the module exports, by kind: micro-kernel rows and the k values per packed group. */
export const KERNELS = {
  i16: { mr: 4, kstep: 2, elem: 2 },
  relaxed: { mr: 6, kstep: 4, elem: 1 },
} as const;
export type WasmKernelKind = keyof typeof KERNELS;

/**
 * The shapes of the direct variant of the 16-bit kernel (gen-direct.ts), rows x columns of C per
 * micro-kernel, eight int32x4 accumulators each; the runtime takes the first whose rows cover M (or
 * the last). Its C rows are padded to a multiple of DIRECT_NP_ALIGN columns.
 */
export const DIRECT = [
  { mr: 1, nc: 32 },
  { mr: 2, nc: 16 },
  { mr: 4, nc: 8 },
] as const;
export const DIRECT_NP_ALIGN = 32;

/**
 * The shapes of the quad kernels over a prepacked rhs (gen-nibble.ts: 4-bit, or 8-bit byte lanes), rows x
 * panels of 8 columns per micro-kernel, eight int32x4 accumulators each; the runtime takes the first
 * whose rows cover M (or the last). Their prepacked rhs has its columns padded to a multiple of
 * QUAD_NP_ALIGN (a strip: every shape's column group) and k to a multiple of 4.
 */
export const QUAD_SHAPES = [
  { mr: 1, w: 4 },
  { mr: 2, w: 2 },
  { mr: 4, w: 1 },
] as const;
/**
 * Panels of 8 columns per strip of a prepacked quad rhs: a strip's quads lie one after the other, each
 * with its STRIP_PANELS panels' bytes for that quad side by side, so that a micro-kernel over several
 * panels reads one stream of memory, not one per panel (which the prefetcher follows worse: the one-row
 * byte-lane kernel takes 0.75-0.78x the time at 4096^2 on one thread so, measured on an AMD EPYC, Zen 4).
 */
export const STRIP_PANELS = 4;
export const QUAD_NP_ALIGN = 8 * STRIP_PANELS;
/**
 * The quad shape that reads the 8-bit byte lanes (gen-nibble.ts gemm_lane_1x4), for up to LANE_MAX_M
 * rows in tiles of one (prepare.ts): over the strips, one row twice reads faster than a 2x2 tile, which
 * takes half of each strip's quad per pass (measured on an AMD EPYC, Zen 4: 1.09-1.32 against
 * 1.72-2.14 ms at 2x4096^2, one thread).
 */
export const LANE = QUAD_SHAPES[0];
export const LANE_MAX_M = 2;
/** The 8-bit byte lanes: element k of a quad lies at byte QUAD_BYTE_ORDER[k & 3] of its column's four. */
export const QUAD_BYTE_ORDER = [0, 2, 1, 3] as const;
/**
 * The shape of the widening byte-lane kernel (gen-nibble.ts), which reads the same lanes for a few rows
 * more: 3 rows x 4 columns (half a panel) of C per micro-kernel, six int32x4 accumulators. It serves
 * the row counts that 3-row tiles pad less than the 16-bit kernel's 4-row ones (prepare.ts).
 */
export const WIDE = { mr: 3, nc: 4 } as const;
