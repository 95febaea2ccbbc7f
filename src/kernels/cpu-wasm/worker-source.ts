// The worker of the WebAssembly CPU kernels' thread pool (pool.ts), as source text, so that it travels
// inside every bundle (dist/node, dist/browser) without a separate file: Node runs it with
// `new Worker(source, { eval: true })`, browsers from a Blob URL. It instantiates the module the pool
// sends over the shared memory, answers 'ready', and from then on sleeps on the control block's job
// counter, joins each job it is part of (job.ts joinJob: not one the caller has closed or moved past)
// and runs its part (job.ts runJob, whose own source text is spliced in here: pack -> barrier -> gemm +
// output), counting itself done. After a job it first spins for the next one
// for CONTROL.spinUs (with Atomics.pause where it exists), since a sleeping worker is slow to wake.

import { CONTROL, joinJob, runJob } from './job.ts';

export const WORKER_SOURCE = `
'use strict';
const isNode = typeof self === 'undefined' && typeof process !== 'undefined';
const port = isNode ? require('node:worker_threads').parentPort : null;
const send = (m) => (isNode ? port.postMessage(m) : self.postMessage(m));
const runJob = ${runJob.toString()};
const joinJob = ${joinJob.toString()};
const CONTROL = ${JSON.stringify(CONTROL)};
const pause = typeof Atomics.pause === 'function' ? () => { for (let i = 0; i < 64; i++) Atomics.pause(); } : () => {};
function serve(ctl, slot, fns, gen) {
  for (;;) {
    const spinUs = Atomics.load(ctl, CONTROL.spinUs);
    if (spinUs > 0) {
      const until = performance.now() + spinUs / 1000;
      while (Atomics.load(ctl, CONTROL.gen) === gen && performance.now() < until) pause();
    }
    Atomics.wait(ctl, CONTROL.gen, gen);
    gen = Atomics.load(ctl, CONTROL.gen);
    const threads = Atomics.load(ctl, CONTROL.threads);
    if (slot >= threads) continue;
    const joined = joinJob(ctl, gen, CONTROL);
    if (joined === 0) continue;
    if (joined === threads - 1) Atomics.notify(ctl, CONTROL.taken);
    runJob(ctl, slot, fns, true, CONTROL);
    Atomics.add(ctl, CONTROL.done, 1);
    Atomics.notify(ctl, CONTROL.done);
  }
}
function handle(msg) {
  WebAssembly.instantiate(msg.module, { env: { memory: msg.memory } }).then(
    (instance) => {
      const fns = msg.names.map((n) => instance.exports[n]);
      send({ type: 'ready' });
      setTimeout(() => serve(new Int32Array(msg.control), msg.slot, fns, msg.gen), 0);
    },
    (e) => send({ type: 'error', message: String((e && e.stack) || e) }));
}
if (isNode) port.once('message', handle);
else self.onmessage = (e) => handle(e.data);
`;
