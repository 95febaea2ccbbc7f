// A/B of two builds of the library's CPU path in one process: the same prepacked weights and lhs, the
// two builds' GEMMs alternating round by round, each round's fastest call kept, the median over rounds
// printed (wall and kernel time, the call's overhead, the driver and threads that ran). On a shared,
// noisy machine two builds measured in separate processes or minutes apart differ by more than most
// changes; alternating in one process cancels that. Each build has its own WebAssembly engine, memory
// and workers. Usage (build each tree first: `npx vite build`):
//   node tools/cpu-ab.mjs --a OLD/dist/node/index.js --b dist/node/index.js --shapes 1x4096x4096,16x1024x1024
//     [--threads N] [--bits 8|4] [--rounds 15] [--spin-ms S]
// --threads N forces N threads and keeps only calls that ran on N; without it each build picks its own.
// --spin-ms S sets both builds' workers' spin after a job (configureCpu({ spinMs })): 0 keeps one build's
// workers from spinning while the other runs, which two-thread comparisons need.

import { parseArgs } from 'node:util';
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';

const { values } = parseArgs({
  options: {
    a: { type: 'string' },
    b: { type: 'string', default: 'dist/node/index.js' },
    shapes: { type: 'string', default: '1x1024x1024,1x4096x4096' },
    threads: { type: 'string' },
    bits: { type: 'string', default: '8' },
    rounds: { type: 'string', default: '15' },
    'spin-ms': { type: 'string' },
  },
});
if (!values.a) {
  console.error(
    'usage: node tools/cpu-ab.mjs --a OLD/dist/node/index.js [--b dist/node/index.js] --shapes MxNxK,... [--threads N] [--bits 8|4] [--rounds R] [--spin-ms S]',
  );
  process.exit(2);
}
const load = (p) => import(pathToFileURL(resolve(p)).href);
const builds = { a: await load(values.a), b: await load(values.b) };
const threads = values.threads === undefined ? null : Number(values.threads);
const bits = Number(values.bits);
const rounds = Number(values.rounds);
const bitDepth = bits < 8 ? { lhs: 8, rhs: bits, rounding: 'nearest' } : undefined;
const shapes = values.shapes.split(',').map((s) => s.split('x').map(Number));
const bytes = (n, seed) => {
  const a = new Uint8Array(n);
  for (let i = 0, x = seed; i < n; i++) a[i] = (x = (Math.imul(x, 1103515245) + 12345) >>> 0) >>> 24;
  return a;
};
const median = (xs) => [...xs].sort((x, y) => x - y)[xs.length >> 1];

console.log(
  `Node ${process.version}; a = ${values.a}, b = ${values.b}; threads ${threads ?? 'default'}; ${bits}-bit weights; ${rounds} rounds; spin ${values['spin-ms'] ?? 'default'}`,
);
for (const [M, N, K] of shapes) {
  const rhs = { data: bytes(K * N, 7), rows: K, cols: N };
  const lhs = { data: bytes(M * K, 3), rows: M, cols: K };
  const state = {};
  for (const [name, q] of Object.entries(builds)) {
    if (threads !== null) q.configureCpu({ threads });
    if (values['spin-ms'] !== undefined) q.configureCpu({ spinMs: Number(values['spin-ms']) });
    state[name] = { q, packed: await q.prepackCpu(rhs, bitDepth), wall: [], kernel: [], overhead: [], ran: '' };
  }
  const calls = Math.max(4, Math.min(12, Math.round(2e8 / (M * N * K))));
  for (let round = 0; round < rounds + 2; round++) {
    for (const s of Object.values(state)) {
      const problem = {
        lhs,
        rhs: s.packed,
        lhsZeroPoint: 119,
        rhsZeroPoint: 131,
        pipeline: [
          { type: 'quantizeDownInt32ByFixedPoint', multiplier: 1 << 30, shift: 12, offsetAfterShift: 128 },
          { type: 'saturatingCast', to: 'uint8' },
        ],
        ...(bitDepth ? { bitDepth } : {}),
      };
      const wall = [];
      const kernel = [];
      for (let i = 0; i < calls; i++) {
        const t0 = performance.now();
        await s.q.gemm(problem, { backend: 'cpu' });
        const ms = performance.now() - t0;
        const stats = s.q.cpuRunStats();
        if (threads !== null && stats.lastThreads !== threads) continue;
        wall.push(ms);
        kernel.push(stats.lastKernelMs);
        s.overhead.push(ms - stats.lastKernelMs);
        s.ran = `${stats.lastDriver}, ${stats.lastThreads} thread(s)`;
      }
      // The first two rounds warm up (a new plan, the workers' first jobs).
      if (round >= 2 && wall.length) {
        s.wall.push(Math.min(...wall));
        s.kernel.push(Math.min(...kernel));
      }
    }
  }
  if (!state.a.wall.length || !state.b.wall.length) {
    console.log(`${M}x${N}x${K}: never ran on ${threads} threads (a small problem takes fewer)`);
    for (const s of Object.values(state)) s.packed.destroy();
    continue;
  }
  const cell = (s) =>
    `wall ${median(s.wall).toFixed(4)} ms, kernel ${median(s.kernel).toFixed(4)} ms, overhead ${(median(s.overhead) * 1000).toFixed(1)} µs (${s.ran})`;
  console.log(
    `${M}x${N}x${K}: a ${cell(state.a)} | b ${cell(state.b)} | b/a wall ${(median(state.b.wall) / median(state.a.wall)).toFixed(2)}`,
  );
  for (const s of Object.values(state)) s.packed.destroy();
}
process.exit(0);
