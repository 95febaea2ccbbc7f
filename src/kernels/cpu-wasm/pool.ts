// The thread pool of the WebAssembly CPU kernels: workers that share the module and its shared memory
// and run, per call, one list of exported calls each (a thread's pack ranges, then its gemm + output
// ranges: pack -> gemm -> output), while the calling thread runs its own list. Node: worker_threads
// (unref'd while idle, so a pool never keeps a process alive). Browsers: Web Workers from a Blob URL,
// only where a shared memory exists (a cross-origin isolated page). Created once per engine, grown on
// demand, never shrunk.

import { WORKER_SOURCE } from './worker-source.ts';

/** An exported function name and its i32 arguments. */
export type Call = [name: string, ...args: number[]];

interface Port {
  post(message: unknown): void;
  onMessage(handler: (message: { type: string; message?: string }) => void): void;
  ref(): void;
  unref(): void;
  terminate(): void;
}

function runtimeImport<T>(specifier: string): Promise<T> {
  return import(/* @vite-ignore */ specifier) as Promise<T>;
}

export const isNode = (): boolean =>
  !!(globalThis as { process?: { versions?: { node?: string } } }).process?.versions?.node &&
  typeof (globalThis as { window?: unknown }).window === 'undefined';

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
    w.unref();
    return {
      post: (m) => w.postMessage(m),
      onMessage: (h) => {
        w.on('message', h);
        w.on('error', (e) => h({ type: 'error', message: String(e) }));
      },
      ref: () => w.ref(),
      unref: () => w.unref(),
      terminate: () => void w.terminate(),
    };
  }
  const url = URL.createObjectURL(new Blob([WORKER_SOURCE], { type: 'text/javascript' }));
  const w = new Worker(url);
  URL.revokeObjectURL(url);
  return {
    post: (m) => w.postMessage(m),
    onMessage: (h) => {
      w.onmessage = (e) => h(e.data);
      w.onerror = (e) => h({ type: 'error', message: String(e.message) });
    },
    ref: () => undefined,
    unref: () => undefined,
    terminate: () => w.terminate(),
  };
}

class PoolWorker {
  private pending: { resolve: () => void; reject: (e: Error) => void } | null = null;
  private constructor(private readonly port: Port) {
    port.onMessage((m) => {
      const p = this.pending;
      this.pending = null;
      this.port.unref();
      if (!p) return;
      if (m.type === 'error') p.reject(new Error(`qgemm wasm worker: ${m.message}`));
      else p.resolve();
    });
  }

  static async start(module: WebAssembly.Module, memory: WebAssembly.Memory): Promise<PoolWorker> {
    const w = new PoolWorker(await spawn());
    await w.request({ type: 'init', module, memory });
    return w;
  }

  request(message: unknown): Promise<void> {
    return new Promise((resolve, reject) => {
      this.pending = { resolve, reject };
      this.port.ref();
      this.port.post(message);
    });
  }

  terminate(): void {
    this.port.terminate();
  }
}

export class WorkerPool {
  private readonly workers: PoolWorker[] = [];
  constructor(
    private readonly module: WebAssembly.Module,
    private readonly memory: WebAssembly.Memory,
  ) {}

  get size(): number {
    return this.workers.length;
  }

  /** Grows the pool to at least n workers. */
  async ensure(n: number): Promise<void> {
    const started: Promise<PoolWorker>[] = [];
    for (let i = this.workers.length; i < n; i++) started.push(PoolWorker.start(this.module, this.memory));
    this.workers.push(...(await Promise.all(started)));
  }

  /** Runs lists[0] on this thread and lists[i] on worker i-1, all at once; resolves when all are done. */
  async run(lists: Call[][], local: (calls: Call[]) => void): Promise<void> {
    await this.ensure(lists.length - 1);
    const remote = lists.slice(1).map((calls, i) => this.workers[i].request({ type: 'run', calls }));
    let localError: unknown = null;
    try {
      local(lists[0]);
    } catch (e) {
      localError = e;
    }
    await Promise.all(remote);
    if (localError) throw localError;
  }

  close(): void {
    for (const w of this.workers.splice(0)) w.terminate();
  }
}
