// The short tables that bench/device-run.sh prints last: `qgemm verify`'s verdict (every kernel, or
// those with mismatches); the tuner's entries (winner, its GPU time, the rules' kernel and time, how many
// configurations it measured); per bench shape, qgemm's GPU time (`resident`, the median) in each of the
// two passes, their spread, the kernel that ran (marked UNVERIFIED where a row's result was not the
// reference's), the TOPS of the better pass, and the peers' GPU times (tfjs f32, onnxruntime
// MatMulNBits-8) from the same passes; then, from the 4-bit pass, qgemm with 8- and 4-bit weights beside
// MatMulNBits-8 and -4 (and the walls of qgemm's and MatMulNBits-8's rows); qgemm's GPU time with Dawn's
// robustness off beside the passes'; the passes' clock warm-ups (how long, how many never settled);
// then the token through a Sequential (bench/token.ts). A report that is a checkpoint (a stage cut short by
// its time limit: the bench's --checkpoint) is said to be one, with the rows it kept. Plain Node, no
// dependencies (it runs on the bare GPU machine). A file missing, truncated or of another shape is "no
// report", never a crash.
// Usage: node device-summary.mjs pass1.json pass2.json [--u4 bench-u4.json] [--verify verify.json] [--tune tune.json]
//        [--norobust bench-norobust.json] [--token token.json]
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';

const args = process.argv.slice(2);
/** The file after `--name`, or null; the pass files are the arguments before the first option. */
const option = (name) => {
  const at = args.indexOf(`--${name}`);
  return at >= 0 ? args[at + 1] : null;
};
const u4File = option('u4');
const firstOption = args.findIndex((a) => a.startsWith('--'));
/** A text file's content, '' where it cannot be read. */
const readText = (f) => {
  try {
    return readFileSync(f, 'utf8');
  } catch {
    return '';
  }
};
const read = (f, empty = { runs: [] }) => {
  try {
    return JSON.parse(readText(f));
  } catch {
    return empty;
  }
};
/** An object's rows (bench reports' `runs`, verify's `rows`, the tuner's entries): the objects of an array, else none. */
const objects = (xs) => (Array.isArray(xs) ? xs.filter((x) => x !== null && typeof x === 'object') : []);
/** A bench report's rows (none where the file is missing, truncated or of another shape). */
const runsOf = (file) => objects(read(file, null)?.runs);
const passFiles = firstOption >= 0 ? args.slice(0, firstOption) : args;
const passes = passFiles.map((file) => ({ runs: runsOf(file) }));
/** A line where a bench report is a checkpoint (--checkpoint: the stage was cut short), else none. */
const cutShort = (file, label) => {
  const report = read(file, null);
  if (typeof report?.incomplete === 'string')
    console.log(`${label} cut short: ${objects(report.runs).length} rows kept (${report.incomplete})`);
};
/** A time in ms as the tables print it, '-' where there is none (or it is not a number). */
const f = (x) => (typeof x !== 'number' || !Number.isFinite(x) ? '-' : x < 1 ? x.toFixed(4) : x.toFixed(3));

// `qgemm verify --json`: one line, then a line per kernel with mismatches or that did not run.
const verifyFile = option('verify');
if (verifyFile) {
  const v = read(verifyFile, null);
  const vrows = objects(v?.rows);
  if (!Array.isArray(v?.rows)) {
    // verify writes its JSON at the end: cut short, it wrote none, but its line per kernel is in run.log,
    // after its header and before the script's next line
    const log = readText(join(dirname(verifyFile), 'run.log')).split('\n');
    const from = log.findIndex((l) => l.startsWith('qgemm verify:'));
    const to = log.findIndex((l, i) => i > from && l.startsWith('device-run:'));
    const kernels = from < 0 ? [] : log.slice(from + 1, to < 0 ? undefined : to).filter((l) => /^ {2}\S/.test(l));
    if (!kernels.length) console.log('verify: no report (see run.log)');
    else {
      const ran = kernels.map((l) => /^ {2}(\S+)(?: \([^)]*\))?: (\d+) problems, (\d+) mismatches/.exec(l));
      const exact = ran.filter((k) => k && k[3] === '0').length;
      console.log(`verify: no report (cut short?); run.log shows ${exact} of the ${kernels.length} kernels it reached exact`);
      ran.forEach((k, i) => {
        if (!k)
          console.log(kernels[i]); // one that did not run, with its reason
        else if (k[3] !== '0') console.log(`  ${k[1]}: ${k[3]} mismatches of ${k[2]}`);
      });
    }
  } else {
    const bad = vrows.filter((r) => r.mismatches !== 0 || r.detail);
    const exact = vrows.length - bad.length;
    console.log(`verify: ${exact} of ${vrows.length} kernels exact${v.ok === true ? '' : ' -- FAILED'}`);
    for (const r of bad) console.log(`  ${r.kernel}: ${r.mismatches} mismatches of ${r.problems}${r.detail ? ` (${r.detail})` : ''}`);
  }
  console.log('');
}

// `qgemm tune --json`: an entry per measured shape, then the refused winners.
const tuneFile = option('tune');
if (tuneFile) {
  const t = read(tuneFile, null);
  const entries = objects(t?.table?.entries);
  // A table with no entry is a report still: every winner refused (its refusals are the result).
  if (!Array.isArray(t?.table?.entries)) console.log('tune: no report (see run.log)');
  else {
    const out = ['tune: class shape | winner | ms | rules | rules ms | seed | seed ms | tried'];
    for (const e of entries) {
      const shape = `${e.class} ${e.shape?.M}x${e.shape?.N}x${e.shape?.K}`;
      out.push([shape, e.id, f(e.gpuMs), e.rulesId, f(e.rulesMs), e.seedId ?? '-', f(e.seedMs), e.tried].join(' | '));
    }
    for (const r of objects(t.refused)) out.push(`  refused ${r.id}: ${r.detail}`);
    console.log(out.join('\n'));
  }
  console.log('');
}
const key = (r) =>
  r.conv && typeof r.conv === 'object'
    ? `conv ${r.m}x${r.n}x${r.k} (${r.conv.height}x${r.conv.width}x${r.conv.channels} s${r.conv.stride})`
    : `${r.m}x${r.n}x${r.k}`;
const rows = new Map();
for (const [i, p] of passes.entries()) {
  for (const r of p.runs) {
    if (r.mode !== 'resident' || r.runtime !== 'node' || r.loop === 'after-pause' || (r.rhsBits ?? 8) !== 8) continue;
    const k = key(r);
    if (!rows.has(k)) rows.set(k, { ops: 2 * r.m * r.n * r.k, q: [], kernels: [], unverified: false, tfjs: [], ort: [] });
    const row = rows.get(k);
    const ms = r.gpuMedianMs ?? null;
    if (r.impl === 'qgemm' && r.backend === 'webgpu') {
      row.q[i] = ms;
      if (typeof r.kernel === 'string') row.kernels[i] = r.kernel;
      row.unverified ||= r.verified !== true;
    } else if (r.impl === 'tfjs-webgpu-f32') row.tfjs[i] = ms;
    else if (r.impl === 'onnxruntime-webgpu-matmulnbits8') row.ort[i] = ms;
  }
}
/** A row's kernels in the passes: one name where they agree, each pass's where they do not. */
const passKernels = (row) => [...new Set(row.kernels.filter((x) => x !== undefined))].join(' / ');
const best = (xs) => {
  const v = xs.filter((x) => typeof x === 'number');
  return v.length ? Math.min(...v) : null;
};
const lines = ['shape | qgemm ms pass1 | pass2 | spread | kernel | TOPS | tfjs f32 ms | ort nbits8 ms'];
for (const [k, r] of rows) {
  const [a, b] = r.q;
  const spread = typeof a === 'number' && typeof b === 'number' ? `${((100 * Math.abs(a - b)) / Math.min(a, b)).toFixed(0)}%` : '-';
  const q = best(r.q);
  const tops = q ? (r.ops / (q * 1e-3) / 1e12).toFixed(1) : '-';
  const kernel = r.unverified ? `${passKernels(r)} UNVERIFIED` : passKernels(r);
  lines.push([k, f(a), f(b), spread, kernel, tops, f(best(r.tfjs)), f(best(r.ort))].join(' | '));
}
if (passFiles.length) console.log(rows.size ? lines.join('\n') : 'bench passes: no report (see run.log)');
const tables = [...new Set(passFiles.map((file) => read(file, null)?.adapter?.tuning).filter((t) => typeof t === 'string'))];
if (tables.length) console.log(`qgemm's tuning table: ${tables.join(' / ')}`);
for (const [i, file] of passFiles.entries()) cutShort(file, `pass ${i + 1}`);
// The clock warm-ups of the passes' rows (bench/timing.ts RepeatPolicy.warmRule): how long, and how many never settled.
const warms = passes.flatMap((p) => p.runs.filter((r) => typeof r.warm?.ms === 'number' && r.loop !== 'after-pause').map((r) => r.warm));
if (warms.length) {
  const ms = warms.map((w) => w.ms).sort((a, b) => a - b);
  const unsteady = warms.filter((w) => !w.steady).length;
  console.log(
    `warm-ups: ${warms.length} rows, median ${(ms[ms.length >> 1] / 1000).toFixed(2)} s, longest ${(ms[ms.length - 1] / 1000).toFixed(2)} s, ${unsteady} not steady`,
  );
}

// Robustness off: qgemm's GPU time per shape with `disable_robustness`, beside the passes' better one
// (the same kernel where the same table chose it; a different kernel is named).
const norobustFile = option('norobust');
if (norobustFile) {
  const out = ['', 'robustness off: shape | qgemm ms | kernel | passes ms | off / on'];
  for (const r of runsOf(norobustFile)) {
    if (r.impl !== 'qgemm' || r.mode !== 'resident' || r.runtime !== 'node' || r.loop === 'after-pause') continue;
    const on = rows.get(key(r));
    const onMs = on ? best(on.q) : null;
    const ms = r.gpuMedianMs ?? null;
    const kernel = `${r.kernel ?? ''}${r.verified === true ? '' : ' UNVERIFIED'}${on && passKernels(on) !== r.kernel ? ` (passes: ${passKernels(on)})` : ''}`;
    out.push([key(r), f(ms), kernel, f(onMs), ms && onMs ? `${(ms / onMs).toFixed(2)}x` : '-'].join(' | '));
  }
  if (out.length === 2) out.push('(no run without robustness: see run.log)');
  console.log(out.join('\n'));
  cutShort(norobustFile, 'robustness off');
}

// The 4-bit pass: one line per shape, GPU time (`resident`, the median) of each row.
if (u4File) {
  const u4 = new Map();
  for (const r of runsOf(u4File)) {
    if (r.mode !== 'resident' || r.runtime !== 'node' || r.loop === 'after-pause') continue;
    const k = key(r);
    if (!u4.has(k)) u4.set(k, {});
    const row = u4.get(k);
    const ms = r.gpuMedianMs ?? null;
    const kernel = `${r.kernel ?? ''}${r.verified === true ? '' : ' UNVERIFIED'}`;
    if (r.impl === 'qgemm' && r.backend === 'webgpu') row[`q${r.rhsBits ?? 8}`] = { ms, kernel, wall: r.medianMs };
    else if (r.impl === 'onnxruntime-webgpu-matmulnbits8') row.ort8 = { ms, wall: r.medianMs };
    else if (r.impl === 'onnxruntime-webgpu-matmulnbits4') row.ort4 = { ms, wall: r.medianMs };
  }
  const out = [
    '',
    'shape | qgemm 8-bit ms | kernel | qgemm 4-bit ms | kernel | 4-bit / 8-bit | ort nbits8 ms | ort nbits4 ms | wall ms: qgemm 8-bit, ort nbits8',
  ];
  for (const [k, r] of u4) {
    const ratio = r.q8?.ms && r.q4?.ms ? `${(r.q4.ms / r.q8.ms).toFixed(2)}x` : '-';
    const walls = `${f(r.q8?.wall)}, ${f(r.ort8?.wall)}`;
    out.push(
      [k, f(r.q8?.ms), r.q8?.kernel ?? '-', f(r.q4?.ms), r.q4?.kernel ?? '-', ratio, f(r.ort8?.ms), f(r.ort4?.ms), walls].join(' | '),
    );
  }
  if (u4.size === 0) out.push('(no 4-bit pass: see run.log)');
  console.log(out.join('\n'));
  cutShort(u4File, 'the 4-bit pass');
}

// The token (dist/node/token.js): Sequential.run's wall against the sum of its layers' GPU times.
const tokenFile = option('token');
if (tokenFile) {
  const t = read(tokenFile, null);
  if (typeof t?.what !== 'string') console.log('\ntoken: no report (see run.log)');
  else {
    const verdict = t.verified ? 'verified' : `NOT VERIFIED (${t.mismatches} differ)`;
    console.log(
      `\ntoken: ${t.what}: wall ${f(t.wallMs)} ms back to back, ${f(t.afterPauseWallMs)} after a pause; GPU ${f(t.sumGpuMs)} ms summed over the layers (${Array.isArray(t.kernels) ? t.kernels.join(', ') : ''}), ${f(t.runGpuMs)} for the run; wall / GPU ${typeof t.wallOverSumGpu === 'number' ? t.wallOverSumGpu.toFixed(2) : '-'}; ${verdict}`,
    );
  }
}
