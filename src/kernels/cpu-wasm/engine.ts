// The WebAssembly engine of the CPU kernels, made once per process or page: it picks the module variant
// (binary.gen.ts) that this runtime validates (SIMD; relaxed SIMD; a shared memory for threads), makes
// the memory, starts a page's first worker (whether threads can run there: firstWorker), and decides
// whether relaxed SIMD may be used. Relaxed `i32x4.relaxed_dot_i8x16_i7x16_add_s`
// is implementation-defined when the 7-bit operand has its top bit set, so it is used only when
//   - the runtime validates it (Node 20: only behind a flag),
//   - a probe run many times (optimized code included: Node 20's baseline tier doubled the result)
//     gives, on every run, exact unsaturated usdot or sdot results (Node 22 lowers to the saturating
//     pmaddubsw), and
//   - the relaxed GEMM, warmed up, equals the exact 16-bit kernel bit for bit on random problems;
// and not when the caller opts out (configureWasm({ relaxedSimd: false }) or QGEMM_RELAXED_SIMD=0).
// Where the 7-bit operand stays in 0..127, every lowering (usdot, sdot, the saturating pmaddubsw, whose
// pair sums then stay below 2^15) gives the same exact result: the 4-bit kernels use relaxed SIMD so
// (`dot7`, gen-dot7.ts) wherever the runtime validates it, its own probe agrees and the caller has not
// opted out, even where the 8-bit relaxed kernel is refused.

import { InputError } from '../../errors.ts';
import { checkKnownKeys } from '../../problem/check.ts';
import { WASM_BINARIES } from './binary.gen.ts';
import { MAX_PAGES, variantName, type Variant } from './generate-names.ts';
import { CONTROL } from './job.ts';
import { DATA_START } from './layout.ts';
import { coreCount, isNode, WorkerPool } from './pool.ts';
import { processEnv } from '../../runtime.ts';

export type RelaxedMode = 'usdot' | 'sdot';
type WasmExports = Record<string, (...args: number[]) => number>;

export interface WasmEngine {
  module: WebAssembly.Module;
  memory: WebAssembly.Memory;
  exports: WasmExports;
  /** A shared memory: worker threads can run (unless threadsNote says they cannot start). */
  shared: boolean;
  /**
   * Why GEMMs run on one thread over a shared memory, or null: a page's first worker did not start (a
   * Content-Security-Policy whose worker-src forbids blob: URLs; firstWorker).
   */
  threadsNote: string | null;
  /** How relaxed dot products behave here, or null when the relaxed kernel must not run. */
  relaxed: RelaxedMode | null;
  /** Why relaxed SIMD is off, or how it was proven. */
  relaxedNote: string;
  /** Relaxed dot products with the 7-bit operand in 0..127 are exact here (the 4-bit kernels: gen-dot7.ts). */
  dot7: boolean;
  cores: number;
  /** Worker threads; made by the first prepackCpu or the first multi-threaded run (run.ts poolOf), in a page with the engine (firstWorker). */
  pool: WorkerPool | null;
  /**
   * Blocks of linear memory that outlive a GEMM (prepacked operands: kernel.ts prepackCpu), from DATA_START up,
   * in address order, sizes rounded up to 64 bytes; a GEMM's own regions start past the last (heapEnd).
   */
  blocks: { at: number; size: number; live: boolean }[];
}

/** The most threads one GEMM may use (the size of the pool's control block, job.ts). */
export const MAX_CPU_THREADS = CONTROL.maxThreads;

function threadsError(field: string, got: string): InputError {
  return new InputError(field, `expected an integer thread count in 1..${MAX_CPU_THREADS}, got ${got}`);
}

/** QGEMM_THREADS: unset or empty gives no count; else a decimal integer in 1..MAX_CPU_THREADS. */
export function parseThreadsEnv(text: string | undefined): number | undefined {
  if (text === undefined || text === '') return undefined;
  const n = /^[1-9]\d{0,5}$/.test(text) ? Number(text) : Number.NaN;
  if (!(n <= MAX_CPU_THREADS)) throw threadsError('QGEMM_THREADS', JSON.stringify(text.slice(0, 100)));
  return n;
}

export interface WasmOptions {
  /** Threads per GEMM (the caller's included), an integer in 1..MAX_CPU_THREADS (256). Default: the number of cores. */
  threads?: number | undefined;
  /** false: never use relaxed SIMD. Default: use it where it is proven exact. */
  relaxedSimd?: boolean | undefined;
  /**
   * How long a worker that finished a job waits spinning for the next one before it sleeps, in ms
   * (0..100; 0: it sleeps at once). A sleeping worker takes 60-200 µs to wake on a virtual machine, a
   * spinning one answers at once; it spins with `Atomics.pause` where that exists (Node 24+, Chrome
   * 133+), which leaves the core to its other hardware thread. Default: 1.
   */
  spinMs?: number | undefined;
}

const options: WasmOptions = {};
let engine: Promise<WasmEngine | null> | null = null;

/** Sets the thread count, the workers' spin and the relaxed-SIMD opt-out; a change of the latter re-makes the engine. */
export function configureWasm(o: WasmOptions): void {
  if (!o || typeof o !== 'object') throw new InputError('options', 'expected an object such as { threads: 2 }');
  checkKnownKeys('', o, ['threads', 'relaxedSimd', 'spinMs']); // a misspelt `thread` would be ignored
  const t: unknown = o.threads;
  if (t !== undefined && !(typeof t === 'number' && Number.isInteger(t) && t >= 1 && t <= MAX_CPU_THREADS)) {
    throw threadsError('threads', typeof t === 'string' ? JSON.stringify(t.slice(0, 100)) : String(t));
  }
  if (o.relaxedSimd !== undefined && typeof o.relaxedSimd !== 'boolean') {
    throw new InputError('relaxedSimd', `expected true or false, got ${String(o.relaxedSimd).slice(0, 100)}`);
  }
  const spin: unknown = o.spinMs;
  if (spin !== undefined && !(typeof spin === 'number' && spin >= 0 && spin <= 100)) {
    throw new InputError('spinMs', `expected a number of milliseconds in 0..100, got ${String(spin).slice(0, 100)}`);
  }
  if (t !== undefined) options.threads = t;
  if (spin !== undefined) options.spinMs = spin;
  if (o.relaxedSimd !== undefined && o.relaxedSimd !== options.relaxedSimd) {
    options.relaxedSimd = o.relaxedSimd;
    void engine?.then((e) => e?.pool?.close());
    engine = null;
  }
}

let envThreads: number | undefined | null = null;

/** Whether a GEMM may run on worker threads here: a shared memory, and workers that start. */
export const threadsRun = (e: WasmEngine): boolean => e.shared && e.threadsNote === null;

/** How long a page's first worker may take to start before GEMMs run on one thread. */
const WORKER_START_MS = 10_000;

/**
 * Starts the pool's first worker in a page (from a Blob URL, which a Content-Security-Policy may forbid):
 * null once it is ready (the engine keeps the pool), else why not (threadsNote: GEMMs then run on one
 * thread, where each would have failed with a WorkerLostError). Node's worker_threads need no such check.
 */
async function firstWorker(e: WasmEngine): Promise<string | null> {
  const pool = new WorkerPool(e.module, e.memory, e.exports);
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<string>((resolve) => {
    timer = setTimeout(() => resolve(`no worker started within ${WORKER_START_MS / 1000} s`), WORKER_START_MS);
  });
  const started = pool.ensure(1).then(
    () => null,
    (err: unknown) => (err instanceof Error ? err.message : String(err)),
  );
  const why = await Promise.race([started, late]);
  clearTimeout(timer);
  if (why === null) {
    e.pool = pool;
    return null;
  }
  pool.close();
  const csp = typeof Worker === 'function' ? '; a Content-Security-Policy must allow worker-src blob:' : '';
  return `worker threads cannot start in this page (${why}): GEMMs run on one thread${csp}`;
}

/**
 * Threads per GEMM: configureWasm({ threads }), else env QGEMM_THREADS (Node; read once, process.env
 * costs microseconds a call), else the cores; 1 without a shared memory.
 */
export function wasmThreads(e: WasmEngine): number {
  if (!threadsRun(e)) return 1;
  if (options.threads !== undefined) return options.threads;
  if (envThreads === null) {
    envThreads = parseThreadsEnv(processEnv()?.QGEMM_THREADS);
  }
  return envThreads ?? e.cores;
}

/** The workers' spin after a job, in µs (WasmOptions.spinMs). */
export function wasmSpinUs(): number {
  return Math.round(1000 * (options.spinMs ?? 1));
}

const bytesOf = (v: Variant) => Uint8Array.from(atob(WASM_BINARIES[variantName(v)]), (c) => c.charCodeAt(0));

function relaxedOptOut(): boolean {
  return options.relaxedSimd === false || processEnv()?.QGEMM_RELAXED_SIMD === '0';
}

function sharedMemoryAllowed(): boolean {
  if (typeof SharedArrayBuffer === 'undefined') return false;
  if (!isNode() && !(globalThis as { crossOriginIsolated?: boolean }).crossOriginIsolated) return false;
  try {
    new WebAssembly.Memory({ initial: 1, maximum: MAX_PAGES, shared: true });
    return true;
  } catch {
    return false;
  }
}

const PROBE_CASES: [number, number][] = [
  [-128, 255],
  [127, 255],
  [-128, 128],
  [5, 200],
  [-3, 7],
  [100, 129],
  [-1, 254],
];

/** The dot7 probe's cases: b (the 7-bit operand) in 0..127, a the full signed range. */
const DOT7_CASES: [number, number][] = [
  [-128, 127],
  [127, 127],
  [-128, 15],
  [127, 15],
  [-1, 1],
  [-77, 9],
  [5, 0],
];

/**
 * Runs both probes in rounds (letting the engine tier up between them): the relaxed mode every run of
 * the full-range probe agreed on, or null; whether every run of the 7-bit probe was exact.
 */
async function probeRelaxed(exports: WasmExports): Promise<{ mode: RelaxedMode | null; dot7: boolean }> {
  let seen: RelaxedMode | null | undefined;
  let dot7 = true;
  for (let round = 0; round < 12 && (seen !== null || dot7); round++) {
    const iters = round < 6 ? 3000 : 1;
    for (const [a, b] of seen === null ? [] : PROBE_CASES) {
      const got = exports.probe(a, b, iters) | 0;
      const mode: RelaxedMode | null =
        got === Math.imul(4 * iters, a * b) ? 'usdot' : got === Math.imul(4 * iters, a * ((b << 24) >> 24)) ? 'sdot' : null;
      if (mode === null || (seen !== undefined && seen !== mode)) {
        seen = null;
        break;
      }
      seen = mode;
    }
    for (const [a, b] of dot7 ? DOT7_CASES : []) if ((exports.probe7(a, b, iters) | 0) !== Math.imul(4 * iters, a * b)) dot7 = false;
    await new Promise((r) => setTimeout(r, 1));
  }
  return { mode: seen ?? null, dot7 };
}

/** Checks the relaxed kernel against the 16-bit one on this engine (self-check.ts); true when bit-exact. */
type SelfCheck = (e: WasmEngine, mode: RelaxedMode) => Promise<boolean>;
/** Runs the fastest kernel of this engine until the engine has optimized it (run.ts). */
type WarmUp = (e: WasmEngine) => Promise<void>;

/** Why there is no engine (wasmEngine resolved null): the CPU path then runs its JavaScript kernel. */
export let noEngineNote = 'no WebAssembly SIMD';

async function create(selfCheck: SelfCheck, warmUp: WarmUp): Promise<WasmEngine | null> {
  const plain: Variant = { relaxed: false, shared: false };
  if (!WebAssembly.validate(bytesOf(plain))) return null; // no WebAssembly SIMD
  const shared = sharedMemoryAllowed();
  const wantRelaxed = !relaxedOptOut();
  const relaxedValid = WebAssembly.validate(bytesOf({ relaxed: true, shared: false }));
  const variant: Variant = { relaxed: relaxedValid, shared };
  let module: WebAssembly.Module;
  let instance: WebAssembly.Instance;
  const memory = new WebAssembly.Memory({ initial: 1, maximum: MAX_PAGES, shared });
  try {
    module = await WebAssembly.compile(bytesOf(variant));
    instance = await WebAssembly.instantiate(module, { env: { memory } });
  } catch (err) {
    // Validated, yet not compiled: a page whose Content-Security-Policy forbids compiling WebAssembly.
    const why = err instanceof Error ? err.message.split('\n')[0].slice(0, 200) : String(err);
    noEngineNote = `WebAssembly cannot be compiled here (${why}): a Content-Security-Policy must allow 'wasm-unsafe-eval'`;
    return null;
  }
  const e: WasmEngine = {
    module,
    memory,
    exports: instance.exports as unknown as WasmExports,
    shared,
    relaxed: null,
    dot7: false,
    relaxedNote: !relaxedValid ? 'relaxed SIMD not validated by this runtime' : 'opted out',
    cores: await coreCount(),
    pool: null,
    threadsNote: null,
    blocks: [],
  };
  if (shared && !isNode()) e.threadsNote = await firstWorker(e);
  if (relaxedValid && wantRelaxed) {
    const { mode, dot7 } = await probeRelaxed(e.exports);
    e.dot7 = dot7;
    if (!mode) e.relaxedNote = 'probe: relaxed dot is saturating or inconsistent here';
    else {
      const ok = await selfCheck(e, mode).catch(() => false); // a check that throws fails
      e.relaxed = ok ? mode : null;
      e.relaxedNote = ok
        ? `${mode}, exact (probe and self-check against the 16-bit kernel)`
        : 'self-check against the 16-bit kernel failed';
    }
    e.relaxedNote += dot7 ? '; 7-bit dot exact: 4-bit weights use it' : '; 7-bit dot probe failed';
  }
  await warmUp(e);
  return e;
}

/** The first byte past the blocks that outlive a GEMM: where a GEMM's own regions start. */
export function heapEnd(e: WasmEngine): number {
  const last = e.blocks[e.blocks.length - 1];
  return last ? last.at + last.size : DATA_START;
}

/** Grows the memory so that it holds the bytes below `end`. */
export function ensureMemory(e: WasmEngine, end: number): void {
  const have = e.memory.buffer.byteLength;
  if (end > have) e.memory.grow(Math.ceil((end - have) / 65536));
}

/** Reserves `size` bytes of linear memory past the live blocks (64-byte aligned); returns the address. */
export function allocateBlock(e: WasmEngine, size: number): number {
  const at = heapEnd(e);
  e.blocks.push({ at, size: Math.ceil(size / 64) * 64, live: true });
  ensureMemory(e, heapEnd(e));
  return at;
}

/** Frees the block at `at`; the heap shrinks past every dead block at its end. */
export function freeBlock(e: WasmEngine, at: number): void {
  const b = e.blocks.find((x) => x.at === at);
  if (b) b.live = false;
  while (e.blocks.length && !e.blocks[e.blocks.length - 1].live) e.blocks.pop();
}

/** The engine, or null where WebAssembly SIMD is missing. */
export function wasmEngine(selfCheck: SelfCheck, warmUp: WarmUp = async () => undefined): Promise<WasmEngine | null> {
  return (engine ??= create(selfCheck, warmUp));
}
