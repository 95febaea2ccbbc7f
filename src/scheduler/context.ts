// GpuContext: one device for GEMMs (pack -> gemm -> output), its lifetime and its exclusive use. It
// acquires the device (or takes the caller's), keeps the resources of ./resources.ts on it, and runs
// each call while it holds the device alone, since error scopes are per device: a GEMM through
// ./gemm.ts (one submission, the kernel chosen by src/kernels/registry.ts), a prepack through
// ./prepack.ts, a read-back of a GpuMatrix, the release of one. A lost device is reported, never
// ignored: nothing here returns a number it did not verify came from a valid submission.

import { checkWarmupItems, warmupProblem, type WarmupItem } from './warmup.ts';
import { InputError } from '../errors.ts';
import { brief } from '../problem/echo.ts';
import { checkFunction, checkKnownKeys, checkProblemObject } from '../problem/check.ts';
import { acquireDevice, type AcquireOptions, checkAdapterOptions } from '../gpu/acquire.ts';
import type { AdapterSummary } from '../gpu/adapter.ts';
import { adapterCaps, type AdapterCaps, checkPlanLimits, type LoweredLimits, type PlanLimits } from '../gpu/caps.ts';
import { readBack } from '../gpu/readback.ts';
import { withDevice } from '../gpu/scopes.ts';
import { forcedKernelFromEnv, GPU_KERNELS } from '../kernels/registry.ts';
import { type GpuGemmKernel, kernelFormats } from '../kernels/types.ts';
import { PACK_FORMATS } from '../pack/formats.ts';
import { parseTuningTable, resolveTuning, type TuningChoice, type TuningTable, tuningAdapter } from '../kernels/tuning.ts';
import type { BitDepth, GemmResult, Operand } from '../types.ts';
import { inPlaceMatrix, type PlannedLhs, plannable, replay, replayOnGpu } from './call-plan.ts';
import { type GemmChain, runChain } from './chain-plan.ts';
import { type CallOptions, type GemmTiming, type GpuGemmProblem, type KernelChoice, type LastRun, runGemm } from './gemm.ts';
import {
  checkMatrix,
  checkMatrixBuffer,
  checkMatrixShape,
  claimMatrix,
  type GpuMatrix,
  type GpuOperandInput,
  isGpuMatrix,
  isHandedOut,
  type PackedOperand,
} from './operands.ts';
import { prepackOperand, prepackPatches } from './prepack.ts';
import type { PatchGeometry } from '../pack/patches.ts';
import { DeviceResources } from './resources.ts';
import { envTraceListener, type GemmTrace, type TraceListener, Tracer } from './trace.ts';

export type { ChainLayer, GemmChain } from './chain-plan.ts';
export type { GemmTiming, GemmTrace, GpuGemmProblem, GpuMatrix, GpuOperandInput, LastRun, PackedOperand };
export type { PatchOperand } from './patches.ts';

/** Options of one ctx.gemm() call. */
export interface GemmCallOptions {
  /** Receives the trace of the call: the time of each of its steps (./trace.ts). QGEMM_TRACE=1 prints it. */
  onTrace?: TraceListener | undefined;
}

export interface GpuContextOptions extends Partial<AcquireOptions> {
  /** Lower the limits the scheduler plans with (never above the device's). */
  limits?: LoweredLimits | undefined;
  /** Run this kernel (an id of src/kernels/registry.ts GPU_KERNELS) instead of the registry's choice. */
  kernel?: string | undefined;
  /** Record GPU time with timestamp queries where the device offers them. */
  timestamps?: boolean | undefined;
  /** Where warnings go (a kernel disabled by its self-test, a tuning table passed but not used). Default: console.warn. */
  warn?: ((message: string) => void) | undefined;
  /**
   * A tuning table for this adapter (`qgemm tune`, src/kernels/tuning.ts), used where no table committed
   * with the library matches the adapter. A malformed table, or one of another adapter, is an InputError.
   */
  tuning?: TuningTable | unknown | undefined;
  /** What to call the table in messages and in `tuning.name` (describeDevice, `qgemm info`; the CLI passes the file's path). */
  tuningName?: string | undefined;
}

/** Whether x looks like a GPUDevice (what the library calls on one). */
export function isGpuDevice(x: unknown): x is GPUDevice {
  const d = x as GPUDevice | null;
  return (
    typeof d === 'object' &&
    d !== null &&
    typeof d.createBuffer === 'function' &&
    typeof d.queue === 'object' &&
    typeof d.limits === 'object' &&
    typeof d.features === 'object'
  );
}

const wrongType = (field: string, expected: string, got: unknown) => new InputError(field, `expected ${expected}, got ${brief(got)}`);

/** The keys of GpuContextOptions (with AcquireOptions'), every one of them: the compiler checks the list. */
const CONTEXT_OPTIONS: Record<keyof GpuContextOptions, true> = {
  device: true,
  allowSoftware: true,
  dawnPath: true,
  powerPreference: true,
  toggles: true,
  limits: true,
  kernel: true,
  timestamps: true,
  warn: true,
  tuning: true,
  tuningName: true,
};
const CONTEXT_OPTION_KEYS = Object.keys(CONTEXT_OPTIONS) as (keyof GpuContextOptions)[];

/** The GpuContextOptions among a library call's options (a gemm's `backend`, `onKernel`... left out). */
export function contextOptions(opts: GpuContextOptions): GpuContextOptions {
  return Object.fromEntries(CONTEXT_OPTION_KEYS.filter((k) => opts[k] !== undefined).map((k) => [k, opts[k]]));
}

/**
 * Options of GpuContext.create (and of the library's calls, which take `more` keys) of the wrong type, or
 * a key they do not have (a misspelt `backnd` would run the default): an InputError naming the option,
 * before any device.
 */
export function checkContextOptions(opts: unknown, more: readonly string[] = []): asserts opts is GpuContextOptions {
  if (!opts || typeof opts !== 'object' || Array.isArray(opts)) throw wrongType('options', 'an object', opts);
  checkKnownKeys('', opts, [...CONTEXT_OPTION_KEYS, ...more]);
  const o = opts as Record<string, unknown>;
  if (o.device !== undefined && !isGpuDevice(o.device)) throw wrongType('device', 'a GPUDevice', o.device);
  checkFunction('warn', o.warn);
  checkAdapterOptions(opts); // dawnPath, powerPreference, toggles
  for (const key of ['kernel', 'tuningName']) {
    if (o[key] !== undefined && typeof o[key] !== 'string') throw wrongType(key, 'a string', o[key]);
  }
  for (const key of ['timestamps', 'allowSoftware']) {
    if (o[key] !== undefined && typeof o[key] !== 'boolean') throw wrongType(key, 'true or false', o[key]);
  }
  // Whatever backend runs: a malformed table or limit fails before any device (or the CPU).
  if (o.tuning !== undefined) parseTuningTable(o.tuning);
  checkPlanLimits(o.limits);
}

/** A call's `timing` and options ({ onTrace }) of the wrong type: an InputError naming them, before any work. */
export function checkCallArguments(timing: unknown, opts: unknown): void {
  if (timing !== undefined && (timing === null || typeof timing !== 'object')) throw wrongType('timing', 'an object { gpuMs }', timing);
  if (opts === undefined) return;
  if (opts === null || typeof opts !== 'object') throw wrongType('options', 'an object', opts);
  checkFunction('onTrace', (opts as GemmCallOptions).onTrace);
}

/** fn's result, or its error as a rejected promise (a check that throws fails the call's promise). */
function rejecting<T>(fn: () => Promise<T>): Promise<T> {
  try {
    return fn();
  } catch (e) {
    return Promise.reject(e);
  }
}

/** Where createGpuContextWith hands its kernel list in (not a public option). */
const KERNELS = Symbol('kernels');
/** Where createGpuContextAsHardware asks for the hardware configurations (not a public option). */
const AS_HARDWARE = Symbol('as hardware');
/** Where createGpuContextTuningFirst puts the table passed before a committed one (not a public option). */
const TUNING_FIRST = Symbol('tuning first');
type InternalOptions = GpuContextOptions & {
  [KERNELS]?: readonly GpuGemmKernel[];
  [AS_HARDWARE]?: boolean;
  [TUNING_FIRST]?: boolean;
};

export class GpuContext {
  readonly device: GPUDevice;
  readonly summary: AdapterSummary;
  readonly caps: AdapterCaps;
  private ran: Readonly<LastRun> = Object.freeze({ kernel: null, packDispatches: 0, gemmDispatches: 0, patchesGathered: false });
  private readonly resources: DeviceResources;
  private readonly choice: KernelChoice;
  /** The tuning table that serves this device (committed, the caller's, or none: the rules). */
  readonly tuning: TuningChoice;
  /** The context acquired the device itself (not passed in), so destroy() destroys it too. */
  private readonly ownsDevice: boolean;

  private constructor(
    device: GPUDevice,
    summary: AdapterSummary,
    caps: AdapterCaps,
    ownsDevice: boolean,
    opts: GpuContextOptions,
    tuning: TuningChoice,
  ) {
    this.device = device;
    this.summary = summary;
    this.caps = caps;
    this.ownsDevice = ownsDevice;
    this.tuning = tuning;
    const warn = opts.warn ?? ((m: string) => console.warn(m));
    this.choice = { force: opts.kernel, warn, kernels: (opts as InternalOptions)[KERNELS], tuned: tuning };
    this.resources = new DeviceResources(device, summary, caps, !!opts.timestamps && caps.timestamps);
  }

  static async create(opts: GpuContextOptions = {}): Promise<GpuContext> {
    checkContextOptions(opts); // a malformed table, limit or toggle too, before any device
    const acquired = await acquireDevice({ allowSoftware: opts.allowSoftware ?? true, ...opts });
    const info = acquired.adapter?.info ?? (acquired.device as { adapterInfo?: unknown }).adapterInfo;
    const caps = adapterCaps(acquired.device, acquired.summary, acquired.hasDot4, info, opts.limits);
    caps.toggles = acquired.toggles;
    if ((opts as InternalOptions)[AS_HARDWARE]) caps.slowCompiler = false;
    const owns = acquired.source !== 'user';
    let tuning: TuningChoice;
    try {
      const user = opts.tuning === undefined ? undefined : { table: opts.tuning, name: opts.tuningName };
      tuning = resolveTuning(tuningAdapter(acquired.summary), user, {
        warn: opts.warn ?? ((m) => console.warn(m)),
        passedFirst: !!(opts as InternalOptions)[TUNING_FIRST],
      });
    } catch (e) {
      if (owns) acquired.device.destroy();
      throw e;
    }
    return new GpuContext(acquired.device, acquired.summary, caps, owns, opts, tuning);
  }

  /** The limits the scheduler plans with. */
  get limits(): PlanLimits {
    return this.caps.limits;
  }

  /** 'native' where WGSL has dot4U8Packed, else 'emulated' (the manual unpack). */
  get dot4(): 'native' | 'emulated' {
    return this.caps.dot4 ? 'native' : 'emulated';
  }

  /** What the last GEMM on this context ran: its kernel and how it was split (read-only). */
  get lastRun(): Readonly<LastRun> {
    return this.ran;
  }

  /** True once the device is lost or destroyed: make a new context. */
  get lost(): boolean {
    return this.resources.lost;
  }

  /**
   * Why: 'destroyed' after destroy(), else the device's loss as `reason: message` (GPUDeviceLostInfo);
   * null while the device serves. A DeviceLostError of this context carries the same `reason`.
   */
  get lostReason(): string | null {
    return this.resources.goneReason;
  }

  /**
   * Runs fn with this context's device to itself: GPU calls on one device run one at a time, since
   * error scopes are per device. Other kernels on the same device (elementwise ops) use it.
   */
  exclusive<T>(fn: () => Promise<T>): Promise<T> {
    return withDevice(this.device, fn);
  }

  /**
   * dst = pipeline(lhs * rhs) with data read back to the CPU (one submission: gemm and the copy, and one
   * map). `timing` asks for the GPU time (timestamp queries, where the context records them); a call
   * without it resolves no query. A repeated call with a prepacked rhs and a CPU or GpuMatrix lhs (or a
   * convolution's patches) runs a plan (./call-plan.ts) made by its first call (a GpuMatrix: by its
   * second, ./plans.ts inPlaceWorthPlanning).
   */
  gemm(problem: GpuGemmProblem, timing?: GemmTiming, opts: GemmCallOptions = {}): Promise<GemmResult> {
    return rejecting(() => {
      checkProblemObject(problem);
      checkCallArguments(timing, opts);
      const listener = opts?.onTrace ?? envTraceListener();
      const trace = listener ? new Tracer() : undefined;
      return this.exclusive(async () => {
        const result = await this.gemmHeld(problem, timing, trace);
        if (trace && listener) listener(trace.finish());
        return result;
      });
    });
  }

  /** gemm() while this call holds the device: through a plan where one serves, else runGemm (making a plan where one applies). */
  private async gemmHeld(problem: GpuGemmProblem, timing: GemmTiming | undefined, trace: Tracer | undefined): Promise<GemmResult> {
    const r = this.resources;
    r.checkAlive(); // a destroyed context's matrices look released: the context's state is the error
    const planned = plannable(problem);
    const lhsMatrix = planned ? inPlaceMatrix(r, problem.lhs) : null;
    const hit = planned ? r.plans.find(problem, lhsMatrix) : null;
    if (hit) {
      if (trace) Object.assign(trace, { plan: 'hit', kernel: hit.ran.kernel });
      const result = await replay(r, hit, problem.lhs as PlannedLhs, timing, trace);
      this.ran = hit.ran;
      return result;
    }
    const plan = planned && r.plans.inPlaceWorthPlanning(lhsMatrix) ? r.plans.builder() : undefined;
    const call: CallOptions = { trace, plan };
    let run: Awaited<ReturnType<typeof runGemm>> | undefined;
    try {
      run = await this.run(problem, timing, true, call);
      const result = await run.result!.catch(async (e) => {
        throw await r.lostOr(e);
      });
      if (trace) Object.assign(trace, { plan: plan ? 'new' : 'none', kernel: run.ran.kernel });
      trace?.mark('copyOut');
      const lhsSource = lhsMatrix?.buffer ?? run.lhsSource;
      if (plan && planned && lhsSource) {
        const label = `gemm ${run.dst.rows}x${run.dst.cols}`;
        r.plans.add(plan, problem, { ran: this.ran, lhsSource, lhsMatrix, dst: run.dst, label });
      } else if (plan) r.plans.discard(plan);
      return result;
    } catch (e) {
      if (plan) r.plans.discard(plan);
      throw e;
    } finally {
      if (run && !plan) r.release(run.dst.buffer);
    }
  }

  /**
   * dst = pipeline(lhs * rhs), left on the GPU. dst.buffer stays the context's: the caller reads it, binds
   * it or copies from it until it gives the matrix back with releaseMatrix, and never destroys it (the
   * buffer goes on to later calls; ctx.destroy() frees it with the rest). A repeated
   * call with a prepacked rhs and a CPU lhs, or the same GpuMatrix lhs (either as a convolution's patch
   * input too), runs a plan made by its first call
   * (./call-plan.ts replayOnGpu). Such a plan owns the dst it hands out: it is not replayed while the
   * caller holds that matrix (another plan, or a call without one, serves meanwhile), and runs again once
   * releaseMatrix gives the matrix back; so a held matrix is never written by a later call. `onTrace`
   * times its steps as gemm()'s, the wait being for the GPU's work (awaited only while tracing); map and
   * copyOut are 0. Not QGEMM_TRACE: the tuner and the bench measure through this call (Sequential.run
   * passes the variable's listener on for its layers).
   */
  gemmOnGpu(problem: GpuGemmProblem, timing?: GemmTiming, opts: GemmCallOptions = {}): Promise<GpuMatrix> {
    return this.exclusive(async () => {
      checkProblemObject(problem);
      checkCallArguments(timing, opts);
      const listener = opts?.onTrace;
      const trace = listener ? new Tracer() : undefined;
      const matrix = await this.gemmOnGpuHeld(problem, timing, trace);
      if (trace && listener) {
        try {
          await this.device.queue.onSubmittedWorkDone();
          trace.mark('wait');
          listener(trace.finish());
        } catch (e) {
          this.releaseMatrix(matrix); // the caller never gets it: the context takes it back
          throw e;
        }
      }
      return matrix;
    });
  }

  /** gemmOnGpu() while this call holds the device: through a plan where one serves, else runGemm (making a plan where one applies). */
  private async gemmOnGpuHeld(problem: GpuGemmProblem, timing: GemmTiming | undefined, trace: Tracer | undefined): Promise<GpuMatrix> {
    const r = this.resources;
    r.checkAlive(); // as in gemmHeld
    if (!plannable(problem)) {
      const run = await this.run(problem, timing, false, { trace });
      if (trace) trace.kernel = run.ran.kernel;
      return claimMatrix(r, run.dst);
    }
    const { lhs } = problem;
    const lhsMatrix = inPlaceMatrix(r, lhs);
    const hit = r.plans.findOnGpu(problem, lhsMatrix);
    if (hit) {
      if (trace) Object.assign(trace, { plan: 'hit', kernel: hit.ran.kernel });
      await replayOnGpu(r, hit, lhs, timing, trace);
      hit.busy = true;
      this.ran = hit.ran;
      return claimMatrix(r, { ...hit.dst });
    }
    const plan = r.plans.roomOnGpu(problem.rhs) && r.plans.inPlaceWorthPlanning(lhsMatrix) ? r.plans.builder() : undefined;
    let run: Awaited<ReturnType<typeof runGemm>>;
    try {
      run = await this.run(problem, timing, false, { plan, trace });
    } catch (e) {
      if (plan) r.plans.discard(plan);
      throw e;
    }
    if (trace) Object.assign(trace, { plan: plan ? 'new' : 'none', kernel: run.ran.kernel });
    if (plan) {
      // The upload buffer a CPU lhs is written into on replay (runGemm always makes one); a GpuMatrix lhs is read where it is.
      const lhsSource = lhsMatrix ? lhsMatrix.buffer : run.lhsSource!;
      const label = `gemm ${run.dst.rows}x${run.dst.cols}`;
      r.plans.addOnGpu(plan, problem, { ran: this.ran, lhsSource, dst: run.dst, label, lhsMatrix });
    }
    return claimMatrix(r, { ...run.dst }); // the caller's own object: the plan keeps run.dst, as a replay hands out copies
  }

  /**
   * A chain of GEMMs, each reading the previous one's dst as its lhs (kept on the GPU), the last dst read
   * back: through a plan made by the chain's first call, one command buffer, one submit and one map
   * (./chain-plan.ts). `timing` receives the GPU time of the chain.
   */
  gemmChain(chain: GemmChain, timing?: GemmTiming, opts: GemmCallOptions = {}): Promise<GemmResult> {
    return rejecting(() => {
      checkCallArguments(timing, opts);
      const listener = opts?.onTrace ?? envTraceListener();
      const trace = listener ? new Tracer() : undefined;
      return this.exclusive(async () => {
        const { result, ran } = await runChain(this.resources, this.choice, chain, timing, trace);
        this.ran = Object.freeze(ran);
        if (trace && listener) listener(trace.finish());
        return result;
      });
    });
  }

  /** Reads a GPU matrix back into a dense typed array in its own storage order. */
  read(m: GpuMatrix): Promise<GemmResult> {
    const r = this.resources;
    return this.exclusive(async () => {
      r.checkAlive();
      checkMatrix(r, m, 'matrix');
      // Read back in whole 4-byte words (gpu/matrix.ts matrixBytes).
      checkMatrixShape(m, 'matrix', ['uint8', 'int8', 'int16', 'int32']);
      checkMatrixBuffer(m, 'matrix', 'copy');
      try {
        return await readBack(this.device, m, r.staging);
      } catch (e) {
        throw await r.lostOr(e);
      }
    });
  }

  /**
   * Gives back a dst that gemmOnGpu handed out (to the pool, or to its plan); the matrix and its copies
   * can no longer be used. Its buffer must not have been destroyed: later calls would be given it.
   */
  releaseMatrix(m: GpuMatrix): void {
    const r = this.resources;
    if (r.isDestroyed && m && typeof m === 'object' && isGpuMatrix(m)) return; // everything was freed already
    checkMatrix(r, m, 'matrix');
    if (!isHandedOut(r, m)) throw new InputError('matrix', 'this GpuMatrix was not made by gemmOnGpu of this context');
    r.handedOut.delete(m.buffer);
    if (!r.plans.releaseDst(m.buffer)) r.pool.release(m.buffer); // a gemmOnGpu plan's dst goes back to its plan
  }

  /**
   * Packs a constant operand once, with its row (lhs) or column (rhs) sums, for reuse across calls.
   * With `bitDepth`, the operand is requantized as a GEMM with that bitDepth would (same K, same N).
   */
  prepack(side: 'lhs' | 'rhs', operand: Operand | GpuMatrix, bitDepth?: BitDepth): Promise<PackedOperand> {
    return this.exclusive(() => {
      const { rows, valueBits } = this.prepackFor(side);
      return prepackOperand(this.resources, side, operand, bitDepth, rows, valueBits);
    });
  }

  /**
   * What a prepack must serve: the kernel this context is forced to (`kernel`, or QGEMM_KERNEL: its row
   * padding and value width), else every kernel its tuning table names (a table's 256-wide tiling reads
   * 256-row packs; rows 0 where none).
   */
  private prepackFor(side: 'lhs' | 'rhs'): { rows: number; valueBits?: 4 | 8 } {
    const id = this.choice.force ?? forcedKernelFromEnv();
    const forced = [...(this.choice.kernels ?? GPU_KERNELS), ...this.tuning.kernels].find((x) => x.id === id);
    const formats = (forced ? [forced] : this.tuning.kernels).map((k) => PACK_FORMATS[kernelFormats(k)[side]]);
    const rows = Math.max(0, ...formats.map((f) => f.rowAlign));
    return forced ? { rows, valueBits: formats[0].valueBits } : { rows };
  }

  /**
   * A convolution's lhs packed straight from its NHWC input (implicit im2col: no patch matrix in memory),
   * padded positions holding `zeroPoint`: a PackedOperand of patchShape(geometry) rows x cols to multiply
   * by the filter (OHWI [O, KH, KW, C] is the rhs [K, O] column-major) in `gemm`. src/pack/patches.wgsl.
   * The input may be a GpuMatrix [batch * height * width, channels] (row-major), e.g. a previous GEMM's dst.
   * `timing` receives the GPU time of the pack's pass, as gemm's does. For one GEMM, `gemm({ lhs: { input,
   * geometry, zeroPoint }, ... })` takes the same patches inside the GEMM's own pass (one submission; a
   * kernel gathers them itself with no pack dispatch, except the '-dd' tilings, the few tilings that
   * cannot gather, and the gemv on a software adapter, which get them packed first in that pass).
   */
  packPatches(
    input: Uint8Array | Int8Array | GpuMatrix,
    geometry: PatchGeometry,
    zeroPoint: number,
    timing?: GemmTiming,
  ): Promise<PackedOperand> {
    return rejecting(() => {
      checkCallArguments(timing, undefined);
      return this.exclusive(() => prepackPatches(this.resources, input, geometry, zeroPoint, timing));
    });
  }

  /**
   * Compiles ahead: runs each listed GEMM (a problem, or a shape `{ m, n, k, pipeline? }` on zero-filled
   * operands) once, so that the pipelines their kernels need exist before the first real call. Resolves
   * to the kernel ids it compiled for, in order. See ./warmup.ts.
   */
  async warmup(items: WarmupItem[]): Promise<string[]> {
    checkWarmupItems(items);
    const kernels: string[] = [];
    for (const [i, item] of items.entries()) {
      const field = `items[${i}]`;
      const problem = warmupProblem(item, field);
      await this.gemm(problem).catch((e: unknown) => {
        // the problem's fields are the item's; the context's own (its forced kernel) are not
        const head = e instanceof InputError ? e.field.split(/[.[]/)[0] : '';
        if (!(e instanceof InputError) || !(Object.hasOwn(problem, head) || head === 'problem')) throw e;
        const at = head === 'problem' ? field + e.field.slice('problem'.length) : `${field}.${e.field}`;
        throw new InputError(at, e.message.slice(e.field.length + 2));
      });
      kernels.push(this.lastRun.kernel ?? 'unknown');
    }
    return kernels;
  }

  /**
   * Frees every buffer of this context (GpuMatrix results, prepacked operands and patches included: they
   * read `destroyed`) and a device it acquired itself; a device the caller gave is left alive.
   */
  destroy(): void {
    this.resources.destroy(this.ownsDevice);
  }

  /** One GEMM through ./gemm.ts, recorded as lastRun. */
  private async run(problem: GpuGemmProblem, timing: GemmTiming | undefined, readback: boolean, call: CallOptions = {}) {
    const run = await runGemm(this.resources, this.choice, problem, timing, readback, call);
    this.ran = Object.freeze(run.ran);
    return run;
  }
}

export { isGpuMatrix };

/**
 * A context that chooses among `kernels` instead of the registry's list: for `qgemm verify` (which also
 * runs kernels the registry never picks, such as the emulated subgroup-matrix variant) and the tests.
 * Internal: not exported by the package.
 */
export function createGpuContextWith(kernels: readonly GpuGemmKernel[], opts: GpuContextOptions = {}): Promise<GpuContext> {
  return GpuContext.create({ ...opts, [KERNELS]: kernels } as InternalOptions);
}

/**
 * A context that compiles and packs as on a hardware adapter (AdapterCaps.slowCompiler false) even on a
 * software one: for the tests, so that SwiftShader runs the configurations GPUs run (the transposing
 * pack, the dot4 kernels' full k step). Internal: not exported by the package.
 */
export function createGpuContextAsHardware(opts: GpuContextOptions = {}): Promise<GpuContext> {
  return GpuContext.create({ ...opts, [AS_HARDWARE]: true } as InternalOptions);
}

/**
 * A context whose `tuning` table serves before a table committed for its adapter: for the bench's
 * `--tuning`, which measures the table it is given (a fresh `qgemm tune` on a GPU that has a committed
 * table). Internal: not exported by the package.
 */
export function createGpuContextTuningFirst(opts: GpuContextOptions = {}): Promise<GpuContext> {
  return GpuContext.create({ ...opts, [TUNING_FIRST]: true } as InternalOptions);
}
