// The WebAssembly CPU kernels as CpuGemmKernel (src/kernels/types.ts), the whole pack -> gemm -> output
// chain of each in WebAssembly (prepare.ts, run.ts): 'cpu-wasm-relaxed' (relaxed-SIMD 8-bit dot products, 6x8
// micro-kernel or few-row ones over a prepacked rhs, only where engine.ts proved them exact) and
// 'cpu-wasm-simd' (operands widened to 16 bits, `i32x4.dot_i16x8_s`, 4x8 micro-kernel or, for a few
// rows, the direct variant of gen-direct.ts; exact
// everywhere WebAssembly SIMD exists). Both run on the calling thread plus worker threads over a shared
// memory where there is one. Runs on one engine are serialized (they share its memory). prepackCpu packs
// an rhs (the weights) once, the pack stage ahead of time, into a block of that memory that outlives a GEMM.

import { InputError } from '../../errors.ts';
import { normalizeProblem, type NormalizedProblem } from '../../problem/problem.ts';
import { ownedProblem, type ProblemSnapshot, sameProblem, snapshotProblem } from '../../problem/snapshot.ts';
import { resolveRounding } from '../../quant/lowbit.ts';
import type { BitDepth, GemmProblem, GemmResult, Operand } from '../../types.ts';
import type { CpuCaps, CpuGemmKernel, CpuPackedOperand } from '../types.ts';
import {
  allocateBlock,
  configureWasm,
  freeBlock,
  noEngineNote,
  wasmEngine,
  wasmThreads,
  type WasmEngine,
  type WasmOptions,
} from './engine.ts';
import { QUAD_NP_ALIGN, QUAD_SHAPES, STRIP_PANELS, WIDE, type WasmKernelKind } from './layout.ts';
import { forgetPlan, type RhsBlock, wasmBytesNeeded } from './prepare.ts';
import { requantized } from './requantize.ts';
import { packRhsBlock, rhsBlockBytes } from './rhs-block.ts';
import { makePlan, runOnEngine, runPlan, startWorkers, warmUp, wasmRunStats, type Plan } from './run.ts';
import { selfCheck } from './self-check.ts';

export { configureWasm, wasmRunStats, type WasmOptions };

/** What the WebAssembly CPU kernel's runs did so far (cpuRunStats). */
export type CpuRunStats = Readonly<typeof wasmRunStats>;

/**
 * A snapshot of the WebAssembly CPU kernel's runs in this thread: how many ran on one thread and on
 * several, and the last run's kernel time in ms (its pack, gemm and output calls on every thread,
 * hand-off included; the call's overhead is its wall time minus this), thread count and driver (the
 * WebAssembly function of its gemm stage: 'gemm_i16' the packed panels, 'gemm_direct_*' a row-major
 * rhs read where it lies, 'gemm_lane_*' and 'gemm_wide_*' a prepacked 8-bit rhs's byte lanes, 'gemm_nibble_*' 4-bit,
 * 'gemm_nibble7_*' 4-bit on relaxed SIMD, 'gemm_relaxed' the relaxed 6x8 kernel, 'gemm_relaxed_*' its few-row
 * kernels over a prepacked rhs).
 */
export function cpuRunStats(): CpuRunStats {
  return { ...wasmRunStats };
}

/** Problems larger than this (in linear-memory bytes) stay with the JavaScript kernel. */
const MAX_BYTES = 2 ** 31;

const engine = () => wasmEngine(selfCheck, (e) => warmUp(e, e.relaxed ? 'relaxed' : 'i16'));
let queue: Promise<unknown> = Promise.resolve();

function serialized<T>(job: () => Promise<T>): Promise<T> {
  const run = queue.then(job, job);
  queue = run.catch(() => undefined);
  return run;
}

/** What this runtime offers the WebAssembly kernels (and how relaxed SIMD was decided). */
export async function wasmCpuCaps(): Promise<CpuCaps & { relaxedNote: string; threadsNote?: string }> {
  const e = await engine();
  if (!e) return { wasmSimd: false, relaxedSimd: false, threads: 1, sharedMemory: false, relaxedNote: noEngineNote };
  const caps = {
    wasmSimd: true,
    relaxedSimd: e.relaxed !== null,
    threads: wasmThreads(e),
    sharedMemory: e.shared,
    relaxedNote: e.relaxedNote,
  };
  return e.threadsNote ? { ...caps, threadsNote: e.threadsNote } : caps;
}

function wasmKernel(id: string, kind: WasmKernelKind, available: (c: CpuCaps) => boolean): CpuGemmKernel {
  return {
    id,
    backend: 'cpu',
    supports: (caps, p) => available(caps) && wasmBytesNeeded(p.M, p.N, p.K) < MAX_BYTES,
    run: (p, opts) =>
      serialized(async () => {
        const e: WasmEngine | null = await engine();
        if (!e) throw new Error(`qgemm: kernel ${id} is not available in this runtime`);
        // configureCpu({ relaxedSimd: false }) may have replaced the engine since this kernel was chosen:
        // the call then runs the 16-bit kernel, which computes the same bits.
        const swapped = kind === 'relaxed' && !e.relaxed;
        if (swapped) opts.ranAs?.(I16_ID);
        return runOnEngine(
          e,
          p,
          swapped ? 'i16' : kind,
          opts.threads,
          wasmThreads(e),
          e.relaxed,
          opts.rhsPacked ? rhsBlockFor(opts.rhsPacked, e, p, id) : null,
        );
      }),
  };
}

/**
 * A prepacked operand's last plan (run.ts): the problem it was made for, normalized and, in `input`, as
 * the caller gave it (a copy, lhs data left out), and the thread count it was planned under.
 */
interface Remembered {
  p: NormalizedProblem;
  plan: Plan;
  threads: number;
  input: ProblemSnapshot;
}

/** What only this module knows of a CpuPackedOperand: where it lies, in which engine's memory, its last plan. */
const blocks = new WeakMap<CpuPackedOperand, RhsBlock & { engine: WasmEngine; plan: Remembered | null }>();

export const isCpuPacked = (x: unknown): x is CpuPackedOperand => typeof x === 'object' && x !== null && blocks.has(x as CpuPackedOperand);

/** prepackCpu where no engine can be made (noEngineNote says why). */
const noEngine = () => new InputError('rhs', `prepackCpu needs the WebAssembly engine, which this runtime lacks (${noEngineNote})`);

/** The block of `x` on engine e, or an InputError: destroyed, or of an engine that configureCpu replaced. */
function liveBlock(x: CpuPackedOperand, e: WasmEngine | null): RhsBlock & { plan: Remembered | null } {
  const b = blocks.get(x);
  if (!b || x.destroyed) throw new InputError('rhs', 'this prepacked operand was destroyed');
  if (b.engine !== e)
    throw new InputError('rhs', 'this prepacked operand belongs to a CPU engine that was replaced (configureCpu); prepack it again');
  return b;
}

/** The block of `x` for a GEMM on engine e with kernel `id`, or an InputError naming why it cannot serve. */
function rhsBlockFor(x: CpuPackedOperand, e: WasmEngine | null, p: NormalizedProblem, id: string): RhsBlock & { plan: Remembered | null } {
  const b = liveBlock(x, e);
  if (x.kernel !== id) throw new InputError('kernel', `the rhs was prepacked for ${x.kernel}, not ${id}`);
  if (p.K !== x.rows || p.N !== x.cols)
    throw new InputError('rhs', `prepacked as [${x.rows},${x.cols}], the problem needs [${p.K},${p.N}]`);
  return b;
}

/**
 * Packs `rhs` once for the fastest WebAssembly CPU kernel (with its column sums) into the kernels'
 * memory. Without `bitDepth`, 8-bit: a GEMM then runs without bitDepth. With a `bitDepth` of at most 4
 * rhs bits, the rhs is requantized once (src/quant/lowbit.ts, its rounding resolved for its K) and
 * stored two values per byte for the 4-bit kernel (gen-nibble.ts): a GEMM then gives the same bitDepth
 * (its lhs bits may differ). 5 to 7 rhs bits are not stored (a GEMM with them takes the plain rhs).
 * Where WebAssembly SIMD is missing there is nothing to pack for: InputError. The first prepack also
 * warms the per-call path up and starts the worker threads (warmCallPath, startWorkers).
 */
export async function prepackCpu(rhs: Operand, bitDepth?: BitDepth): Promise<CpuPackedOperand> {
  if (callPathWarm) return prepackOnce(rhs, bitDepth);
  // The first prepack also starts the workers, while it packs and warms the call path up: a worker's
  // start (~35 ms here) would otherwise fall on the first GEMM that takes threads.
  const e = await engine();
  const workers = e ? startWorkers(e, wasmThreads(e)) : null;
  try {
    const packed = await prepackOnce(rhs, bitDepth);
    callPathWarm = true;
    await warmCallPath();
    return packed;
  } finally {
    await workers;
  }
}

let callPathWarm = false;

/**
 * Runs the per-call path of a prepacked rhs (runPrepacked: the comparison, the plan, the lhs pack, the
 * few-row kernels, the copy out) on small problems, 8-bit and 4-bit, at each quad kernel shape's rows
 * and the widening kernel's (layout.ts QUAD_SHAPES, WIDE), 100 times each, when the first operand is prepacked: V8 runs JavaScript in its
 * interpreter and WebAssembly in its baseline compiler until a function has run a while, and a caller's
 * first GEMMs would otherwise pay for it (~100 µs a call).
 */
async function warmCallPath(): Promise<void> {
  const K = 64;
  const N = 64;
  const rhs = { data: new Uint8Array(K * N).fill(3), rows: K, cols: N };
  const shape = { data: new Uint8Array(0), rows: K, cols: N };
  const bitDepths: (BitDepth | undefined)[] = [undefined, { lhs: 8, rhs: 4, rounding: 'nearest' }];
  for (const bitDepth of bitDepths) {
    const x = await prepackOnce(rhs, bitDepth);
    const values = Int32Array.from({ length: N }, (_, n) => n - 32);
    try {
      for (const M of [...QUAD_SHAPES.map((s) => s.mr), WIDE.mr]) {
        const problem = {
          lhs: { data: new Uint8Array(M * K).fill(5), rows: M, cols: K },
          lhsZeroPoint: 1,
          rhsZeroPoint: 2,
          pipeline: [
            { type: 'bias' as const, axis: 'col' as const, values },
            { type: 'quantizeDownInt32ByFixedPoint' as const, multiplier: 1 << 30, shift: 5, offsetAfterShift: 3 },
            { type: 'saturatingCast' as const, to: 'uint8' as const },
          ],
          ...(bitDepth ? { bitDepth } : {}),
        };
        const validate = async (q: Omit<GemmProblem, 'rhs'>) => normalizeProblem({ ...q, rhs: shape }, { rhsShapeOnly: true });
        for (let i = 0; i < 100; i++) await runPrepacked(problem, x, validate);
      }
    } finally {
      x.destroy();
    }
  }
}

async function prepackOnce(rhs: Operand, bitDepth?: BitDepth): Promise<CpuPackedOperand> {
  const K0 = Number.isInteger(rhs?.rows) && rhs.rows > 0 ? rhs.rows : 1;
  const row = { data: new Uint8Array(K0), rows: 1, cols: K0 }; // a one-row lhs, to validate rhs as a GEMM does
  const p = normalizeProblem({ lhs: row, rhs, ...(bitDepth === undefined ? {} : { bitDepth }) });
  const { rhsType: type, K, N } = p;
  if (p.bitDepth && p.bitDepth.rhs > 4)
    throw new InputError(
      'bitDepth',
      `prepackCpu stores at most 4-bit weights, two per byte (got rhs: ${p.bitDepth.rhs}); give the plain rhs`,
    );
  if (p.bitDepth) return serialized(() => prepackNibbles(p));
  return serialized(async () => {
    const e = await engine();
    if (!e) throw noEngine();
    const kind: WasmKernelKind = e.relaxed ? 'relaxed' : 'i16';
    const size = rhsBlockBytes(K, N, kind);
    if (size + K * N > MAX_BYTES) throw new InputError('rhs', `too large for the WebAssembly kernels (${size} bytes packed)`);
    const block = packRhsBlock(e, p, kind);
    const packed = packedOperand(e, block.packed, K, N, type, kind === 'relaxed' ? CPU_WASM_RELAXED.id : CPU_WASM_SIMD.id, size);
    blocks.set(packed, { ...block, engine: e, plan: null });
    return packed;
  });
}

/** The CpuPackedOperand of a block at `at` of engine e (its destroy frees the block). */
function packedOperand(
  e: WasmEngine,
  at: number,
  rows: number,
  cols: number,
  type: CpuPackedOperand['type'],
  kernel: string,
  size: number,
) {
  let destroyed = false;
  const packed: CpuPackedOperand = {
    side: 'rhs',
    rows,
    cols,
    type,
    kernel,
    bytes: size,
    get destroyed() {
      return destroyed;
    },
    destroy() {
      if (destroyed) return;
      destroyed = true;
      void serialized(async () => freeBlock(e, at));
    },
  };
  return packed;
}

/**
 * prepackCpu with at most 4 rhs bits: the rhs requantized (src/quant/lowbit.ts) and stored for the 4-bit
 * kernel (gen-nibble.ts): per panel of 8 columns, per quad of k, 16 bytes, the panels in strips of
 * STRIP_PANELS (layout.ts); then the column sums of the requantized values. Columns are padded to
 * QUAD_NP_ALIGN, k to 4, with zeros. In a panel's 16 bytes, column c (0..7), k & 3:
 * - the 16-bit kernel's layout: 32-bit lane c & 3, byte 2 * (k & 1) + (c >> 2), nibble k >> 1 of it;
 * - where the engine's relaxed dot is exact on 7-bit operands (dot7): byte 4 * (c & 3) + (k & 3),
 *   nibble c >> 2 of it.
 */
async function prepackNibbles(p: NormalizedProblem): Promise<CpuPackedOperand> {
  const e = await engine();
  if (!e) throw noEngine();
  const { K, N, rhs: op } = p;
  const bitDepth = p.bitDepth!;
  const Kp = Math.ceil(K / 4) * 4;
  const Np = Math.ceil(N / QUAD_NP_ALIGN) * QUAD_NP_ALIGN;
  const panelBytes = (Np * Kp) / 2;
  const size = panelBytes + 4 * Np;
  if (size > MAX_BYTES / 2) throw new InputError('rhs', `too large for the WebAssembly kernels (${size} bytes packed)`);
  const values = requantized(p, 'rhs');
  const at = allocateBlock(e, size);
  forgetPlan(e);
  const buf = e.memory.buffer;
  const out = new Uint8Array(buf, at, panelBytes).fill(0);
  const sums = new Int32Array(buf, at + panelBytes, Np).fill(0);
  const { dot7 } = e;
  // Element (k, n) goes to byte column[n] + quad[k], shifted by shift[n] + kShift[k]: column n's first
  // byte (strip n >> 5 of Kp * 4 * STRIP_PANELS bytes, panel (n >> 3) & 3: 16 bytes of each 64-byte quad,
  // lane n & 3) and nibble; quad k >> 2's offset and k's byte and nibble in it.
  const column = new Int32Array(N);
  const shift = new Uint8Array(N);
  for (let n = 0; n < N; n++) {
    column[n] = (n >> 5) * Kp * 4 * STRIP_PANELS + ((n >> 3) & 3) * 16 + (n & 3) * 4 + (dot7 ? 0 : (n & 7) >> 2);
    shift[n] = dot7 ? ((n & 7) >> 2) * 4 : 0;
  }
  const quad = new Int32Array(K);
  const kShift = new Uint8Array(K);
  for (let k = 0; k < K; k++) {
    quad[k] = (k >> 2) * 16 * STRIP_PANELS + (dot7 ? k & 3 : (k & 1) * 2);
    kShift[k] = dot7 ? 0 : (k & 2) * 2;
  }
  // In the values' storage order, so that they are read once, in sequence.
  if (op.order === 'row-major') {
    for (let k = 0, i = 0; k < K; k++) {
      const [q, sk] = [quad[k], kShift[k]];
      for (let n = 0; n < N; n++, i++) {
        const v = values[i];
        out[column[n] + q] |= v << (shift[n] + sk);
        sums[n] += v;
      }
    }
  } else {
    for (let n = 0, i = 0; n < N; n++) {
      const [c, sn] = [column[n], shift[n]];
      let sum = 0;
      for (let k = 0; k < K; k++, i++) {
        const v = values[i];
        out[c + quad[k]] |= v << (sn + kShift[k]);
        sum += v;
      }
      sums[n] = sum;
    }
  }
  const packed = packedOperand(e, at, K, N, p.rhsType, CPU_WASM_SIMD.id, size);
  const nibble = { bits: bitDepth.rhs, rounding: resolveRounding(bitDepth.rounding, K), dot7 };
  blocks.set(packed, { kind: 'i16', packed: at, sums: at + panelBytes, raw: null, nibble, engine: e, plan: null });
  return packed;
}

/**
 * The bitDepth of a GEMM against its prepacked rhs's: none for an 8-bit one; for a 4-bit one the same
 * rhs bits and (resolved) rounding. Else an InputError naming the rhs, as the GPU path's prepacked check does.
 */
export function checkPackedBitDepth(x: CpuPackedOperand, p: NormalizedProblem): void {
  const stored = blocks.get(x)?.nibble ?? null;
  const b = p.bitDepth;
  if (!stored) {
    // The 8-bit kernels over a prepacked rhs do not requantize their lhs: a GEMM with a bitDepth takes the plain rhs.
    if (b)
      throw new InputError(
        'rhs',
        `prepacked at 8 bits, it serves GEMMs without a bitDepth: give the plain rhs${b.rhs <= 4 ? ', or prepack it with this bitDepth' : ''}`,
      );
    return;
  }
  if (!b) throw new InputError('rhs', `prepacked at ${stored.bits} bits: the GEMM needs the bitDepth it was prepacked with`);
  if (b.rhs !== stored.bits || resolveRounding(b.rounding, p.K) !== stored.rounding)
    throw new InputError(
      'rhs',
      `prepacked at ${stored.bits} bits with rounding ${stored.rounding}, the GEMM asks rhs ${b.rhs} bits, rounding ${resolveRounding(b.rounding, p.K)}`,
    );
}

/** The 16-bit kernel's id: what runs a relaxed kernel's call on an engine without relaxed SIMD. */
const I16_ID = 'cpu-wasm-simd';
export const CPU_WASM_RELAXED = wasmKernel('cpu-wasm-relaxed', 'relaxed', (c) => c.relaxedSimd);
export const CPU_WASM_SIMD = wasmKernel(I16_ID, 'i16', (c) => c.wasmSimd);
/** Fastest first. */
export const CPU_WASM_KERNELS: CpuGemmKernel[] = [CPU_WASM_RELAXED, CPU_WASM_SIMD];

/**
 * A GEMM with a prepacked rhs (src/api.ts): the problem is validated and planned (the output program
 * encoded, the regions laid out, the threads' calls written) once; a later call whose problem equals it
 * in everything but the lhs data runs that plan again, with no validation but the lhs's shape and type
 * (part of the comparison) and, while no other GEMM ran in between, no write but the lhs.
 * `validate` normalizes the problem (throwing an InputError on bad input) when there is no such plan.
 */
export async function runPrepacked(
  problem: Omit<GemmProblem, 'rhs'>,
  x: CpuPackedOperand,
  validate: (problem: Omit<GemmProblem, 'rhs'>) => Promise<NormalizedProblem>,
): Promise<GemmResult> {
  const b = blocks.get(x);
  const last = b?.plan;
  const hit = !!b && !!last && !x.destroyed && sameProblem(problem, last.input);
  const input = hit ? null : snapshotProblem(problem);
  // The plan keeps a problem of its own: a replay must not read a vector the caller edited since.
  const own = () => validate(ownedProblem(problem));
  if (!hit) liveBlock(x, await engine()); // before validate, whose kernel check would blame the kernel
  const p = hit ? null : await own();
  return serialized(async () => {
    const e = await engine();
    if (!e || !b) throw new InputError('rhs', 'this prepacked operand was destroyed');
    const threads = wasmThreads(e);
    if (hit && last && b.plan === last && last.threads === threads) {
      rhsBlockFor(x, e, last.p, x.kernel); // destroyed, or its engine replaced, since: the InputError
      return runPlan(e, last.plan, { ...last.p, lhs: { ...last.p.lhs, data: problem.lhs.data } });
    }
    const q = p ?? (await own());
    const block = rhsBlockFor(x, e, q, x.kernel);
    const plan = makePlan(e, q, block.kind, undefined, threads, e.relaxed, block, true);
    block.plan = { p: q, plan, threads, input: input ?? snapshotProblem(problem) };
    return runPlan(e, plan, q, true);
  });
}
