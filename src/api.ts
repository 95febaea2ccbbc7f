// The library's entry points (the CLI, the benchmark and `gemm()` share them) and backend selection:
// 'cpu' runs the CPU kernel the registry picks (src/kernels/registry.ts); 'webgpu' runs
// pack -> gemm -> output on a WebGPU device, software adapters included, and fails clearly without one;
// 'auto' uses a hardware adapter when there is one and the CPU otherwise (a software adapter is slower
// than the CPU path: see the README); an rhs prepacked for the CPU (prepackCpu) keeps a GEMM on the CPU.
// The problem is validated before any device is asked for. One GpuContext per kind is kept and re-made
// after a device loss; a call that meets a loss is retried once on a fresh device, and 'auto' then falls
// back to the CPU with a warning. The elementwise ops
// (src/problem/elementwise.ts) take the same route: the reference evaluation on the CPU, elementwise/gpu.ts
// on a device.

import { DeviceLostError, GpuOutOfMemoryError, InputError, LimitExceededError, NoAdapterError } from './errors.ts';
import { isHardwareAdapterAvailable } from './gpu/acquire.ts';
import { runElementwisePlan } from './reference/elementwise.ts';
import type { ElementwiseProblem, ElementwiseResult } from './problem/elementwise.ts';
import { prepareElementwise } from './problem/elementwise-plan.ts';
import { readyCpuCaps, type CpuCapsReport } from './kernels/cpu-caps.ts';
import type { AdapterSummary } from './gpu/adapter.ts';
import type { AdapterCaps, PlanLimits } from './gpu/caps.ts';
import { checkPackedBitDepth, isCpuPacked, runPrepacked } from './kernels/cpu-wasm/kernel.ts';
import { kernelIds, selectCpuKernel } from './kernels/registry.ts';
import { describeTuning, type TuningTable } from './kernels/tuning.ts';
import type { CpuPackedOperand } from './kernels/types.ts';
import { allocationLimit } from './problem/dst.ts';
import { normalizeProblem, PREPACKED_ON_GPU } from './problem/problem.ts';
import type { GemmProblem, GemmResult, Operand } from './types.ts';
import { elementwiseOnGpu } from './elementwise/gpu.ts';
import {
  checkContextOptions,
  contextOptions,
  type GemmTrace,
  GpuContext,
  type GpuContextOptions,
  isGpuDevice,
} from './scheduler/context.ts';
import { brief } from './problem/echo.ts';
import { isGpuMatrix } from './gpu/matrix.ts';
import { isPacked } from './scheduler/operands.ts';
import { checkFunction, checkProblemObject } from './problem/check.ts';

export type Backend = 'cpu' | 'webgpu' | 'auto';

/** A GEMM problem whose rhs may be prepacked for the CPU path (prepackCpu). */
export type GemmInput = Omit<GemmProblem, 'rhs'> & { rhs: Operand | CpuPackedOperand };
type GemmOp = { op: 'gemm'; problem: GemmInput };
/** add/sub/mul/alignedAdd/alignedSub (src/problem/elementwise.ts). */
type ElementwiseRunOp = { op: 'elementwise'; problem: ElementwiseProblem };
export type Op = GemmOp | ElementwiseRunOp;
type Ran<R> = R & { backend: 'cpu' | 'webgpu' };

export interface RunOptions extends GpuContextOptions {
  /** Called with a warning (a CPU fallback of `'auto'`, a kernel its self-test disabled, a tuning table not used). Default: console.warn. */
  warn?: ((message: string) => void) | undefined;
  /** Called, once the GEMM is done, with the id of the kernel that ran (GPU: `ctx.lastRun.kernel`; CPU: the kernel's report). */
  onKernel?: ((kernel: string) => void) | undefined;
  /** WebGPU: called with the trace of the GEMM call, the time of each of its steps (src/scheduler/trace.ts). */
  onTrace?: ((trace: GemmTrace) => void) | undefined;
}

/**
 * Shared contexts, by device (a caller's, or 'acquired') and by the options that shape a context, the
 * most recently used last: at most MAX_SHARED_CONTEXTS of each (every option set owns a buffer pool, and
 * without a caller's device its own device). The least recently used one leaves its cache and is
 * destroyed once no call runs on it (`users`).
 */
interface Shared {
  ctx: Promise<GpuContext>;
  /** Calls running on it (onBackend): an evicted context is destroyed when the last one ends. */
  users: number;
  evicted: boolean;
}
const contexts = new Map<string, Shared>();
const deviceContexts = new WeakMap<GPUDevice, Map<string, Shared>>();

const MAX_SHARED_CONTEXTS = 4;

/** The one place the options that make two contexts differ are turned into a cache key. */
function contextKey(allowSoftware: boolean, opts: GpuContextOptions): string {
  const { kernel = '', limits = {}, timestamps = false, dawnPath = '', powerPreference = '', tuning = null, toggles = null } = opts;
  const sortedLimits = Object.entries(limits)
    .filter(([, v]) => v !== undefined) // a limit given as undefined is absent: the same context
    .sort(([a], [b]) => a.localeCompare(b));
  const tuningName = opts.tuningName ?? ''; // what ctx.tuning (describeDevice, qgemm info) calls the table
  return JSON.stringify([allowSoftware, kernel, sortedLimits, timestamps, dawnPath, powerPreference, tuning, tuningName, toggles]);
}

/**
 * The shared context of 'webgpu' (software adapters allowed) for these options, re-made once lost; with
 * `opts.device`, a context on that device.
 */
export async function sharedContext(opts: GpuContextOptions = {}): Promise<GpuContext> {
  return (await sharedEntry(true, opts, false)).ctx;
}

/** Runs fn on the shared context (sharedContext), which an eviction meanwhile destroys only once fn is done. */
async function onSharedContext<R>(allowSoftware: boolean, opts: GpuContextOptions, fn: (ctx: GpuContext) => Promise<R>): Promise<R> {
  const entry = await sharedEntry(allowSoftware, opts, true);
  try {
    return await fn(await entry.ctx);
  } finally {
    if (--entry.users === 0 && entry.evicted) destroyWhenIdle(entry);
  }
}

/** The cache entry sharedContext serves, most recently used now; `use` counts a user from the moment it is chosen. */
async function sharedEntry(allowSoftware: boolean, opts: GpuContextOptions, use: boolean): Promise<Shared> {
  let cache = contexts;
  if (opts.device) {
    cache = deviceContexts.get(opts.device) ?? new Map();
    deviceContexts.set(opts.device, cache);
  }
  const key = contextKey(allowSoftware, opts);
  for (let existing = cache.get(key); existing; existing = cache.get(key)) {
    const ctx = await existing.ctx.catch(() => null);
    if (cache.get(key) !== existing) continue; // evicted or re-made meanwhile: look again
    cache.delete(key); // re-inserted last, the most recently used; or made anew below, lost
    if (ctx && !ctx.lost) {
      cache.set(key, existing);
      if (use) existing.users++;
      return existing;
    }
  }
  const entry: Shared = { ctx: GpuContext.create({ ...contextOptions(opts), allowSoftware }), users: use ? 1 : 0, evicted: false };
  cache.set(key, entry);
  entry.ctx.catch(() => cache.get(key) === entry && cache.delete(key));
  for (const [oldKey, old] of cache) {
    if (cache.size <= MAX_SHARED_CONTEXTS) break;
    cache.delete(oldKey);
    old.evicted = true;
    if (old.users === 0) destroyWhenIdle(old);
  }
  return entry;
}

/** Destroys an evicted context after the calls queued on its device. */
function destroyWhenIdle(entry: Shared): Promise<void> {
  return entry.ctx.then((ctx) => ctx.exclusive(async () => ctx.destroy())).catch(() => {});
}

/**
 * Destroys the contexts that gemm(), elementwise() and the layers share, and the GPU memory they hold
 * (buffer pools, plans): those on `device`, a caller's GPUDevice, which stays alive; without it, those
 * on the devices the library acquired itself, with the devices. A call running on one ends first (the
 * promise resolves when those without a call are destroyed); a later call makes a new context.
 */
export async function releaseSharedContexts(device?: GPUDevice): Promise<void> {
  if (device !== undefined && !isGpuDevice(device)) throw new InputError('device', `expected a GPUDevice, got ${brief(device)}`);
  const cache = device ? deviceContexts.get(device) : contexts;
  if (!cache) return;
  const idle: Promise<void>[] = [];
  for (const entry of cache.values()) {
    entry.evicted = true;
    if (entry.users === 0) idle.push(destroyWhenIdle(entry));
  }
  cache.clear();
  await Promise.all(idle);
}

/** Whether a hardware adapter exists, by the options that choose one (dawnPath, powerPreference, toggles). */
const hardware = new Map<string, Promise<boolean>>();

function hasHardware(opts: RunOptions): Promise<boolean> {
  const key = JSON.stringify([opts.dawnPath ?? '', opts.powerPreference ?? '', opts.toggles ?? null]);
  let found = hardware.get(key);
  if (!found) {
    found = isHardwareAdapterAvailable(opts);
    hardware.set(key, found);
    found.catch(() => hardware.delete(key)); // a failure is not remembered
  }
  return found;
}

export function runOp(op: GemmOp, backend: Backend, opts?: RunOptions): Promise<Ran<GemmResult>>;
export function runOp(op: ElementwiseRunOp, backend: Backend, opts?: RunOptions): Promise<Ran<ElementwiseResult>>;
export async function runOp(op: Op, backend: Backend, opts: RunOptions = {}): Promise<Ran<GemmResult | ElementwiseResult>> {
  checkProblemObject(op.problem, op.op === 'gemm' ? 'a GemmProblem' : 'an ElementwiseProblem');
  checkOptions(opts);
  checkBackend(backend);
  checkKernelBackend(opts.kernel, backend);
  if (op.op === 'elementwise') {
    const plan = prepareElementwise(op.problem); // bad input fails here, before any device is asked for
    return onBackend(
      async () => runElementwisePlan(plan),
      (ctx) => ctx.exclusive(() => elementwiseOnGpu(ctx, plan)),
      backend,
      opts,
    );
  }
  const { rhs } = op.problem;
  checkNotGpuOperands(op.problem as GemmProblem);
  if (isCpuPacked(rhs)) return runPackedOnCpu({ ...op.problem, rhs }, backend, opts);
  const problem = { ...op.problem, rhs };
  const p = normalizeProblem(problem); // bad input fails here, before any device is asked for
  const cpu = async () => {
    const kernel = selectCpuKernel(await readyCpuCaps(), p, { force: opts.kernel });
    let ran = kernel.id;
    const result = await kernel.run(p, { ranAs: (id) => (ran = id) });
    opts.onKernel?.(ran);
    return result;
  };
  const gpu = async (ctx: GpuContext) => {
    const r = await ctx.gemm(problem, undefined, { onTrace: opts.onTrace });
    opts.onKernel?.(ctx.lastRun.kernel ?? 'unknown');
    return r;
  };
  return onBackend(cpu, gpu, backend, opts);
}

/**
 * A GpuContext's own operands (a prepacked one, a GpuMatrix) are read by that context's gemm only: given
 * here, each is an InputError that says so, not a complaint about its data.
 */
function checkNotGpuOperands(problem: GemmProblem): void {
  for (const side of ['lhs', 'rhs'] as const) {
    const x = problem[side] as unknown;
    if (!x || typeof x !== 'object' || ArrayBuffer.isView(x) || 'data' in x) continue; // not theirs: checked as data later
    if (isPacked(x)) throw new InputError(side, PREPACKED_ON_GPU);
    if (isGpuMatrix(x)) throw new InputError(side, "a GpuMatrix (a GPU buffer): run it with its GpuContext's gemm");
  }
}

/** A GEMM whose rhs was prepacked for the CPU: it runs the kernel that packed it, on the CPU ('cpu' or 'auto'). */
async function runPackedOnCpu(
  problem: Omit<GemmProblem, 'rhs'> & { rhs: CpuPackedOperand },
  backend: Backend,
  opts: RunOptions,
): Promise<Ran<GemmResult>> {
  const packed = problem.rhs;
  if (backend === 'webgpu') throw new InputError('rhs', 'prepacked for the CPU path (prepackCpu): run it with backend "cpu" or "auto"');
  if (opts.kernel && opts.kernel !== packed.kernel) throw new InputError('kernel', `the rhs was prepacked for ${packed.kernel}`);
  // A repeated problem reuses its plan (kernel.ts runPrepacked); validate runs only for a new one.
  const validate = async (q: Omit<GemmProblem, 'rhs'>) => {
    const shape = { data: packed.type === 'int8' ? new Int8Array(0) : new Uint8Array(0), rows: packed.rows, cols: packed.cols };
    const p = normalizeProblem({ ...q, rhs: shape }, { rhsShapeOnly: true });
    checkPackedBitDepth(packed, p);
    selectCpuKernel(await readyCpuCaps(), p, { force: packed.kernel });
    return p;
  };
  const result = await runPrepacked(problem, packed, validate);
  opts.onKernel?.(packed.kernel); // as for every other GEMM: the kernel that ran
  return { ...result, backend: 'cpu' };
}

/**
 * Refuses options that are not an object (a GEMM's, a layer's), naming `options`, and options of the
 * wrong type, naming the option (GpuContext.create's, and the callbacks): before any work.
 */
export function checkOptions(opts: unknown): asserts opts is RunOptions {
  checkContextOptions(opts, ['backend', 'onKernel', 'onTrace']);
  checkFunction('onKernel', (opts as RunOptions).onKernel);
  checkFunction('onTrace', (opts as RunOptions).onTrace);
}

/** A `kernel` of the other backend where the backend is named: an InputError ('auto' may run either). */
function checkKernelBackend(kernel: string | undefined, backend: Backend): void {
  if (kernel === undefined || backend === 'auto') return;
  const ids = kernelIds();
  const other = backend === 'cpu' ? ids.webgpu : ids.cpu;
  if (other.includes(kernel)) {
    const named = backend === 'cpu' ? 'WebGPU' : 'CPU';
    throw new InputError(
      'kernel',
      `${kernel} is a ${named} kernel; backend ${backend} runs ${(backend === 'cpu' ? ids.cpu : ids.webgpu).join(', ')}`,
    );
  }
}

function checkBackend(backend: unknown): asserts backend is Backend {
  if (!(BACKENDS as readonly unknown[]).includes(backend)) {
    throw new InputError('backend', `expected one of ${BACKENDS.map((b) => `"${b}"`).join(', ')}, got ${brief(backend)}`);
  }
}

/** Runs `cpu` or `gpu` (on the shared context) as `backend` says, with 'auto''s fallbacks and one retry on a lost device. */
export async function onBackend<R>(
  cpu: () => Promise<R>,
  gpu: (ctx: GpuContext) => Promise<R>,
  backend: Backend,
  opts: RunOptions,
): Promise<Ran<R>> {
  checkBackend(backend);
  const onCpu = async () => {
    try {
      return { ...(await cpu()), backend: 'cpu' as const };
    } catch (e) {
      throw allocationLimit(e, "the CPU path's arrays");
    }
  };
  if (backend === 'cpu') return onCpu();
  const allowSoftware = backend === 'webgpu';
  // 'auto' with a caller's device uses that device; without one, only a hardware adapter.
  if (!allowSoftware && !opts.device && !(await hasHardware(opts))) return onCpu();
  for (let attempt = 0; ; attempt++) {
    try {
      return { ...(await onSharedContext(allowSoftware || !!opts.device, opts, gpu)), backend: 'webgpu' };
    } catch (e) {
      const lost = e instanceof DeviceLostError;
      if (lost && attempt === 0) continue; // re-acquire a device and run again
      // 'auto' takes the CPU where the GPU cannot serve: no adapter, a device lost twice, a problem past its
      // limits (a storage binding, a buffer: the CPU path has none of them) or its memory.
      const cannot = lost || e instanceof NoAdapterError || e instanceof LimitExceededError || e instanceof GpuOutOfMemoryError;
      if (backend === 'auto' && cannot) {
        (opts.warn ?? console.warn)(`qgemm: ${(e as Error).message}; falling back to the CPU`);
        return onCpu();
      }
      throw e;
    }
  }
}

export interface GemmOptions extends RunOptions {
  /** Default 'auto': a hardware GPU if there is one, else the CPU. */
  backend?: Backend | undefined;
}

/** One GEMM (src/types.ts) on the chosen backend; the result says which backend ran it. */
export async function gemm(problem: GemmInput, options: GemmOptions = {}): Promise<GemmResult & { backend: 'cpu' | 'webgpu' }> {
  return runOp({ op: 'gemm', problem }, backendOf(options), options);
}

const BACKENDS = ['auto', 'cpu', 'webgpu'] as const;

/** options.backend, 'auto' when absent; options that are not an object are refused by runOp. */
function backendOf(options: GemmOptions): Backend {
  return options && typeof options === 'object' ? (options.backend === undefined ? 'auto' : options.backend) : 'auto';
}

/** One elementwise op (src/problem/elementwise.ts) on the chosen backend; the result says which backend ran it. */
export async function elementwise(problem: ElementwiseProblem, options: GemmOptions = {}): Promise<Ran<ElementwiseResult>> {
  return runOp({ op: 'elementwise', problem }, backendOf(options), options);
}

/** What describeDevice() finds: the WebGPU adapter (software allowed) and what the CPU path offers. */
export interface DeviceDescription {
  /** null when no WebGPU adapter was found (then `note` says why). */
  adapter: AdapterSummary | null;
  caps?: AdapterCaps | undefined;
  dot4?: 'native' | 'emulated' | undefined;
  limits?: PlanLimits | undefined;
  note?: string | undefined;
  /** The CPU kernel the registry picks, and the CPU's WebAssembly capabilities and thread count. */
  cpu: CpuCapsReport & { kernel: string };
  /** The tuning table that serves the adapter (src/kernels/tuning.ts), or none: the registry's rules. */
  tuning?: { source: 'committed' | 'user' | 'rules'; name: string; description: string; table: TuningTable | null } | undefined;
}

/**
 * What `qgemm info` prints: the adapter that --backend webgpu would use (null without one), its
 * capabilities, and the CPU's: the kernel 'cpu' runs, its threads (1 without a shared memory, as in a
 * page that is not cross-origin isolated), SIMD and relaxed SIMD.
 */
export async function describeDevice(opts: Pick<GpuContextOptions, 'tuning' | 'tuningName'> = {}): Promise<DeviceDescription> {
  checkContextOptions(opts);
  const caps = await readyCpuCaps();
  const one = { data: new Uint8Array(1), rows: 1, cols: 1, order: 'row-major' as const };
  const cpu = { kernel: selectCpuKernel(caps, normalizeProblem({ lhs: one, rhs: one })).id, ...caps };
  try {
    const ctx = await sharedContext(opts);
    const t = ctx.tuning;
    const tuning = { source: t.source, name: t.name, description: describeTuning(t), table: t.table };
    return { adapter: ctx.summary, caps: ctx.caps, dot4: ctx.dot4, limits: ctx.limits, cpu, tuning };
  } catch (e) {
    if (e instanceof NoAdapterError) return { adapter: null, note: e.message, cpu };
    throw e;
  }
}
