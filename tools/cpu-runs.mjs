// The CPU few-row table from repeated bench runs: for each shape, qgemm's `resident` wall time (8-bit and
// 4-bit weights) against onnxruntime-node MatMulInteger and MatMulNBits-4 in the same run, as the median
// over the runs of each run's ratio, with every run's ratio listed, and the call overhead from each
// qgemm row's note. One run's ratios move by up to 2x on a shared 2-core machine, so a claim is a median
// over runs, never one run. Usage: `node tools/cpu-runs.mjs run1.json run2.json ...` (bench --json files
// of the same command).

import { readFileSync } from 'node:fs';

const files = process.argv.slice(2);
if (!files.length) {
  console.error('usage: node tools/cpu-runs.mjs BENCH.json [BENCH.json ...]');
  process.exit(2);
}
const runs = files.map((f) => JSON.parse(readFileSync(f, 'utf8')));
const median = (xs) => {
  const s = xs.filter((x) => Number.isFinite(x)).sort((a, b) => a - b);
  if (!s.length) return null;
  return s.length % 2 ? s[s.length >> 1] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};
const fmt = (x, digits = 3) => (x === null || x === undefined ? '—' : x.toPrecision(digits));
const shapeOf = (r) => `${r.m}x${r.n}x${r.k}`;
const find = (run, shape, impl, bits) =>
  run.runs.find((r) => shapeOf(r) === shape && r.mode === 'resident' && r.impl === impl && (bits === undefined || r.rhsBits === bits));
const overheadUs = (r) => Number(/overhead \(wall - kernel, per call\) ([\d.]+) µs/.exec(r?.gpuNote ?? '')?.[1] ?? Number.NaN);

const machine = runs[0].machine ?? {};
console.log(`${files.length} runs; ${machine.cpu ?? '?'}, ${machine.cores ?? '?'} cores, Node ${machine.node ?? runs[0].node ?? '?'}`);
console.log('shape | qgemm 8-bit ms | vs MatMulInteger (runs) | qgemm 4-bit ms | vs MatMulNBits-4 (runs) | 4-bit vs 8-bit | overhead µs');
const shapes = [...new Set(runs.flatMap((run) => run.runs.filter((r) => r.mode === 'resident').map(shapeOf)))];
for (const shape of shapes) {
  const per = runs.map((run) => {
    const q8 = find(run, shape, 'qgemm', 8);
    const q4 = find(run, shape, 'qgemm', 4);
    const o8 = find(run, shape, 'onnxruntime-node-matmulinteger');
    const o4 = find(run, shape, 'onnxruntime-node-matmulnbits4');
    return {
      q8: q8?.medianMs,
      q4: q4?.medianMs,
      r8: o8?.medianMs / q8?.medianMs,
      r4: o4?.medianMs / q4?.medianMs,
      r48: q8?.medianMs / q4?.medianMs,
      oh: overheadUs(q8),
    };
  });
  const col = (k) => median(per.map((p) => p[k]));
  const list = (k) => per.map((p) => fmt(p[k], 2)).join(' ');
  console.log(
    `${shape} | ${fmt(col('q8'))} | ${fmt(col('r8'))}x (${list('r8')}) | ${fmt(col('q4'))} | ${fmt(col('r4'))}x (${list('r4')}) | ${fmt(col('r48'))}x | ${fmt(col('oh'))}`,
  );
}
