// One GEMM on the WebAssembly engine (engine.ts), the whole pack -> gemm -> output chain: the operands'
// bytes go into linear memory (less-than-8-bit operands requantized first, in TypeScript, with
// src/quant/lowbit.ts), the context record (layout.ts) describes the problem, then each thread packs
// its share of lhs tiles and rhs panels with their sums, and, once all have (a barrier: one job of
// pool.ts), runs micro-kernels and the output stage over its share of C; the dst bytes are copied out.
// For a few lhs rows and a row-major rhs the direct variant (gen-direct.ts) packs only the lhs, here,
// and reads the rhs where it lies. A pipeline with a tanh stage is finished in JavaScript from the tanh
// on (stages.ts).

import { requantize, resolveRounding, roundingOffset, unpackFractions } from '../../quant/lowbit.ts';
import { applyOutputPipeline } from '../../reference/pipeline.ts';
import { allocateDst, DTYPE_BYTES } from '../../spec/dst.ts';
import { channel, dstIndex, normalizeProblem, type NormalizedProblem } from '../../spec/problem.ts';
import { UINT8_DOMAIN_SHIFT, type GemmResult, type OperandData } from '../../types.ts';
import { ensureMemory, heapEnd, type RelaxedMode, type WasmEngine } from './engine.ts';
import { CTX, CTX_WORDS, DATA_START, DIRECT, DIRECT_NP_ALIGN, KERNELS, NR, type WasmKernelKind } from './layout.ts';
import { BARRIER_CALL, type Call } from './job.ts';
import { WorkerPool } from './pool.ts';
import { encodeProgram } from './stages.ts';

const roundUp = (x: number, m: number) => Math.ceil(x / m) * m;
/** Below this many multiply-adds per thread, fewer threads are faster (the hand-off and the wait cost more). */
const MIN_MACS_PER_THREAD = 1 << 20;
const L2_BLOCK_BYTES = 256 * 1024;
/** Up to this many lhs rows a row-major rhs is read where it lies (gen-direct.ts) rather than packed. */
const DIRECT_MAX_M = 8;
/** The direct kernel's C block (rows x panels of int32), kept in L1 for its output stage. */
const DIRECT_BLOCK_BYTES = 16 * 1024;
/** lhs - zL fits in 16 bits for 8-bit lhs values when |zL| is at most this. */
const DIRECT_MAX_ZERO_POINT = 32512;

/** Bytes of linear memory one problem needs (the kernels refuse problems above 2 GiB). */
export function wasmBytesNeeded(M: number, N: number, K: number): number {
  const Mp = roundUp(M, 6);
  const Np = roundUp(N, NR);
  const Kp = roundUp(K, 4);
  return DATA_START + M * K + K * N + 2 * (Mp + Np) * Kp + 4 * Mp * Np + 4 * M * N + 16 * (Mp + Np) + 64 * 1024;
}

/** The operand as bytes in the uint8 domain requantized to `bits` (src/quant/lowbit.ts), same storage order. */
function requantized(p: NormalizedProblem, which: 'lhs' | 'rhs'): Uint8Array {
  const op = p[which];
  const bits = p.bitDepth![which];
  const rounding = resolveRounding(p.bitDepth!.rounding, p.K);
  const shift = (which === 'lhs' ? p.lhsType : p.rhsType) === 'int8' ? UINT8_DOMAIN_SHIFT : 0;
  const out = new Uint8Array(op.data.length);
  const { rows, cols } = op;
  for (let r = 0; r < rows; r++) {
    for (let c = 0; c < cols; c++) {
      const i = op.order === 'row-major' ? r * cols + c : c * rows + r;
      out[i] = requantize(op.data[i] + shift, bits, roundingOffset(rounding, r * cols + c));
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
   * The 16-bit kernel's: the rhs bytes for the direct variant, in blocks of DIRECT_NP_ALIGN columns, each
   * Kp rows x DIRECT_NP_ALIGN contiguous (zero past K and N); else null.
   */
  raw: number | null;
}

interface Prepared {
  /** The shape of the direct variant of the 16-bit kernel (gen-direct.ts; the rhs is not packed), or null. */
  direct: DirectShape | null;
  /** The rhs was packed before (an RhsBlock): only the lhs is packed. */
  rhsReady: boolean;
  tiles: number;
  panels: number;
  dst: number;
  covered: number;
}

/**
 * The direct variant's shape for p (gen-direct.ts), or null where kernel `kind` packs the rhs: it takes
 * the 16-bit kernel with 8-bit operands, a row-major rhs, few rows, and lhs zero points small enough
 * for lhs - zL to fit in 16 bits.
 */
function directShape(p: NormalizedProblem, kind: WasmKernelKind): DirectShape | null {
  if (kind !== 'i16' || p.bitDepth || p.rhs.order !== 'row-major' || p.M > DIRECT_MAX_M) return null;
  for (let m = 0; m < p.M; m++) if (Math.abs(channel(p.lhsZeroPoint, m)) > DIRECT_MAX_ZERO_POINT) return null;
  return DIRECT.find((d) => d.mr >= p.M) ?? DIRECT[DIRECT.length - 1];
}

/**
 * The direct variant's lhs: tiles of d.mr rows, [Kp/2][mr][2] int16 values lhs - zL (zero past M and
 * K) at `at`, and each row's sum of them at `sums`.
 */
function packLhsDirect(buf: ArrayBufferLike, p: NormalizedProblem, d: DirectShape, Mp: number, Kp: number, at: number, sums: number) {
  const { M, K, lhs } = p;
  const out = new Int16Array(buf, at, Mp * Kp).fill(0);
  const rowSums = new Int32Array(buf, sums, Mp).fill(0);
  const [so, sk] = lhs.order === 'row-major' ? [K, 1] : [1, M];
  for (let m = 0; m < M; m++) {
    const z = channel(p.lhsZeroPoint, m);
    const base = Math.floor(m / d.mr) * Kp * d.mr + (m % d.mr) * 2;
    let sum = 0;
    for (let k = 0; k < K; k++) {
      const v = lhs.data[m * so + k * sk] - z;
      out[base + (k >> 1) * 2 * d.mr + (k & 1)] = v;
      sum = (sum + v) | 0;
    }
    rowSums[m] = sum;
  }
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
  direct = rhsBlock && rhsBlock.raw === null ? null : directShape(p, kind),
): Prepared {
  const { M, N, K } = p;
  const { kstep, elem } = KERNELS[kind];
  const mr = direct?.mr ?? KERNELS[kind].mr;
  const Mp = roundUp(M, mr);
  const Np = roundUp(N, direct ? DIRECT_NP_ALIGN : NR);
  const Kp = roundUp(K, kstep);
  const lowbit = !!p.bitDepth;
  const lhsData = lowbit ? requantized(p, 'lhs') : bytes(p.lhs.data);
  const rhsData = rhsBlock ? null : lowbit ? requantized(p, 'rhs') : bytes(p.rhs.data);
  const lhsSigned = !lowbit && p.lhsType === 'int8';
  const rhsSigned = !lowbit && p.rhsType === 'int8';

  let at = heapEnd(e); // past the prepacked operands' blocks
  const region = (n: number) => {
    const a = at;
    at = roundUp(at + n, 64);
    return a;
  };
  const r = {
    lhsSrc: region(direct ? 0 : M * K),
    // the direct kernel reads rows up to Kp (zero past K)
    rhsSrc: rhsBlock ? (rhsBlock.raw ?? 0) : region(Kp * N),
    lhsPacked: region(Mp * Kp * elem),
    rhsPacked: rhsBlock ? rhsBlock.packed : region(direct ? 0 : Np * Kp * elem),
    rowSums: region(4 * Mp),
    colSums: rhsBlock ? rhsBlock.sums : region(4 * Np),
    zL: region(4 * Mp),
    zR: region(4 * Np),
    C: region(4 * Mp * Np),
  };
  const program = encodeProgram(p, Mp, Np);
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
  if (direct) {
    // The lhs is packed here with its zero points subtracted (which then are 0), the rhs stays as it is.
    if (rhsData) new Uint8Array(buf, r.rhsSrc + K * N, (Kp - K) * N).fill(0);
    packLhsDirect(buf, p, direct, Mp, Kp, r.lhsPacked, r.rowSums);
  } else {
    new Uint8Array(buf, r.lhsSrc, M * K).set(lhsData);
    for (let m = 0; m < M; m++) zL[m] = (channel(p.lhsZeroPoint, m) + shiftL) | 0;
  }
  const zR = new Int32Array(buf, r.zR, Np).fill(0);
  for (let n = 0; n < N; n++) zR[n] = (channel(p.rhsZeroPoint, n) + shiftR) | 0;
  program.write(new Int32Array(buf, paramsAt, program.paramWords), paramsAt, new Int32Array(buf, programAt, program.recordWords));

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
    // a prepacked rhs's direct bytes: blocks of DIRECT_NP_ALIGN columns, rows DIRECT_NP_ALIGN apart
    rhsSk: direct && rhsBlock ? DIRECT_NP_ALIGN : rhsRowMajor ? N : 1,
    rhsBlockStride: direct && rhsBlock ? Kp * DIRECT_NP_ALIGN : DIRECT_NP_ALIGN,
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
    nBlock: direct
      ? Math.max(1, Math.floor(DIRECT_BLOCK_BYTES / (4 * Mp * direct.nc)))
      : Math.max(1, Math.floor(L2_BLOCK_BYTES / (Kp * NR * elem))),
  };
  writeContext(buf, fields);
  return { direct, rhsReady: !!rhsBlock && !direct, tiles: Mp / mr, panels: Np / (direct?.nc ?? NR), dst, covered: program.covered };
}

/** [start, end) of part i of n items split T ways. */
const part = (n: number, T: number, i: number): [number, number] => [Math.floor((n * i) / T), Math.floor((n * (i + 1)) / T)];

/** The calls of each thread, phase by phase: pack (lhs tiles, rhs panels), then gemm + output. */
export function plan(kind: WasmKernelKind, t: Prepared, T: number): { pack: Call[][]; gemm: Call[][] } {
  const pack: Call[][] = [];
  const gemm: Call[][] = [];
  if (t.direct) {
    // Nothing to pack (prepare packed the few lhs rows); C is split by columns.
    for (let i = 0; i < T; i++) {
      pack.push([]);
      gemm.push([[`gemm_direct_${t.direct.mr}x${t.direct.nc}`, 0, t.tiles, ...part(t.panels, T, i)]]);
    }
    return { pack, gemm };
  }
  // Split C along the dimension that divides more evenly among the threads (rows on a tie).
  const waste = (n: number) => (Math.ceil(n / T) * T) / n;
  const byRows = waste(t.tiles) <= waste(t.panels);
  for (let i = 0; i < T; i++) {
    pack.push([[`pack_lhs_${kind}`, ...part(t.tiles, T, i)]]);
    if (!t.rhsReady) pack[i].push([`pack_rhs_${kind}`, ...part(t.panels, T, i)]);
    gemm.push([byRows ? [`gemm_${kind}`, ...part(t.tiles, T, i), 0, t.panels] : [`gemm_${kind}`, 0, t.tiles, ...part(t.panels, T, i)]]);
  }
  return { pack, gemm };
}

/** How many runs went to one thread and to several (diagnostics: the browser test checks that threads ran). */
export const wasmRunStats = { singleThreaded: 0, multiThreaded: 0 };

const runLocal = (e: WasmEngine) => (calls: Call[]) => {
  for (const [name, ...args] of calls) e.exports[name](...args);
};

/**
 * Runs p on engine e with kernel `kind`: on `threads` threads when given (as many as the engine can:
 * one without a shared memory), else on up to `defaultThreads`, fewer for small problems.
 */
export async function runOnEngine(
  e: WasmEngine,
  p: NormalizedProblem,
  kind: WasmKernelKind,
  threads: number | undefined,
  defaultThreads = 1,
  mode = e.relaxed,
  rhsBlock: RhsBlock | null = null,
): Promise<GemmResult> {
  const { M, N, K } = p;
  const t = prepare(e, p, kind, mode, rhsBlock);
  const wanted = threads ?? Math.min(defaultThreads, Math.floor((M * N * K) / MIN_MACS_PER_THREAD));
  const T = e.shared ? Math.max(1, Math.min(wanted, 256)) : 1;
  const { pack, gemm } = plan(kind, t, T);
  if (T === 1) {
    wasmRunStats.singleThreaded++;
    runLocal(e)(pack[0]);
    runLocal(e)(gemm[0]);
  } else {
    wasmRunStats.multiThreaded++;
    e.pool ??= new WorkerPool(e.module, e.memory, e.exports);
    try {
      await e.pool.run(pack.map((calls, i) => [...calls, [BARRIER_CALL], ...gemm[i]]));
    } finally {
      if (e.pool.isLost) {
        e.pool.close();
        e.pool = null; // the next GEMM starts a new pool
      }
    }
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

/** The relaxed kernel equals the 16-bit one on random problems, every time over warm-up rounds (engine.ts). */
export async function selfCheck(e: WasmEngine, mode: RelaxedMode): Promise<boolean> {
  let seed = 0x2545f491;
  const next = () => (seed = (Math.imul(seed, 1664525) + 1013904223) >>> 0);
  const operand = (rows: number, cols: number, signed: boolean, order: 'row-major' | 'col-major') => {
    const data = signed ? new Int8Array(rows * cols) : new Uint8Array(rows * cols);
    for (let i = 0; i < data.length; i++) data[i] = next() >>> 24;
    return { data, rows, cols, order };
  };
  const shapes: [number, number, number][] = [
    [13, 19, 37],
    [64, 64, 256],
    [7, 33, 5],
    [1, 40, 1000],
  ];
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
    await new Promise((r) => setTimeout(r, 1));
  }
  return true;
}
