// One GEMM on the WebAssembly engine (engine.ts), the whole pack -> gemm -> output chain: the operands'
// bytes go into linear memory (less-than-8-bit operands requantized first, in TypeScript, with
// src/quant/lowbit.ts), the context record (layout.ts) describes the problem, then each thread packs
// its share of lhs tiles and rhs panels with their sums, and, once all have, runs micro-kernels and the
// output stage over its share of C; the dst bytes are copied out. A pipeline with a tanh stage is
// finished in JavaScript from the tanh on (stages.ts).

import { requantize, resolveRounding, roundingOffset, unpackFractions } from '../../quant/lowbit.ts';
import { applyOutputPipeline } from '../../reference/pipeline.ts';
import { allocateDst, DTYPE_BYTES } from '../../spec/dst.ts';
import { channel, dstIndex, normalizeProblem, type NormalizedProblem } from '../../spec/problem.ts';
import { UINT8_DOMAIN_SHIFT, type GemmResult, type OperandData } from '../../types.ts';
import type { RelaxedMode, WasmEngine } from './engine.ts';
import { CTX, CTX_WORDS, DATA_START, KERNELS, NR, type WasmKernelKind } from './layout.ts';
import { WorkerPool, type Call } from './pool.ts';
import { encodeProgram } from './stages.ts';

const roundUp = (x: number, m: number) => Math.ceil(x / m) * m;
/** Below this many multiply-adds one thread is faster than a round trip to the workers. */
const MIN_MACS_PER_THREAD = 1 << 19;
const L2_BLOCK_BYTES = 256 * 1024;

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

const bytes = (d: OperandData) => new Uint8Array(d.buffer, d.byteOffset, d.length);

interface Prepared {
  tiles: number;
  panels: number;
  dst: number;
  covered: number;
}

/** Writes the problem into linear memory for kernel `kind`; returns what the dispatch needs. */
export function prepare(e: WasmEngine, p: NormalizedProblem, kind: WasmKernelKind, mode: RelaxedMode | null): Prepared {
  const { M, N, K } = p;
  const { mr, kstep, elem } = KERNELS[kind];
  const Mp = roundUp(M, mr);
  const Np = roundUp(N, NR);
  const Kp = roundUp(K, kstep);
  const lowbit = !!p.bitDepth;
  const lhsData = lowbit ? requantized(p, 'lhs') : bytes(p.lhs.data);
  const rhsData = lowbit ? requantized(p, 'rhs') : bytes(p.rhs.data);
  const lhsSigned = !lowbit && p.lhsType === 'int8';
  const rhsSigned = !lowbit && p.rhsType === 'int8';

  let at = DATA_START;
  const region = (n: number) => {
    const a = at;
    at = roundUp(at + n, 64);
    return a;
  };
  const r = {
    lhsSrc: region(M * K),
    rhsSrc: region(K * N),
    lhsPacked: region(Mp * Kp * elem),
    rhsPacked: region(Np * Kp * elem),
    rowSums: region(4 * Mp),
    colSums: region(4 * Np),
    zL: region(4 * Mp),
    zR: region(4 * Np),
    C: region(4 * Mp * Np),
  };
  const program = encodeProgram(p, Mp, Np, at);
  const paramsAt = region(4 * program.params.length);
  const programAt = region(4 * program.records.length);
  const dstType = program.covered === p.pipeline.length ? p.dstType : 'int32';
  const dstSize = DTYPE_BYTES[dstType];
  const dst = region(M * N * dstSize);
  const have = e.memory.buffer.byteLength;
  if (at > have) e.memory.grow(Math.ceil((at - have) / 65536));

  const buf = e.memory.buffer;
  new Uint8Array(buf, r.lhsSrc, M * K).set(lhsData);
  new Uint8Array(buf, r.rhsSrc, K * N).set(rhsData);
  const shiftL = lowbit && p.lhsType === 'int8' ? UINT8_DOMAIN_SHIFT : 0;
  const shiftR = lowbit && p.rhsType === 'int8' ? UINT8_DOMAIN_SHIFT : 0;
  const zL = new Int32Array(buf, r.zL, Mp).fill(0);
  for (let m = 0; m < M; m++) zL[m] = (channel(p.lhsZeroPoint, m) + shiftL) | 0;
  const zR = new Int32Array(buf, r.zR, Np).fill(0);
  for (let n = 0; n < N; n++) zR[n] = (channel(p.rhsZeroPoint, n) + shiftR) | 0;
  new Int32Array(buf, paramsAt, program.params.length).set(program.params);
  new Int32Array(buf, programAt, program.records.length).set(program.records);

  // Operand encodings (layout.ts): the 16-bit kernel widens each type as it is; relaxed SIMD wants the
  // rhs signed and the lhs unsigned (usdot) or signed (sdot), so XOR 0x80 moves a byte across, and the
  // 128 it moved by becomes cA/cB in the four-term expansion.
  let lhsXor = 0,
    lhsSh = lhsSigned ? 24 : 0,
    rhsXor = 0,
    rhsSh = rhsSigned ? 24 : 0,
    cA = 0,
    cB = 0;
  if (kind === 'relaxed') {
    rhsSh = 24;
    if (!rhsSigned) [rhsXor, cB] = [0x80, 128];
    if (mode === 'usdot') {
      lhsSh = 0;
      if (lhsSigned) [lhsXor, cA] = [0x80, -128];
    } else {
      lhsSh = 24;
      if (!lhsSigned) [lhsXor, cA] = [0x80, 128];
    }
  }
  const f = unpackFractions(p.bitDepth?.lhs ?? 8, p.bitDepth?.rhs ?? 8);
  const c = new Int32Array(buf, 0, CTX_WORDS).fill(0);
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
    nBlock: Math.max(1, Math.floor(L2_BLOCK_BYTES / (Kp * NR * elem))),
  };
  for (const [k, v] of Object.entries(fields)) c[CTX[k as keyof typeof CTX]] = v;
  return { tiles: Mp / mr, panels: Np / NR, dst, covered: program.covered };
}

/** [start, end) of part i of n items split T ways. */
const part = (n: number, T: number, i: number): [number, number] => [Math.floor((n * i) / T), Math.floor((n * (i + 1)) / T)];

/** The calls of each thread, phase by phase: pack (lhs tiles, rhs panels), then gemm + output. */
export function plan(kind: WasmKernelKind, t: Prepared, T: number): { pack: Call[][]; gemm: Call[][] } {
  const pack: Call[][] = [];
  const gemm: Call[][] = [];
  // Split C along the dimension that divides more evenly among the threads (rows on a tie).
  const waste = (n: number) => (Math.ceil(n / T) * T) / n;
  const byRows = waste(t.tiles) <= waste(t.panels);
  for (let i = 0; i < T; i++) {
    pack.push([
      [`pack_lhs_${kind}`, ...part(t.tiles, T, i)],
      [`pack_rhs_${kind}`, ...part(t.panels, T, i)],
    ]);
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
): Promise<GemmResult> {
  const { M, N, K } = p;
  const t = prepare(e, p, kind, mode);
  const wanted = threads ?? Math.min(defaultThreads, Math.floor((M * N * K) / MIN_MACS_PER_THREAD));
  const T = e.shared ? Math.max(1, Math.min(wanted, 256)) : 1;
  const { pack, gemm } = plan(kind, t, T);
  if (T === 1) {
    wasmRunStats.singleThreaded++;
    runLocal(e)(pack[0]);
    runLocal(e)(gemm[0]);
  } else {
    wasmRunStats.multiThreaded++;
    e.pool ??= new WorkerPool(e.module, e.memory);
    await e.pool.run(pack, runLocal(e));
    await e.pool.run(gemm, runLocal(e));
  }
  const finalType = t.covered === p.pipeline.length ? p.dstType : 'int32';
  const out = allocateDst(finalType, M * N);
  const view = allocateDst(finalType, e.memory.buffer as ArrayBuffer);
  out.set(view.subarray(t.dst / out.BYTES_PER_ELEMENT, t.dst / out.BYTES_PER_ELEMENT + M * N));
  if (t.covered === p.pipeline.length) return { data: out, rows: M, cols: N, order: p.dstOrder, dtype: p.dstType };
  // From the first tanh on, in JavaScript (stages.ts).
  const tanh = new Map([...p.tanh].filter(([i]) => i >= t.covered).map(([i, v]) => [i - t.covered, v]));
  const rest: NormalizedProblem = { ...p, pipeline: p.pipeline.slice(t.covered), tanh };
  const dst = allocateDst(p.dstType, M * N);
  for (let m = 0; m < M; m++) {
    for (let n = 0; n < N; n++) {
      const i = dstIndex(p.dstOrder, M, N, m, n);
      dst[i] = applyOutputPipeline(rest, out[i], m, n);
    }
  }
  return { data: dst, rows: M, cols: N, order: p.dstOrder, dtype: p.dstType };
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
