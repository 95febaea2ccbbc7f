// One job of the WebAssembly CPU kernels' thread pool (pool.ts): every thread's list of exported calls
// for one GEMM (its pack ranges, a barrier, its gemm + output ranges: pack -> gemm -> output), written
// by the calling thread into a shared control block of i32 words and run by each thread with runJob,
// the same function on the calling thread and in the workers (worker-source.ts splices in its source).

/** An exported function name and its i32 arguments. */
export type Call = [name: string, ...args: number[]];

/** The call that waits for every thread of the job (between the pack and the gemm + output calls). */
export const BARRIER_CALL = 'barrier';

/**
 * The control block: word `gen` counts jobs, `done` the workers finished with this one, `failed` is set
 * by the first failure, `barrier` counts barrier arrivals, `threads` is the job's thread count, `taken`
 * the workers that joined this job (joinJob: the caller waits for all of them before it may block at a
 * barrier; an open job it closes instead), `spinUs` how long a worker spins for the next job before it
 * sleeps (pool.ts). From
 * `jobAt`, `jobWords` words per thread: a call count, then per call its function index (-1: barrier),
 * its argument count and arguments. From `errorAt`, the first failure's message: a length, then UTF-16
 * code units.
 */
export const CONTROL = (() => {
  const maxThreads = 256;
  const jobAt = 8;
  const jobWords = 64;
  const errorAt = jobAt + maxThreads * jobWords;
  const errorChars = 2048;
  return {
    gen: 0,
    done: 1,
    failed: 2,
    barrier: 3,
    threads: 4,
    taken: 5,
    spinUs: 6,
    jobAt,
    jobWords,
    maxThreads,
    errorAt,
    errorChars,
    words: errorAt + 1 + errorChars,
    /** Word `taken`: the job's tag (its gen, low 15 bits) from bit 16, CLOSED, and the count of workers that joined. */
    tagShift: 16,
    tagMask: 0x7fff,
    closed: 0x8000,
    countMask: 0x7fff,
  };
})();
export type Control = typeof CONTROL;

/** The value of word `taken` when job `gen` is handed out: its tag, not closed, nobody joined. */
export const openTaken = (gen: number, c: Control): number => (gen & c.tagMask) << c.tagShift;

/**
 * A worker joins job `gen` (the value it read in word `gen`): counts itself in word `taken`, unless the
 * job there is no longer `gen` (the caller has moved on) or is closed (an open job whose work the
 * threads already present finished: pool.ts). Returns how many workers have joined with it, or 0 where
 * it may not join; it then must not touch the job. Self-contained, like runJob.
 */
export function joinJob(ctl: Int32Array, gen: number, c: Control): number {
  const tag = (gen & c.tagMask) << c.tagShift;
  for (;;) {
    const v = Atomics.load(ctl, c.taken);
    if ((v & ~(c.closed | c.countMask)) !== tag || v & c.closed) return 0;
    if (Atomics.compareExchange(ctl, c.taken, v, v + 1) === v) return (v & c.countMask) + 1;
  }
}

/**
 * Runs thread `slot`'s calls of the current job; a thread that throws skips its remaining calls but
 * still arrives at every barrier, and records the first failure. At a barrier a thread spins, then,
 * where it may block, sleeps; after `patienceMs` there (a thread that stopped: the caller passes a
 * finite one) it records a failure and returns 'stalled'.
 * Self-contained (it names nothing outside itself; the layout comes in `c`), because its source text
 * also runs in the workers.
 */
export function runJob(
  ctl: Int32Array,
  slot: number,
  fns: ((...args: number[]) => unknown)[],
  canBlock: boolean,
  c: Control,
  patienceMs = Number.POSITIVE_INFINITY,
): 'done' | 'failed' | 'stalled' {
  const fail = (text: string) => {
    if (Atomics.compareExchange(ctl, c.failed, 0, 1) !== 0) return;
    const t = text.slice(0, c.errorChars);
    ctl[c.errorAt] = t.length;
    for (let k = 0; k < t.length; k++) ctl[c.errorAt + 1 + k] = t.charCodeAt(k);
  };
  const threads = Atomics.load(ctl, c.threads);
  let at = c.jobAt + slot * c.jobWords;
  const count = ctl[at++];
  let failed = false;
  let barriers = 0;
  for (let i = 0; i < count; i++) {
    const fn = ctl[at];
    const args = Array.from(ctl.subarray(at + 2, at + 2 + ctl[at + 1]));
    at += 2 + args.length;
    if (fn === -1) {
      const target = ++barriers * threads;
      if (Atomics.add(ctl, c.barrier, 1) + 1 === target) Atomics.notify(ctl, c.barrier);
      else {
        const giveUp = performance.now() + patienceMs;
        for (let spins = 0, seen = Atomics.load(ctl, c.barrier); seen < target; seen = Atomics.load(ctl, c.barrier)) {
          if (++spins % 4096 !== 0) continue;
          if (canBlock) Atomics.wait(ctl, c.barrier, seen, 10);
          if (performance.now() > giveUp) {
            fail(`thread ${slot}: the other threads did not reach the barrier within ${patienceMs} ms`);
            return 'stalled';
          }
        }
      }
    } else if (!failed) {
      try {
        fns[fn](...args);
      } catch (e) {
        failed = true;
        fail(String((e as Error)?.stack ?? e));
      }
    }
  }
  return failed ? 'failed' : 'done';
}
