// The thread pool of the WebAssembly CPU kernels: workers that share the module and its shared memory
// and run, per GEMM, one job each (a thread's pack ranges, a barrier, then its gemm + output ranges:
// pack -> gemm -> output) while the calling thread runs its own. A job is handed over through a small
// shared control block and futexes (Atomics.wait / notify), with no message per call: a worker sleeps
// in Atomics.wait on the job counter, the caller writes every thread's calls into the block and bumps
// the counter, and each thread counts itself done. Node: worker_threads (unref'd, so a pool never keeps a
// process alive). Browsers: Web Workers from a Blob URL, only where a shared memory exists (a
// cross-origin isolated page); there the calling thread may not block, so it spins on its short waits.
// Created once per engine, grown on demand, never shrunk.

import { WorkerLostError } from '../../errors.ts';
import { BARRIER_CALL, CONTROL, openTaken, runJob, type Call } from './job.ts';
import { WORKER_SOURCE } from './worker-source.ts';
import { nodeProcess, runtimeImport } from '../../runtime.ts';

interface Port {
  onMessage(handler: (message: { type: string; message?: string }) => void): void;
  post(message: unknown): void;
  /** Node: whether the worker keeps the process alive (only while it starts). */
  ref(): void;
  unref(): void;
  terminate(): void;
}

export const isNode = (): boolean => !!nodeProcess() && typeof (globalThis as { window?: unknown }).window === 'undefined';

/** The number of cores: os.availableParallelism() in Node, navigator.hardwareConcurrency in browsers. */
export async function coreCount(): Promise<number> {
  if (isNode()) {
    const os = await runtimeImport<typeof import('node:os')>('node:os');
    return Math.max(1, os.availableParallelism?.() ?? os.cpus().length);
  }
  return Math.max(1, (globalThis as { navigator?: { hardwareConcurrency?: number } }).navigator?.hardwareConcurrency ?? 1);
}

async function spawn(): Promise<Port> {
  if (isNode()) {
    const { Worker } = await runtimeImport<typeof import('node:worker_threads')>('node:worker_threads');
    const w = new Worker(WORKER_SOURCE, { eval: true });
    return {
      onMessage: (h) => {
        w.on('message', h);
        w.on('error', (e) => h({ type: 'error', message: String(e) }));
        w.on('exit', (code) => h({ type: 'error', message: `exited with code ${code}` }));
      },
      ref: () => w.ref(),
      unref: () => w.unref(),
      post: (m) => w.postMessage(m),
      terminate: () => void w.terminate(),
    };
  }
  const url = URL.createObjectURL(new Blob([WORKER_SOURCE], { type: 'text/javascript' }));
  const w = new Worker(url);
  URL.revokeObjectURL(url);
  return {
    onMessage: (h) => {
      w.onmessage = (e) => h(e.data);
      // a worker that cannot load (a CSP that forbids blob: workers) fires a plain Event, without a message
      w.onerror = (e) => h({ type: 'error', message: (e as Partial<ErrorEvent>).message ?? 'the worker could not be loaded' });
    },
    post: (m) => w.postMessage(m),
    ref: () => undefined,
    unref: () => undefined,
    terminate: () => w.terminate(),
  };
}

const pause = () => new Promise((r) => setTimeout(r, 0));
/** How long the calling thread waits at a barrier for the workers before it declares the pool lost. */
const STALL_MS = 60_000;

export class WorkerPool {
  private readonly ports: Port[] = [];
  private readonly ctl = new Int32Array(new SharedArrayBuffer(4 * CONTROL.words));
  private readonly names: string[];
  private readonly fns: ((...args: number[]) => unknown)[];
  /** Why a worker stopped (it then can no longer take jobs), or null. */
  private lost: string | null = null;
  /** close() ran: a worker that starts after it is ended. */
  private closed = false;
  private readonly canBlock = isNode();

  constructor(
    private readonly module: WebAssembly.Module,
    private readonly memory: WebAssembly.Memory,
    exports: Record<string, (...args: number[]) => number>,
  ) {
    this.names = Object.keys(exports).filter((n) => typeof exports[n] === 'function');
    this.fns = this.names.map((n) => exports[n]);
  }

  get size(): number {
    return this.ports.length;
  }

  /** A worker stopped (it exited, or stalled mid-job and was terminated with the others): make a new pool. */
  get isLost(): boolean {
    return this.lost !== null;
  }

  /**
   * The last growth (ensure): growths run one after another, each once the one before has settled, so
   * that two asked for at once start no extra workers and a failed one does not fail the next.
   */
  private growing: Promise<void> = Promise.resolve();

  /** Grows the pool to at least n workers, each waiting for the job after the current one. */
  ensure(n: number): Promise<void> {
    const growth = this.growing.then(() => this.grow(n));
    this.growing = growth.catch(() => undefined);
    return growth;
  }

  private async grow(n: number): Promise<void> {
    const started: Promise<Port>[] = [];
    for (let i = this.ports.length; i < n; i++) {
      const slot = i + 1;
      started.push(
        spawn().then(
          (port) =>
            new Promise<Port>((resolve, reject) => {
              port.onMessage((m) => {
                port.unref();
                if (m.type === 'ready' && this.closed) {
                  port.terminate(); // ready after close(): ended, never a port of the pool
                  reject(new WorkerLostError('qgemm wasm: the pool was closed while its workers started'));
                } else if (m.type === 'ready') resolve(port);
                else {
                  this.lost ??= `qgemm wasm worker ${slot}: ${m.message}`;
                  reject(new WorkerLostError(this.lost));
                }
              });
              const { module, memory, ctl, names } = this;
              port.ref();
              port.post({ type: 'init', module, memory, control: ctl.buffer, slot, gen: Atomics.load(ctl, CONTROL.gen), names });
            }),
        ),
      );
    }
    const ports = await Promise.all(started);
    if (this.closed) {
      for (const p of ports) p.terminate();
      throw new WorkerLostError('qgemm wasm: the pool was closed while its workers started');
    }
    this.ports.push(...ports);
  }

  /**
   * Runs lists[0] on this thread and lists[i] on worker i, all at once; resolves when all are done. After
   * it the workers spin for the next job for spinUs µs (worker-source.ts), then sleep.
   * `open`: the lists take their work from shared counters (run.ts ranges, the dyn_* drivers), so that
   * each, lists[0] included, ends only once all the work is taken. This thread then closes the job once
   * its own list is done, and waits only for the workers that joined before: one the OS wakes late
   * (60-200 us on a virtual machine, a millisecond and more for the last of 15) finds it closed and
   * stays out.
   */
  async run(lists: Call[][], spinUs = 0, open = false): Promise<void> {
    if (lists.length > CONTROL.maxThreads) throw new Error(`qgemm: at most ${CONTROL.maxThreads} threads`);
    await this.ensure(lists.length - 1);
    this.checkLost();
    const { ctl } = this;
    lists.forEach((calls, slot) => {
      let at = CONTROL.jobAt + slot * CONTROL.jobWords;
      ctl[at++] = calls.length;
      for (const [name, ...args] of calls) {
        if (at + 2 + args.length > CONTROL.jobAt + (slot + 1) * CONTROL.jobWords) throw new Error('qgemm: a thread job is too long');
        ctl[at++] = name === BARRIER_CALL ? -1 : this.index(name);
        ctl[at++] = args.length;
        for (const a of args) ctl[at++] = a;
      }
    });
    for (const w of [CONTROL.done, CONTROL.failed, CONTROL.barrier]) ctl[w] = 0;
    const gen = Atomics.load(ctl, CONTROL.gen) + 1;
    Atomics.store(ctl, CONTROL.taken, openTaken(gen, CONTROL));
    Atomics.store(ctl, CONTROL.spinUs, spinUs);
    Atomics.store(ctl, CONTROL.threads, lists.length);
    Atomics.store(ctl, CONTROL.gen, gen);
    Atomics.notify(ctl, CONTROL.gen);
    // Every worker must join the job before this thread may block at a barrier: one that died would
    // never come, and a blocked thread never hears its exit. A job with no barrier (the few-row kernels'
    // column chunks) starts here at once: the workers join as they wake, and the wait for them to be
    // done hears an exit.
    const hasBarrier = lists.some((calls) => calls.some(([name]) => name === BARRIER_CALL));
    if (hasBarrier) await this.waitFor(CONTROL.taken, lists.length - 1);
    if (runJob(ctl, 0, this.fns, this.canBlock, CONTROL, STALL_MS) === 'stalled') {
      // A worker stopped mid-job and may still write to the memory: none of them may run again.
      this.lost = `qgemm wasm: ${this.error()}`;
      this.close();
    }
    const joined = open && !hasBarrier ? this.closeJob() : lists.length - 1;
    if (!this.lost) await this.waitFor(CONTROL.done, joined);
    this.checkLost();
    if (Atomics.load(ctl, CONTROL.failed)) throw new Error(`qgemm wasm: ${this.error()}`);
  }

  /** Closes the open job in word `taken` (joinJob): no worker joins it any more; returns how many did. */
  private closeJob(): number {
    const { ctl } = this;
    for (;;) {
      const v = Atomics.load(ctl, CONTROL.taken);
      if (Atomics.compareExchange(ctl, CONTROL.taken, v, v | CONTROL.closed) === v) return v & CONTROL.countMask;
    }
  }

  /** A worker stopped: no worker of this pool may run again (one may be mid-job); a typed error. */
  private checkLost(): void {
    if (!this.lost) return;
    this.close();
    throw new WorkerLostError(this.lost);
  }

  /** The first failure's message in the control block. */
  private error(): string {
    const length = this.ctl[CONTROL.errorAt];
    return String.fromCharCode(...this.ctl.subarray(CONTROL.errorAt + 1, CONTROL.errorAt + 1 + length));
  }

  /**
   * Waits until `workers` threads have counted themselves in word `at` (taken, done): spinning, then
   * sleeping, now and then yielding, so that a worker's exit is heard; a worker that has not come after
   * STALL_MS is declared lost.
   */
  private async waitFor(at: number, workers: number): Promise<void> {
    const { ctl } = this;
    const giveUp = performance.now() + STALL_MS;
    // Word `taken` holds the job's tag above its count (job.ts): compare the count, sleep on the word.
    for (let spins = 0, v = Atomics.load(ctl, at); (v & CONTROL.countMask) < workers; v = Atomics.load(ctl, at)) {
      if (++spins % 4096 !== 0) continue;
      if (this.canBlock) Atomics.wait(ctl, at, v, 1);
      if (spins % (4096 * 16) === 0) {
        await pause(); // lets a worker's exit be heard
        if (!this.lost && performance.now() > giveUp) this.lost = `qgemm wasm: a worker did not answer within ${STALL_MS} ms`;
        this.checkLost();
      }
    }
  }

  private index(name: string): number {
    const i = this.names.indexOf(name);
    if (i < 0) throw new Error(`qgemm: the module exports no ${name}`);
    return i;
  }

  /** Ends the workers, those still starting too (grow ends them as they come). */
  close(): void {
    this.closed = true;
    for (const p of this.ports.splice(0)) p.terminate();
  }
}
