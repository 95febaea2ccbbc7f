// The first step of one GEMM on the WebAssembly engine (engine.ts): the problem written into linear
// memory for kernel `kind`, which of its drivers serves it (the packed panels, or a few-row kernel: the
// direct variant, the byte lanes, the 4-bit kernel, the relaxed few-row kernel), the regions it uses and
// the context record (layout.ts CTX) that the pack -> gemm -> output chain reads. run.ts plans the
// threads' calls over what this writes; rhs-block.ts packs a prepacked rhs with the same encodings.

import { unpackFractions } from '../../quant/lowbit.ts';
import { DTYPE_BYTES } from '../../problem/dst.ts';
import { channel, type NormalizedProblem } from '../../problem/problem.ts';
import { UINT8_DOMAIN_SHIFT, type OperandData } from '../../types.ts';
import { ensureMemory, heapEnd, type RelaxedMode, type WasmEngine } from './engine.ts';
import {
  CTX,
  CTX_WORDS,
  DATA_START,
  DIRECT,
  DIRECT_NP_ALIGN,
  KERNELS,
  LANE,
  LANE_MAX_M,
  NR,
  QUAD_NP_ALIGN,
  QUAD_SHAPES,
  WIDE,
  type WasmKernelKind,
} from './layout.ts';
import { requantized } from './requantize.ts';
import { encodeProgram, type OutputProgram } from './stages.ts';

export const roundUp = (x: number, m: number) => Math.ceil(x / m) * m;
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
   * layout where `dot7` (gen-dot7.ts: the engine's relaxed dot is exact on 7-bit operands). Else null.
   */
  nibble: { bits: number; rounding: string; dot7: boolean } | null;
}

export type QuadShape = (typeof QUAD_SHAPES)[number];

/** The quad kernels' shape for M rows: the first whose rows cover M, else the last (tiles of its rows). */
const quadShape = (M: number): QuadShape => QUAD_SHAPES.find((s) => s.mr >= M) ?? QUAD_SHAPES[QUAD_SHAPES.length - 1];

export interface Prepared {
  /** The shape of the direct variant of the 16-bit kernel (gen-direct.ts; the rhs is not packed), or null. */
  direct: DirectShape | null;
  /** The shape of the 4-bit kernel (gen-nibble.ts; the rhs was prepacked at 4 bits), or null. */
  nibble: QuadShape | null;
  /** The 4-bit kernel is the relaxed-SIMD one (gen-dot7.ts): its lhs tiles are bytes. */
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
 * The plan whose problem each engine's memory holds now (written by prepare), or none: run.ts sets it,
 * and a repeated plan then writes only its new lhs.
 */
export const written = new WeakMap<WasmEngine, object>();

/** Something other than a plan wrote the context (rhs-block.ts, kernel.ts prepackCpu): no plan may assume it. */
export function forgetPlan(e: WasmEngine): void {
  written.delete(e);
}
