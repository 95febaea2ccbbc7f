// The CPU path's first use, measured in a fresh process: how long the first prepackCpu takes (the engine's
// compile and warm-up, the packing, the call-path warm-up, the workers' start), then the wall time of the
// first few GEMMs against it and the threads each ran on; with --prepacks N, N more prepacks of the same
// rhs (each destroyed), which pay only the packing. Runs a built bundle (`npx vite build` first):
//   node tools/cpu-first-call.mjs [--lib dist/node/index.js] [--shape 1x4096x4096] [--bits 8|4] [--calls 3]
//     [--order row-major|col-major] [--prepacks 0]
// Prints one line; run it several times (each run is one fresh process) and under each Node of interest.

import { parseArgs } from 'node:util';
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';

const { values } = parseArgs({
  options: {
    lib: { type: 'string', default: 'dist/node/index.js' },
    shape: { type: 'string', default: '1x4096x4096' },
    bits: { type: 'string', default: '8' },
    calls: { type: 'string', default: '3' },
    order: { type: 'string', default: 'row-major' },
    prepacks: { type: 'string', default: '0' },
  },
});
const q = await import(pathToFileURL(resolve(values.lib)).href);
const [M, N, K] = values.shape.split('x').map(Number);
const bytes = (n, seed) => {
  const a = new Uint8Array(n);
  for (let i = 0, x = seed; i < n; i++) a[i] = (x = (Math.imul(x, 1103515245) + 12345) >>> 0) >>> 24;
  return a;
};
const bitDepth = Number(values.bits) < 8 ? { lhs: 8, rhs: Number(values.bits), rounding: 'nearest' } : undefined;
const rhs = { data: bytes(K * N, 7), rows: K, cols: N, order: values.order };
let t = performance.now();
const packed = await q.prepackCpu(rhs, bitDepth);
const prepackMs = performance.now() - t;
const later = [];
for (let i = 0; i < Number(values.prepacks); i++) {
  t = performance.now();
  (await q.prepackCpu(rhs, bitDepth)).destroy();
  later.push((performance.now() - t).toFixed(1));
}
const problem = { lhs: { data: bytes(M * K, 3), rows: M, cols: K }, rhs: packed, lhsZeroPoint: 119, rhsZeroPoint: 131, bitDepth };
const calls = [];
for (let i = 0; i < Number(values.calls); i++) {
  t = performance.now();
  await q.gemm(problem, { backend: 'cpu' });
  calls.push(`${(performance.now() - t).toFixed(3)} ms/${q.cpuRunStats().lastThreads}`);
}
const more = later.length ? ` (later ones ${later.join(', ')} ms)` : '';
console.log(
  `Node ${process.version}, ${values.shape}, ${values.bits}-bit, ${values.order} rhs: prepackCpu ${prepackMs.toFixed(1)} ms${more}; calls (wall/threads) ${calls.join(', ')}`,
);
process.exit(0);
