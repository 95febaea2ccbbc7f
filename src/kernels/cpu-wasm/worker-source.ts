// The worker of the WebAssembly CPU kernels' thread pool (pool.ts), as source text, so that it travels
// inside every bundle (dist/node, dist/browser) without a separate file: Node runs it with
// `new Worker(source, { eval: true })`, browsers from a Blob URL. It instantiates the module the pool
// sends over the shared memory, then runs lists of exported calls (the pack and gemm ranges of one
// thread: pack -> gemm -> output) and answers 'done' or the error.

export const WORKER_SOURCE = `
'use strict';
const isNode = typeof self === 'undefined' && typeof process !== 'undefined';
const port = isNode ? require('node:worker_threads').parentPort : null;
let wasm = null;
const send = (m) => (isNode ? port.postMessage(m) : self.postMessage(m));
function handle(msg) {
  if (msg.type === 'init') {
    WebAssembly.instantiate(msg.module, { env: { memory: msg.memory } }).then(
      (instance) => { wasm = instance.exports; send({ type: 'ready' }); },
      (e) => send({ type: 'error', message: String((e && e.stack) || e) }));
    return;
  }
  try {
    for (const [name, ...args] of msg.calls) wasm[name](...args);
    send({ type: 'done' });
  } catch (e) {
    send({ type: 'error', message: String((e && e.stack) || e) });
  }
}
if (isNode) port.on('message', handle);
else self.onmessage = (e) => handle(e.data);
`;
