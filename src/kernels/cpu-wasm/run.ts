// One GEMM on the WebAssembly engine (engine.ts), the whole pack -> gemm -> output chain: the operands'
// bytes go into linear memory (less-than-8-bit operands requantized first, in TypeScript, with
// src/quant/lowbit.ts), the context record (layout.ts) describes the problem, then each thread packs
// its share of lhs tiles and rhs panels with their sums, and, once all have (a barrier: one job of
// pool.ts), runs micro-kernels and the output stage over its share of C; the dst bytes are copied out.
// For a few lhs rows and a row-major rhs the direct variant (gen-direct.ts) packs only the lhs, here,
// and reads the rhs where it lies. A pipeline with a tanh stage is finished in JavaScript from the tanh
// on (stages.ts).

import { type ConcreteRounding, requantize, resolveRounding, roundingOffset, unpackFractions } from '../../quant/lowbit.ts';
import { applyOutputPipeline } from '../../reference/pipeline.ts';
import { allocateDst, DTYPE_BYTES } from '../../spec/dst.ts';
import { channel, dstIndex, normalizeProblem, type NormalizedProblem } from '../../spec/problem.ts';
import { UINT8_DOMAIN_SHIFT, type GemmProblem, type GemmResult, type OperandData } from '../../types.ts';
import { allocateBlock, ensureMemory, freeBlock, heapEnd, type RelaxedMode, wasmSpinUs, type WasmEngine } from './engine.ts';
import {
  CHUNK_COUNTERS,
  CTX,
  CTX_WORDS,
  DATA_START,
  DIRECT,
  DIRECT_NP_ALIGN,
  KERNELS,
  LANE,
  LANE_MAX_M,
  QUAD_BYTE_ORDER,
  QUAD_NP_ALIGN,
  QUAD_SHAPES,
  STRIP_PANELS,
  WIDE,
  NR,
  type WasmKernelKind,
} from './layout.ts';
import { BARRIER_CALL, CONTROL, type Call } from './job.ts';
import { WorkerPool } from './pool.ts';
import { encodeProgram, type OutputProgram } from './stages.ts';

const roundUp = (x: number, m: number) => Math.ceil(x / m) * m;
/** Below this many multiply-adds per thread, fewer threads are faster (the hand-off and the wait cost more). */
const MIN_MACS_PER_THREAD = 1 << 20;
/**
 * Up to this many multiply-adds a repeated problem whose job is closed (makePlan) weighs its threads
 * against one thread (runPlan): a millisecond or less of kernel on one thread here, where waking a worker
 * (60-200 us) is a sizable part.
 * Above, threads pay whatever the wake costs, and the trial calls on one thread would only cost time
 * (1024^3 on one thread: twice as long).
 */
const ADAPTIVE_MAX_MACS = 1 << 26;
const L2_BLOCK_BYTES = 256 * 1024;
/** Up to this many lhs rows a row-major rhs is read where it lies (gen-direct.ts) rather than packed. */
const DIRECT_MAX_M = 8;
/**
 * A prepacked 8-bit rhs is read as its byte lanes (gen-nibble.ts) by up to LANE_MAX_M lhs rows, split
 * with a mask and shifts, no widening shuffle (about 1.4x the direct variant's speed at one row); from
 * there on as its 16-bit panels, except where the widening kernel's 3-row tiles (layout.ts WIDE) pad M
 * less than the panels' 4-row ones, up to WIDE_MAX_M rows: 3, 5, 6 and 9 rows, 10-25% faster than the
 * panels (13 and 14 rows even, 4 and 8 rows as fast or slower; measured on an AMD EPYC, Zen 4, in Node
 * 20 and 24).
 */
const WIDE_MAX_M = 9;
const widens = (M: number) => M > LANE_MAX_M && M <= WIDE_MAX_M && roundUp(M, WIDE.mr) < roundUp(M, KERNELS.i16.mr);
/** The direct kernel's C block (rows x panels of int32), kept in L1 for its output stage. */
const DIRECT_BLOCK_BYTES = 16 * 1024;
/** lhs - zL fits in 16 bits for 8-bit lhs values when |zL| is at most this. */
const DIRECT_MAX_ZERO_POINT = 32512;
/**
 * A prepacked rhs of the relaxed kernel is read by its few-row kernels (gen-relaxed-few.ts, the shapes
 * of QUAD_SHAPES, tiles of 4 rows from 3 rows on) rather than by the 6x8 micro-kernel up to 4 rows, and
 * up to RELAXED_FEW_MAX_M rows where 4-row tiles pad M less than 6-row ones (7, 8, 13 to 16 rows). The
 * 6x8 kernel spends its dot products on its padding rows too: at one row 10 of 12. Measured on an AMD
 * EPYC (Zen 4) under Node 24, the mode forced on 7-bit data (there the dot lowers to pmaddubsw,
 * pmaddwd, add), kernel time against the 6x8's: 1 row 0.18-0.23x, 2 rows 0.33-0.39x, 3 rows 0.63-0.87x,
 * 4 rows 0.49-0.67x, 7 and 8 rows 0.62-1.04x, 16 rows 0.75-1.15x; 5 rows 1.06-1.30x and 12 rows
 * 0.98-1.07x, which stay on the 6x8 (bench/results/2026-11-27-cpu-relaxed-few-ab.txt).
 */
const RELAXED_FEW_MAX_M = 16;
const relaxedFewRows = (M: number) => M <= 4 || (M <= RELAXED_FEW_MAX_M && roundUp(M, 4) < roundUp(M, KERNELS.relaxed.mr));

/** Bytes of linear memory one problem needs (the kernels refuse problems above 2 GiB). */
export function wasmBytesNeeded(M: number, N: number, K: number): number {
  const Mp = roundUp(M, 6);
  const Np = roundUp(N, NR);
  const Kp = roundUp(K, 4);
  return DATA_START + M * K + K * N + 2 * (Mp + Np) * Kp + 4 * Mp * Np + 4 * M * N + 16 * (Mp + Np) + 64 * 1024;
}

/**
 * requantize(src, bits, roundingOffset(rounding, i)) (src/quant/lowbit.ts) for every src in 0..255, at
 * [(i % 255) * 256 + src]: the offsets repeat every 255 elements (one offset for 'nearest', at [src]).
 * One table per bits and rounding, made on first use (24 at most, 64 KiB each).
 */
const requantizeTables = new Map<string, Uint8Array>();
function requantizeTable(bits: number, rounding: ConcreteRounding): Uint8Array {
  const key = `${bits} ${rounding}`;
  let t = requantizeTables.get(key);
  if (!t) {
    const periods = rounding === 'nearest' ? 1 : 255;
    t = new Uint8Array(256 * periods);
    for (let j = 0; j < periods; j++)
      for (let src = 0; src < 256; src++) t[256 * j + src] = requantize(src, bits, roundingOffset(rounding, j));
    requantizeTables.set(key, t);
  }
  return t;
}

/**
 * The operand as bytes in the uint8 domain requantized to `bits` (src/quant/lowbit.ts), same storage
 * order: a table lookup per element (requantizeTable), walked in storage order, the row-major index's
 * period (i % 255, which picks the rounding offset) kept as a counter.
 */
export function requantized(
  p: Pick<NormalizedProblem, 'lhs' | 'rhs' | 'bitDepth' | 'K' | 'lhsType' | 'rhsType'>,
  which: 'lhs' | 'rhs',
): Uint8Array {
  const op = p[which];
  const rounding = resolveRounding(p.bitDepth!.rounding, p.K);
  const table = requantizeTable(p.bitDepth![which], rounding);
  const period = rounding === 'nearest' ? 0 : 256; // table row stride: one row for 'nearest'
  const shift = (which === 'lhs' ? p.lhsType : p.rhsType) === 'int8' ? UINT8_DOMAIN_SHIFT : 0;
  const { data, rows, cols } = op;
  const out = new Uint8Array(data.length);
  if (op.order === 'row-major') {
    for (let i = 0, j = 0; i < data.length; i++) {
      out[i] = table[period * j + data[i] + shift];
      if (++j === 255) j = 0;
    }
    return out;
  }
  // Column-major: down a column the row-major index grows by cols.
  const step = cols % 255;
  for (let c = 0, s = 0; c < cols; c++) {
    for (let r = 0, j = c % 255; r < rows; r++, s++) {
      out[s] = table[period * j + data[s] + shift];
      j += step;
      if (j >= 255) j -= 255;
    }
  }
  return out;
}

/** An operand's elements as bytes, where they lie. */
export const bytes = (d: OperandData) => new Uint8Array(d.buffer, d.byteOffset, d.length);

/** Writes the context record (layout.ts CTX) at address 0: `fields`, every other word 0. */
export function writeContext(buf: ArrayBufferLike, fields: Partial<Record<keyof typeof CTX, number>>): void {
  const c = new Int32Array(buf, 0, CTX_WORDS).fill(0);
  for (const k in fields) c[CTX[k as keyof typeof CTX]] = fields[k as keyof typeof CTX] as number; // (no per-call arrays)
}

type DirectShape = (typeof DIRECT)[number];

/** An rhs packed once into kernel `kind`'s layout, in a block of linear memory (kernel.ts prepackCpu). */
export interface RhsBlock {
  kind: WasmKernelKind;
  /** The packed panels (Np/8 of them, Kp deep) and, after them, the Np column sums. */
  packed: number;
  sums: number;
  /**
   * The 16-bit kernel's: the rhs bytes for its few-row kernels, the 8-bit byte lanes of gen-nibble.ts
   * (panels of 8 columns, k in quads, QUAD_BYTE_ORDER; zero past K and N); else null.
   */
  raw: number | null;
  /**
   * A rhs of at most 4 bits (gen-nibble.ts): `packed` holds its panels two values per byte, `sums` the
   * column sums of the requantized values; it was requantized at `bits` with `rounding`, in the dot7
   * layout where `dot7` (gen-nibble.ts: the engine's relaxed dot is exact on 7-bit operands). Else null.
   */
  nibble: { bits: number; rounding: string; dot7: boolean } | null;
}

type QuadShape = (typeof QUAD_SHAPES)[number];

/** The quad kernels' shape for M rows: the first whose rows cover M, else the last (tiles of its rows). */
const quadShape = (M: number): QuadShape => QUAD_SHAPES.find((s) => s.mr >= M) ?? QUAD_SHAPES[QUAD_SHAPES.length - 1];

interface Prepared {
  /** The shape of the direct variant of the 16-bit kernel (gen-direct.ts; the rhs is not packed), or null. */
  direct: DirectShape | null;
  /** The shape of the 4-bit kernel (gen-nibble.ts; the rhs was prepacked at 4 bits), or null. */
  nibble: QuadShape | null;
  /** The 4-bit kernel is the relaxed-SIMD one (gen-nibble.ts dot7): its lhs tiles are bytes. */
  dot7: boolean;
  /**
   * The shape of the 8-bit byte-lane kernel (gen-nibble.ts), or null: where the direct variant would
   * serve and the rhs was prepacked (with `direct` set too: the lhs is packed as for the direct variant).
   */
  lane: QuadShape | null;
  /** The widening byte-lane kernel (gen-nibble.ts) serves: as `lane`, for the rows `widens` takes. */
  wide: boolean;
  /** The shape of the relaxed few-row kernel (gen-relaxed-few.ts) over a prepacked relaxed rhs, or null. */
  relaxedFew: QuadShape | null;
  /** The rhs was packed before (an RhsBlock): only the lhs is packed. */
  rhsReady: boolean;
  tiles: number;
  panels: number;
  dst: number;
  covered: number;
  /** The encoded output program (stages.ts), kept so that a repeated problem does not encode it again. */
  program: OutputProgram;
  /** heapEnd when it was written: the regions' addresses hold while the prepacked blocks stay. */
  heap: number;
  /** Writes a new lhs of the same problem (shape, types, zero points) into the regions prepare wrote. */
  loadLhs(buf: ArrayBufferLike, p: NormalizedProblem): void;
}

/**
 * The direct variant's shape for p (gen-direct.ts), or null where kernel `kind` packs the rhs: it takes
 * the 16-bit kernel with 8-bit operands, a row-major rhs, up to DIRECT_MAX_M rows, and lhs zero points
 * small enough for lhs - zL to fit in 16 bits. With a prepacked rhs (`prepacked`: its order is gone) a
 * shape here, up to LANE_MAX_M rows or where `widens`, means the byte lanes, the lhs packed the same way (prepare).
 */
function directShape(p: NormalizedProblem, kind: WasmKernelKind, prepacked: boolean): DirectShape | null {
  if (kind !== 'i16' || p.bitDepth || !(prepacked ? p.M <= LANE_MAX_M || widens(p.M) : p.M <= DIRECT_MAX_M)) return null;
  if (!prepacked && p.rhs.order !== 'row-major') return null;
  for (let m = 0; m < p.M; m++) if (Math.abs(channel(p.lhsZeroPoint, m)) > DIRECT_MAX_ZERO_POINT) return null;
  return DIRECT.find((d) => d.mr >= p.M) ?? DIRECT[DIRECT.length - 1];
}

/** How kernel `kind` packs rhs bytes: XORed with `xor`, read signed (sh 24) or not (sh 0); the packed values are rhs - c. */
export function rhsEncoding(kind: WasmKernelKind, signed: boolean): { xor: number; sh: number; c: number } {
  if (kind === 'relaxed') return signed ? { xor: 0, sh: 24, c: 0 } : { xor: 0x80, sh: 24, c: 128 };
  return { xor: 0, sh: signed ? 24 : 0, c: 0 };
}

/** Writes the problem into linear memory for kernel `kind`; returns what the dispatch needs. */
export function prepare(
  e: WasmEngine,
  p: NormalizedProblem,
  kind: WasmKernelKind,
  mode: RelaxedMode | null,
  rhsBlock: RhsBlock | null = null,
  direct = rhsBlock && rhsBlock.raw === null ? null : directShape(p, kind, !!rhsBlock),
  encoded: OutputProgram | null = null,
): Prepared {
  const { M, N, K } = p;
  const { kstep, elem } = KERNELS[kind];
  const nibble = rhsBlock?.nibble ? quadShape(M) : null;
  const dot7 = !!rhsBlock?.nibble?.dot7;
  const lane = direct && rhsBlock && M <= LANE_MAX_M ? LANE : null;
  const wide = !!direct && !!rhsBlock && !lane;
  const relaxedFew = kind === 'relaxed' && rhsBlock && !p.bitDepth && relaxedFewRows(M) ? quadShape(M) : null;
  const quad = nibble ?? lane ?? relaxedFew;
  /** Columns per column group of the few-row kernel over a prepacked rhs, or 0. */
  const nc = quad ? 8 * quad.w : wide ? WIDE.nc : 0;
  const mr = quad?.mr ?? (wide ? WIDE.mr : (direct?.mr ?? KERNELS[kind].mr));
  const Mp = roundUp(M, mr);
  const Np = roundUp(N, nc ? QUAD_NP_ALIGN : direct ? DIRECT_NP_ALIGN : NR);
  const Kp = roundUp(K, nc ? 4 : kstep);
  const lowbit = !!p.bitDepth;
  const rhsData = rhsBlock ? null : lowbit ? requantized(p, 'rhs') : bytes(p.rhs.data);
  const lhsSigned = !lowbit && p.lhsType === 'int8';
  const rhsSigned = !lowbit && p.rhsType === 'int8';
  // Operand encodings (layout.ts): the 16-bit kernel widens each type as it is; relaxed SIMD wants the
  // rhs signed and the lhs unsigned (usdot) or signed (sdot), so XOR 0x80 moves a byte across, and the
  // 128 it moved by becomes cA/cB in the four-term expansion.
  let lhsXor = 0,
    lhsSh = lhsSigned ? 24 : 0,
    cA = 0;
  const { xor: rhsXor, sh: rhsSh, c: cB } = rhsEncoding(kind, rhsSigned);
  if (kind === 'relaxed') {
    if (mode === 'usdot') {
      lhsSh = 0;
      if (lhsSigned) [lhsXor, cA] = [0x80, -128];
    } else {
      lhsSh = 24;
      if (!lhsSigned) [lhsXor, cA] = [0x80, 128];
    }
  }

  const heap = heapEnd(e);
  let at = heap; // past the prepacked operands' blocks
  const region = (n: number) => {
    const a = at;
    at = roundUp(at + n, 64);
    return a;
  };
  const r = {
    lhsSrc: region(M * K),
    // the direct kernel reads rows up to Kp (zero past K); a prepacked rhs's byte lanes
    rhsSrc: rhsBlock ? (rhsBlock.raw ?? 0) : region(Kp * N),
    // the few-row kernels' lhs is packed as i16 first, also where they then narrow it to bytes
    lhsPacked: region(Mp * Kp * (relaxedFew ? 2 : elem)),
    rhsPacked: rhsBlock ? rhsBlock.packed : region(direct ? 0 : Np * Kp * elem),
    rowSums: region(4 * Mp),
    colSums: rhsBlock ? rhsBlock.sums : region(4 * Np),
    zL: region(4 * Mp),
    zR: region(4 * Np),
    /** The few-row kernels' lhs pack subtracts this per row (pack_lhs_few). */
    sub: region(4 * Mp),
    C: region(4 * Mp * Np),
  };
  const program = encoded ?? encodeProgram(p, Mp, Np);
  const paramsAt = region(4 * program.paramWords);
  const programAt = region(4 * program.recordWords);
  const dstType = program.covered === p.pipeline.length ? p.dstType : 'int32';
  const dstSize = DTYPE_BYTES[dstType];
  const dst = region(M * N * dstSize);
  ensureMemory(e, at);

  const buf = e.memory.buffer;
  if (rhsData) new Uint8Array(buf, r.rhsSrc, K * N).set(rhsData);
  const shiftL = lowbit && p.lhsType === 'int8' ? UINT8_DOMAIN_SHIFT : 0;
  const shiftR = lowbit && p.rhsType === 'int8' ? UINT8_DOMAIN_SHIFT : 0;
  const zL = new Int32Array(buf, r.zL, Mp).fill(0);
  // The direct variant packs the lhs here with its zero points subtracted (which then are 0); the rhs stays as it is.
  const loadLhs = (b: ArrayBufferLike, q: NormalizedProblem) => {
    if (!direct && !nibble && !relaxedFew) {
      new Uint8Array(b, r.lhsSrc, M * K).set(lowbit ? requantized(q, 'lhs') : bytes(q.lhs.data));
      return;
    }
    // The few-row kernels' lhs, packed here as i16 (pack_lhs_few): the direct variant's lhs - zL (its zL
    // then 0), the 4-bit kernel's l' (requantized below 8 bits, else the value in the uint8 domain), the
    // relaxed few-row kernel's A' = A - cA (then bytes, as the 6x8 kernel's lhs: unsigned for usdot).
    const requantize = !!nibble && q.bitDepth!.lhs < 8;
    const signed = !requantize && q.lhsType === 'int8';
    new Uint8Array(b, r.lhsSrc, M * K).set(requantize ? requantized(q, 'lhs') : bytes(q.lhs.data));
    const sub = new Int32Array(b, r.sub, M);
    for (let m = 0; m < M; m++) sub[m] = direct ? channel(q.lhsZeroPoint, m) : relaxedFew ? cA : signed ? -UINT8_DOMAIN_SHIFT : 0;
    if (Mp > M || Kp > K) new Int16Array(b, r.lhsPacked, Mp * Kp).fill(0); // else the pack writes every value
    new Int32Array(b, r.rowSums, Mp).fill(0);
    const [so, sk] = q.lhs.order === 'row-major' ? [K, 1] : [1, M];
    e.exports.pack_lhs_few(r.lhsSrc, so, sk, signed ? 1 : 0, M, K, Kp, mr, nc ? 2 : 1, wide ? 1 : 0, r.lhsPacked, r.rowSums, r.sub);
    if (dot7) e.exports.narrow_lhs(r.lhsPacked, Mp * Kp, 128, 0); // l' - 128 as bytes, the row sums kept of l'
    if (relaxedFew) e.exports.narrow_lhs(r.lhsPacked, Mp * Kp, 0, mode === 'usdot' ? 1 : 0);
  };
  if (direct && rhsData) new Uint8Array(buf, r.rhsSrc + K * N, (Kp - K) * N).fill(0);
  loadLhs(buf, p);
  if (!direct) for (let m = 0; m < M; m++) zL[m] = (channel(p.lhsZeroPoint, m) + shiftL) | 0;
  const zR = new Int32Array(buf, r.zR, Np).fill(0);
  for (let n = 0; n < N; n++) zR[n] = (channel(p.rhsZeroPoint, n) + shiftR) | 0;
  program.write(new Int32Array(buf, paramsAt, program.paramWords), paramsAt, new Int32Array(buf, programAt, program.recordWords));

  const f = unpackFractions(p.bitDepth?.lhs ?? 8, p.bitDepth?.rhs ?? 8);
  const lhsRowMajor = p.lhs.order === 'row-major';
  const rhsRowMajor = p.rhs.order === 'row-major';
  const dstRowMajor = p.dstOrder === 'row-major';
  const fields: Partial<Record<keyof typeof CTX, number>> = {
    M,
    N,
    K,
    Kp,
    Np,
    Mp,
    lhsPacked: r.lhsPacked,
    rhsPacked: r.rhsPacked,
    C: r.C,
    lhsSrc: r.lhsSrc,
    lhsSo: lhsRowMajor ? K : 1,
    lhsSk: lhsRowMajor ? 1 : M,
    lhsXor,
    lhsSh,
    rhsSrc: r.rhsSrc,
    rhsSo: rhsRowMajor ? 1 : K,
    rhsSk: rhsRowMajor ? N : 1,
    rhsXor,
    rhsSh,
    rowSums: r.rowSums,
    colSums: r.colSums,
    cA,
    cB,
    zL: r.zL,
    zR: r.zR,
    identity: f.xx.identity && f.x1.identity && f.onex.identity ? 1 : 0,
    xxQ: f.xx.intQuotient,
    xxS: f.xx.scaledRemainingNumerator,
    x1Q: f.x1.intQuotient,
    x1S: f.x1.scaledRemainingNumerator,
    onexQ: f.onex.intQuotient,
    onexS: f.onex.scaledRemainingNumerator,
    program: programAt,
    stages: program.covered,
    dst,
    dstSize,
    dstSm: dstRowMajor ? N : 1,
    dstSn: dstRowMajor ? 1 : M,
    nBlock: nc
      ? Math.max(1, Math.floor(DIRECT_BLOCK_BYTES / (4 * Mp * nc)))
      : direct
        ? Math.max(1, Math.floor(DIRECT_BLOCK_BYTES / (4 * Mp * direct.nc)))
        : Math.max(1, Math.floor(L2_BLOCK_BYTES / (Kp * NR * elem))),
  };
  writeContext(buf, fields);
  return {
    direct,
    nibble,
    dot7,
    lane,
    wide,
    relaxedFew,
    rhsReady: !!rhsBlock && !direct,
    tiles: Mp / mr,
    panels: Np / (nc || direct?.nc || NR),
    dst,
    covered: program.covered,
    program,
    heap,
    loadLhs,
  };
}

/**
 * The block of a K x N 8-bit rhs packed for kernel `kind` (packRhsBlock): its panels' Kp and Np (the
 * relaxed kernel's columns padded to whole column groups of its few-row kernels, QUAD_NP_ALIGN columns,
 * gen-relaxed-few.ts), the bytes of the panels, of the panels and column sums, and in all (the 16-bit
 * kernel also keeps the byte lanes of its few-row kernels, gen-nibble.ts: k padded to 4, columns to
 * QUAD_NP_ALIGN, in strips).
 */
function rhsBlockLayout(K: number, N: number, kind: WasmKernelKind) {
  const { kstep, elem } = KERNELS[kind];
  const Kp = roundUp(K, kstep);
  const Np = roundUp(N, kind === 'relaxed' ? QUAD_NP_ALIGN : NR);
  const panelBytes = Np * Kp * elem;
  const packedBytes = panelBytes + 4 * Np;
  const rawBytes = kind === 'i16' ? roundUp(N, QUAD_NP_ALIGN) * roundUp(K, 4) : 0;
  return { Kp, Np, panelBytes, packedBytes, rawBytes, size: packedBytes + rawBytes };
}

/** Bytes of the block packRhsBlock makes for a K x N rhs and kernel `kind`. */
export const rhsBlockBytes = (K: number, N: number, kind: WasmKernelKind): number => rhsBlockLayout(K, N, kind).size;

/**
 * Packs p's 8-bit rhs for kernel `kind` into a new block of e's memory (engine.ts allocateBlock,
 * rhsBlockBytes long; prepackCpu's weights, and the self-check's): the panels (gen-pack.ts pack_rhs),
 * then the column sums, then for the 16-bit kernel the byte lanes.
 */
export function packRhsBlock(e: WasmEngine, p: NormalizedProblem, kind: WasmKernelKind): RhsBlock {
  const { rhs: op, rhsType: type, K, N } = p;
  const { Kp, Np, panelBytes, packedBytes, rawBytes, size } = rhsBlockLayout(K, N, kind);
  const at = allocateBlock(e, size);
  try {
    // The operand's bytes go past the heap, then pack_rhs writes the block (layout.ts CTX, gen-pack.ts).
    const src = heapEnd(e);
    ensureMemory(e, src + K * N);
    const buf = e.memory.buffer;
    const data = bytes(op.data);
    new Uint8Array(buf, src, K * N).set(data);
    const { xor, sh } = rhsEncoding(kind, type === 'int8');
    const rowMajor = op.order === 'row-major';
    forgetPlan(e);
    writeContext(buf, {
      N,
      K,
      Kp,
      Np,
      rhsSrc: src,
      rhsSo: rowMajor ? 1 : K,
      rhsSk: rowMajor ? N : 1,
      rhsXor: xor,
      rhsSh: sh,
      rhsPacked: at,
      colSums: at + panelBytes,
    });
    e.exports[`pack_rhs_${kind}`](0, Np / NR);
    const raw = rawBytes ? at + packedBytes : null;
    if (raw !== null) {
      // Column n's quad q in strip n >> 5 (K padded to 4, times 32 bytes), quad q (128 bytes), panel
      // (n >> 3) & 3 (32 bytes), half (n & 7) >> 2, lane n & 3. Walked in the operand's storage order, so
      // that it is read once, in sequence.
      const out = new Uint8Array(buf, raw, rawBytes).fill(0);
      const stripBytes = roundUp(K, 4) * 8 * STRIP_PANELS;
      const column = Int32Array.from(
        { length: N },
        (_, n) => (n >> 5) * stripBytes + ((n >> 3) & 3) * 32 + ((n & 7) >> 2) * 16 + (n & 3) * 4,
      );
      const quad = Int32Array.from({ length: K }, (_, k) => (k >> 2) * 32 * STRIP_PANELS + QUAD_BYTE_ORDER[k & 3]);
      if (rowMajor) {
        for (let k = 0, i = 0; k < K; k++) {
          const q = quad[k];
          for (let n = 0; n < N; n++, i++) out[column[n] + q] = data[i];
        }
      } else {
        for (let n = 0, i = 0; n < N; n++) {
          const c = column[n];
          for (let k = 0; k < K; k++, i++) out[c + quad[k]] = data[i];
        }
      }
    }
    return { kind, packed: at, sums: at + panelBytes, raw, nibble: null };
  } catch (x) {
    freeBlock(e, at); // a failed pack (the memory could not grow) leaves no block behind
    throw x;
  }
}

/** [start, end) of part i of n items split T ways. */
const part = (n: number, T: number, i: number): [number, number] => [Math.floor((n * i) / T), Math.floor((n * (i + 1)) / T)];

/** The exported driver of a few-row kernel (direct, byte lanes, 4-bit, relaxed few-row) that t takes, or null where it takes the packed panels. */
function fewRowsKernel(t: Prepared): string | null {
  if (t.nibble) return `gemm_nibble${t.dot7 ? '7' : ''}_${t.nibble.mr}x${t.nibble.w}`;
  if (t.lane) return `gemm_lane_${t.lane.mr}x${t.lane.w}`;
  if (t.wide) return `gemm_wide_${WIDE.mr}x${WIDE.nc}`;
  if (t.relaxedFew) return `gemm_relaxed_${t.relaxedFew.mr}x${t.relaxedFew.w}`;
  if (t.direct) return `gemm_direct_${t.direct.mr}x${t.direct.nc}`;
  return null;
}

/**
 * The split of a dyn_* driver over T threads (gen-nibble.ts): thread i runs range i of the panels, then
 * what is left of the others; `ranges` are the ranges' starts, which each call writes to the counters.
 */
function ranges(driver: string, t: Prepared, T: number): { pack: Call[][]; gemm: Call[][]; ranges: number[] } {
  const chunk = Math.max(1, Math.ceil(t.panels / (8 * T)));
  const chunks = Math.ceil(t.panels / chunk);
  return {
    pack: Array.from({ length: T }, () => []),
    gemm: Array.from({ length: T }, (_, i) => [[driver, 0, t.tiles, t.panels, chunk, i, T]]),
    ranges: Array.from({ length: T }, (_, j) => Math.floor((chunks * j) / T) * chunk),
  };
}

/**
 * The calls of each thread, phase by phase: pack (lhs tiles, rhs panels), then gemm + output; `ranges`
 * where every thread takes its work from the range counters (dyn_*), so that the threads present can
 * finish the job without the others (pool.ts run: an open job).
 */
export function plan(
  kind: WasmKernelKind,
  t: Prepared,
  T: number,
): { pre: Call[]; pack: Call[][]; gemm: Call[][]; ranges: number[] | null } {
  const pre: Call[] = [];
  const pack: Call[][] = [];
  const gemm: Call[][] = [];
  const few = fewRowsKernel(t);
  if (few) {
    // The few-row kernels pack nothing here (prepare packed the lhs; the rhs is read where it lies, or
    // was prepacked). One thread runs every panel; several run their own range of panels in chunks of
    // about an eighth of it, then take what is left of the others' (dyn_*, gen-nibble.ts), so that one
    // the OS runs late holds the others up by at most a chunk.
    if (T === 1) return { pre, pack: [[]], gemm: [[[few, 0, t.tiles, 0, t.panels]]], ranges: null };
    return { pre, ...ranges(`dyn_${few}`, t, T) };
  }
  // Split C along its longer side, so that each thread reads only its share of the larger operand (by
  // rows every thread reads the whole rhs: at 16x4096^2 twice 32 MiB of packed panels per call), unless
  // that side divides among the threads much less evenly than the other.
  const waste = (n: number) => (Math.ceil(n / T) * T) / n;
  const rowsLonger = t.tiles * KERNELS[kind].mr >= t.panels * NR;
  const [prefer, other] = rowsLonger ? [t.tiles, t.panels] : [t.panels, t.tiles];
  const byRows = waste(prefer) <= 1.25 * waste(other) ? rowsLonger : !rowsLonger;
  if (T > 1 && t.rhsReady && !byRows) {
    // A prepacked rhs split by panels: the calling thread packs the lhs before the job (a few rows: a
    // barrier would cost more), and the threads run their ranges of panels, then the rest (dyn_*).
    pre.push([`pack_lhs_${kind}`, 0, t.tiles]);
    return { pre, ...ranges(`dyn_gemm_${kind}`, t, T) };
  }
  for (let i = 0; i < T; i++) {
    pack.push([[`pack_lhs_${kind}`, ...part(t.tiles, T, i)]]);
    if (!t.rhsReady) pack[i].push([`pack_rhs_${kind}`, ...part(t.panels, T, i)]);
    gemm.push([byRows ? [`gemm_${kind}`, ...part(t.tiles, T, i), 0, t.panels] : [`gemm_${kind}`, 0, t.tiles, ...part(t.panels, T, i)]]);
  }
  return { pre, pack, gemm, ranges: null };
}

/**
 * How many runs went to one thread and to several (diagnostics: the browser test checks that threads
 * ran), and the last run's kernel time: its pack, gemm and output calls on every thread, hand-off
 * included, in ms (the call's overhead is its wall time minus this); its driver, the WebAssembly
 * function of its gemm stage (e.g. 'gemm_i16', 'gemm_direct_4x8', 'gemm_lane_1x4', 'gemm_wide_3x4', 'gemm_nibble_2x2', 'gemm_nibble7_1x4', 'gemm_relaxed_1x4').
 */
export const wasmRunStats = { singleThreaded: 0, multiThreaded: 0, lastKernelMs: 0, lastThreads: 0, lastDriver: '' };

/**
 * A GEMM's plan on an engine: its regions and context written by prepare, every thread's calls. A
 * repeated problem with a prepacked rhs runs its plan again (kernel.ts): only the new lhs is written
 * when the engine's memory still holds this plan, else prepare writes it all again (with the encoded
 * output program kept).
 */
export interface Plan {
  kind: WasmKernelKind;
  mode: RelaxedMode | null;
  rhsBlock: RhsBlock | null;
  t: Prepared;
  /** Threads, and each thread's calls: pack, a barrier where there is a pack phase, gemm + output. */
  T: number;
  lists: Call[][];
  /** Calls the calling thread runs before the others start (the lhs pack of a prepacked GEMM split by panels). */
  pre: Call[];
  /**
   * The starts of the threads' ranges of panels (dyn_*), written to the counters before each run; the
   * job is then open: a worker that wakes after the others have done it stays out (pool.ts run).
   */
  ranges: number[] | null;
  /**
   * A repeated problem's choice between its thread count and one thread, by measurement (runPlan): the
   * one-thread calls, and the kernel times of the last calls of each; null where the plan runs as made.
   */
  single: { lists: Call[][]; pre: Call[]; ranges: number[] | null; times: [number[], number[]]; calls: number; pick: 0 | 1 } | null;
}

/** The plan whose problem each engine's memory holds now (written by prepare), or none. */
const written = new WeakMap<WasmEngine, Plan>();

/** Something other than a plan wrote the context (kernel.ts prepackCpu): no plan may assume it. */
export function forgetPlan(e: WasmEngine): void {
  written.delete(e);
}

/**
 * Writes p into e's memory and plans it: on `threads` threads when given (as many as the engine can:
 * one without a shared memory), else on up to `defaultThreads`, fewer for small problems.
 */
export function makePlan(
  e: WasmEngine,
  p: NormalizedProblem,
  kind: WasmKernelKind,
  threads: number | undefined,
  defaultThreads = 1,
  mode = e.relaxed,
  rhsBlock: RhsBlock | null = null,
  adaptive = false,
): Plan {
  const { M, N, K } = p;
  const t = prepare(e, p, kind, mode, rhsBlock);
  const wanted = threads ?? Math.min(defaultThreads, Math.floor((M * N * K) / MIN_MACS_PER_THREAD));
  const T = e.shared ? Math.max(1, Math.min(wanted, CONTROL.maxThreads)) : 1;
  const calls = (n: number) => {
    const { pre, pack, gemm, ranges } = plan(kind, t, n);
    // Threads meet once between the pack and gemm phases; not where nothing is packed (the few-row kernels).
    const barrier: Call[] = n > 1 && pack.some((c) => c.length) ? [[BARRIER_CALL]] : [];
    return { pre, lists: pack.map((c, i) => [...c, ...barrier, ...gemm[i]]), ranges };
  };
  // An open job (ranges) never waits for a worker that is late: the calling thread starts at once and
  // does what the others do not, so it is not weighed against one thread.
  const threaded = calls(T);
  const single =
    adaptive && T > 1 && !threaded.ranges && M * N * K <= ADAPTIVE_MAX_MACS
      ? { ...calls(1), times: [[], []] as [number[], number[]], calls: 0, pick: 0 as const }
      : null;
  const result: Plan = { kind, mode, rhsBlock, t, T, ...threaded, single };
  written.set(e, result);
  return result;
}

/**
 * Runs p on engine e with kernel `kind`: on `threads` threads when given (as many as the engine can:
 * one without a shared memory), else on up to `defaultThreads`, fewer for small problems.
 */
export function runOnEngine(
  e: WasmEngine,
  p: NormalizedProblem,
  kind: WasmKernelKind,
  threads: number | undefined,
  defaultThreads = 1,
  mode = e.relaxed,
  rhsBlock: RhsBlock | null = null,
): Promise<GemmResult> {
  return runPlan(e, makePlan(e, p, kind, threads, defaultThreads, mode, rhsBlock), p, true);
}

/** The calls in which a repeated problem tries both its thread count and one thread before it picks (runPlan). */
const SINGLE_TRIAL_CALLS = 16;

/**
 * Starts the engine's workers for `threads` threads (pool.ts), where it has a shared memory, and resolves
 * once they are ready; a worker that fails to start is reported by the next GEMM that needs it.
 */
export async function startWorkers(e: WasmEngine, threads: number): Promise<void> {
  if (!e.shared || threads < 2) return;
  await poolOf(e)
    .ensure(threads - 1)
    .catch(() => undefined);
}

/** The engine's worker pool, made on first use (by the first prepackCpu, or the first multi-threaded run). */
const poolOf = (e: WasmEngine): WorkerPool => (e.pool ??= new WorkerPool(e.module, e.memory, e.exports));

/** Runs plan `pl` for p (its problem, with this call's lhs); `fresh`: prepare just wrote it. */
export async function runPlan(e: WasmEngine, pl: Plan, p: NormalizedProblem, fresh = false): Promise<GemmResult> {
  const { M, N } = p;
  if (!fresh) {
    if (written.get(e) === pl && heapEnd(e) === pl.t.heap) pl.t.loadLhs(e.memory.buffer, p);
    else {
      pl.t = prepare(e, p, pl.kind, pl.mode, pl.rhsBlock, pl.t.direct, pl.t.program);
      written.set(e, pl);
    }
  }
  const { t, single } = pl;
  // A repeated problem (pl.single) weighs its threads (0) against one thread (1) by kernel time, in pairs
  // of calls of which only the second is timed: the first wakes the workers (asleep once their spin has
  // run out: 60-200 us on a virtual machine) and, early on, lets the engine optimize the code. Its first
  // 16 calls alternate pairs; then it runs the one whose fastest timed call of the last five is faster,
  // and every 64 calls a pair of the other, so that the choice follows the machine (a core busy with
  // other work makes threads a loss). Timing single calls of the other choice would find its workers
  // asleep every time and keep a process on one thread for good (measured: 0.38-0.45 ms against 0.18
  // ms at 1x4096^2, 4-bit, two threads). The fastest, not the median: other work only slows calls down.
  let choice: 0 | 1 = 0;
  let timed = true;
  if (single) {
    const n = single.calls++;
    if (n < SINGLE_TRIAL_CALLS) [choice, timed] = [((n >> 1) & 1) as 0 | 1, (n & 1) === 1];
    else if (n % 64 < 2) [choice, timed] = [(1 - single.pick) as 0 | 1, n % 64 === 1];
    else choice = single.pick;
  }
  const { pre, lists, ranges } = choice === 1 && single ? single : pl;
  const T = lists.length;
  if (ranges) {
    const counters = new Int32Array(e.memory.buffer, CHUNK_COUNTERS.at, (CHUNK_COUNTERS.stride / 4) * ranges.length);
    for (const [j, start] of ranges.entries()) Atomics.store(counters, (CHUNK_COUNTERS.stride / 4) * j, start);
  }
  const t0 = performance.now();
  for (const [name, ...args] of pre) e.exports[name](...args);
  if (T === 1) {
    wasmRunStats.singleThreaded++;
    for (const [name, ...args] of lists[0]) e.exports[name](...args);
  } else {
    wasmRunStats.multiThreaded++;
    const pool = poolOf(e);
    try {
      await pool.run(lists, wasmSpinUs(), ranges !== null);
    } finally {
      if (pool.isLost) {
        pool.close();
        e.pool = null; // the next GEMM starts a new pool
      }
    }
  }
  wasmRunStats.lastKernelMs = performance.now() - t0;
  wasmRunStats.lastThreads = T;
  wasmRunStats.lastDriver = fewRowsKernel(t) ?? `gemm_${pl.kind}`;
  if (single && timed) {
    const times = single.times[choice];
    times.push(wasmRunStats.lastKernelMs);
    if (times.length > 5) times.shift();
    if (single.calls >= SINGLE_TRIAL_CALLS) single.pick = Math.min(...single.times[1]) < Math.min(...single.times[0]) ? 1 : 0;
  }
  const finalType = t.covered === p.pipeline.length ? p.dstType : 'int32';
  const out = allocateDst(finalType, M * N);
  const view = allocateDst(finalType, e.memory.buffer as ArrayBuffer);
  out.set(view.subarray(t.dst / out.BYTES_PER_ELEMENT, t.dst / out.BYTES_PER_ELEMENT + M * N));
  if (t.covered === p.pipeline.length) return { data: out, rows: M, cols: N, order: p.dstOrder, dtype: p.dstType };
  // From the first tanh on, in JavaScript (stages.ts).
  const rest: NormalizedProblem = { ...p, pipeline: p.pipeline.slice(t.covered), derived: p.derived.slice(t.covered) };
  const dst = allocateDst(p.dstType, M * N);
  for (let m = 0; m < M; m++) {
    for (let n = 0; n < N; n++) {
      const i = dstIndex(p.dstOrder, M, N, m, n);
      dst[i] = applyOutputPipeline(rest, out[i], m, n);
    }
  }
  return { data: dst, rows: M, cols: N, order: p.dstOrder, dtype: p.dstType };
}

/**
 * Runs kernel `kind` a few times on a small problem with a per-channel pipeline, so that the engine
 * compiles its hot functions with its optimizing tier before the caller's first GEMM (V8 starts every
 * WebAssembly function in its baseline compiler, which runs these kernels at about half speed, and
 * tiers a function up only after it has run for a while).
 */
export async function warmUp(e: WasmEngine, kind: WasmKernelKind): Promise<void> {
  // A packed problem, then one per direct micro-kernel shape (gen-direct.ts).
  const shapes = kind === 'i16' ? [24, ...DIRECT.map((d) => d.mr)] : [24];
  const problems = shapes.map((M) => {
    const N = 64;
    const K = 512;
    const values = Int32Array.from({ length: N }, (_, n) => n - 32);
    return normalizeProblem({
      lhs: { data: new Uint8Array(M * K).fill(3), rows: M, cols: K, order: 'row-major' },
      rhs: { data: new Uint8Array(K * N).fill(5), rows: K, cols: N, order: 'row-major' },
      lhsZeroPoint: 1,
      rhsZeroPoint: 2,
      pipeline: [
        { type: 'bias', axis: 'col', values },
        {
          type: 'scaleInt32ByFixedPointAndExponent',
          multiplier: values.map((v) => v << 24),
          exponent: values.map((v) => v >> 3),
          offsetAfterShift: 9,
          rounding: 'double',
          axis: 'col',
        },
        { type: 'saturatingCast', to: 'uint8' },
      ],
    });
  });
  for (let round = 0; round < 40; round++) {
    for (const p of problems) await runOnEngine(e, p, kind, 1, 1, kind === 'relaxed' ? e.relaxed : null);
    if (round % 8 === 7) await new Promise((r) => setTimeout(r, 0)); // lets the background compiler finish
  }
}

/**
 * The relaxed kernel equals the 16-bit one on random problems, every time over warm-up rounds (engine.ts):
 * the 6x8 kernel, and its few-row kernels over a prepacked rhs (gen-relaxed-few.ts, relaxedFewAgrees),
 * each on problems large enough that the engine optimizes it within the rounds, so that both tiers'
 * code is compared: V8 starts a function in its baseline tier and optimizes it once it has run a while,
 * for these kernels about 32K iterations of their loop (measured under Node 24: the 1x4 kernel reached
 * the optimizing tier in round 3 of 8 at K x N = 1000 x 1024, and never at 1000 x 40;
 * bench/results/2026-11-27-cpu-relaxed-selfcheck-tiers.txt).
 */
export async function selfCheck(e: WasmEngine, mode: RelaxedMode): Promise<boolean> {
  let seed = 0x2545f491;
  const next = () => (seed = (Math.imul(seed, 1664525) + 1013904223) >>> 0);
  const operand = (rows: number, cols: number, signed: boolean, order: 'row-major' | 'col-major') => {
    const words = new Uint32Array(Math.ceil((rows * cols) / 4));
    for (let i = 0; i < words.length; i++) words[i] = next();
    const data = signed ? new Int8Array(words.buffer, 0, rows * cols) : new Uint8Array(words.buffer, 0, rows * cols);
    return { data, rows, cols, order };
  };
  const shapes: [number, number, number][] = [
    [13, 19, 37],
    [64, 64, 256],
    [7, 33, 5],
    [1, 40, 1000],
  ];
  // The few-row kernels' rhs, packed once for every round: 64 of its rows drawn, then repeated (a draw for
  // each of its 1M bytes took ~20 ms, in JavaScript the engine has not optimized yet).
  const drawn = operand(64, 1024, (next() & 1) === 1, 'row-major').data;
  const fewRhs = { data: drawn instanceof Int8Array ? new Int8Array(1000 * 1024) : new Uint8Array(1000 * 1024), rows: 1000, cols: 1024 };
  for (let at = 0; at < fewRhs.data.length; at += drawn.length) fewRhs.data.set(drawn.subarray(0, fewRhs.data.length - at), at);
  const fewBlock = packRhsBlock(e, normalizeProblem({ lhs: operand(1, 1000, false, 'row-major'), rhs: fewRhs }), 'relaxed');
  try {
    for (let round = 0; round < 8; round++) {
      for (const [M, N, K] of shapes) {
        const problem = normalizeProblem({
          lhs: operand(M, K, (next() & 1) === 1, 'row-major'),
          rhs: operand(K, N, (next() & 1) === 1, (next() & 1) === 1 ? 'row-major' : 'col-major'),
          lhsZeroPoint: (next() & 255) - 64,
          rhsZeroPoint: (next() & 255) - 64,
        });
        const want = (await runOnEngine(e, problem, 'i16', 1)).data;
        const got = (await runOnEngine(e, problem, 'relaxed', 1, 1, mode)).data;
        for (let i = 0; i < want.length; i++) if (got[i] !== want[i]) return false;
      }
      const few = {
        lhs: operand(3, 1000, (next() & 1) === 1, 'row-major'),
        rhs: fewRhs,
        lhsZeroPoint: (next() & 255) - 64,
        rhsZeroPoint: 7,
      };
      if (!(await relaxedFewAgrees(e, mode, few, fewBlock))) return false;
      await new Promise((r) => setTimeout(r, 1));
    }
    return true;
  } finally {
    freeBlock(e, fewBlock.packed);
  }
}

/**
 * The relaxed few-row kernels (gen-relaxed-few.ts: 1x4, 2x2, and 4x1 over a partial tile) over `block`
 * (`input`'s rhs packed by packRhsBlock for the relaxed kernel) equal the 16-bit kernel with the first
 * 1, 2, ..., M rows of its lhs (selfCheck). The lhs is row-major and the problem has no pipeline, so that
 * the first rows of the 16-bit kernel's result are each one's.
 */
export async function relaxedFewAgrees(e: WasmEngine, mode: RelaxedMode, input: GemmProblem, block: RhsBlock): Promise<boolean> {
  const full = normalizeProblem(input);
  const want = (await runOnEngine(e, full, 'i16', 1)).data;
  for (let rows = 1; rows <= full.M; rows++) {
    const lhs = { ...input.lhs, data: input.lhs.data.subarray(0, rows * full.K), rows };
    const got = (await runOnEngine(e, normalizeProblem({ ...input, lhs }), 'relaxed', 1, 1, mode, block)).data;
    for (let i = 0; i < got.length; i++) if (got[i] !== want[i]) return false;
  }
  return true;
}
