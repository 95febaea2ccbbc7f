// The HTML report: one self-contained file (inline CSS and SVG, no scripts, no network) with
//  - the run's facts (machine, adapter and its measured ceilings, pipeline, timing method) and the
//    headline speed-ups, wall time and GPU time side by side;
//  - chart 1: GOPS by shape for each implementation (horizontal bars, log scale: the values span
//    several decades between a naive loop, SwiftShader and onnxruntime);
//  - chart 2: qgemm's speed-up over each peer by shape (log scale around 1x);
//  - the full table (mode, wall median with its spread, GPU time or "no GPU time", kernel, roofline,
//    verification) and what was skipped.

import type { BenchReport, Row } from './report.ts';
import { describeMachine } from './environment.ts';
import { baseKey, rowKey, type Mode } from './impls/types.ts';
import { columns, fmtGops, fmtMs, headline as ordered, idOf, label, roofText, SHORT, shapesOf } from './report-terminal.ts';
import { shapeKey } from './shapes.ts';

/**
 * The chart's colours: one per series (an implementation on one backend and runtime, qgemm's 4-bit
 * weights a series of their own), given in the legend's order from this list of clearly distinct hues;
 * the mode (resident, device, call) is the opacity, shown once in the legend, not a colour of its own,
 * and so are the decode loop's after-pause rows (their own, lightest opacity).
 */
export const PALETTE = [
  '#1b63c6', // blue
  '#e07b12', // orange
  '#1f9d55', // green
  '#c0392b', // red
  '#7d3c98', // purple
  '#8c564b', // brown
  '#17a2b8', // cyan
  '#e377c2', // pink
  '#7f7f7f', // grey
  '#b5b01f', // olive
  '#0b2e5c', // navy
  '#f5c342', // yellow
  '#00695c', // teal
  '#ff9e80', // salmon
  '#3e2c8f', // indigo
  '#9edae5', // light cyan
];
const seriesKey = (key: string): string => {
  const id = idOf(key);
  return `${baseKey(id)}${id.rhsBits === 4 ? '/rhs4' : ''}`;
};
/** The series of a report's columns in order, each with its colour (the palette repeats past 16, which no run reaches). */
function seriesColors(cols: string[]): Map<string, string> {
  const series = [...new Set(cols.map(seriesKey))];
  return new Map(series.map((s, i) => [s, PALETTE[i % PALETTE.length]]));
}
const OPACITY: Record<Mode, number> = { resident: 1, device: 0.8, call: 0.5 };
/** The after-pause rows (single calls, each after a pause), whatever their mode. */
const AFTER_PAUSE_OPACITY = 0.3;
/** A column's mode as the legend names it: the mode, and "after pause" for the after-pause rows. */
const modeName = (key: string) => `${idOf(key).mode}${idOf(key).loop === 'after-pause' ? ' after pause' : ''}`;
const opacity = (key: string) => (idOf(key).loop === 'after-pause' ? AFTER_PAUSE_OPACITY : (OPACITY[idOf(key).mode] ?? 1));
type Colors = (key: string) => string;
const colorsOf = (report: BenchReport): Colors => {
  const map = seriesColors(columns(report));
  return (key) => map.get(seriesKey(key)) ?? '#444';
};

const esc = (s: unknown): string =>
  String(s).replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);

/** Decades covering [lo, hi] for a log axis. */
function decades(lo: number, hi: number): number[] {
  const out: number[] = [];
  for (let e = Math.floor(Math.log10(lo)); e <= Math.ceil(Math.log10(hi)); e++) out.push(10 ** e);
  return out;
}

const tickLabel = (v: number) => (v >= 1 ? String(v) : v.toPrecision(1).replace(/^0\./, '0.'));

/** A horizontal log-scale axis over whole decades covering [min, max], inside a 980-px-wide chart. */
function logAxis(min: number, max: number, left: number, right: number) {
  const ticks = decades(min, max);
  const lo = ticks[0];
  const hi = ticks[ticks.length - 1];
  const width = 980;
  const plotW = width - left - right;
  const x = (v: number) => left + (Math.log10(v / lo) / Math.log10(hi / lo)) * plotW;
  return { ticks, lo, hi, width, plotW, x };
}

/** The width left of a chart for its shape names (150 px; more for a convolution layer's longer name). */
const labelColumn = (shapes: Parameters<typeof shapeKey>[0][]): number =>
  Math.max(150, ...shapes.map((s) => Math.ceil(shapeKey(s).length * 7.6) + 24));

function gopsChart(report: BenchReport): string {
  const cols = columns(report);
  const color = colorsOf(report);
  const shapes = shapesOf(report);
  const values = report.runs.map((r) => r.gops).filter((g): g is number => g !== null && g > 0);
  if (!values.length) return '<p>No timed rows.</p>';
  const left = labelColumn(shapes);
  const { ticks, width, plotW, x } = logAxis(Math.min(...values), Math.max(...values), left, 90);
  const bar = 13;
  const gap = 3;
  const groupGap = 16;
  const top = 34;
  let y = top;
  const parts: string[] = [];
  for (const s of shapes) {
    const rows = cols.map((c) => report.runs.find((r) => rowKey(r) === c && shapeKey(r) === shapeKey(s)));
    const present = rows.filter((r): r is Row => !!r);
    const groupH = present.length * (bar + gap) - gap;
    parts.push(`<text x="${left - 12}" y="${y + groupH / 2 + 5}" text-anchor="end" class="shape">${esc(shapeKey(s))}</text>`);
    for (const r of present) {
      const key = rowKey(r);
      if (r.gops && r.gops > 0) {
        const w = Math.max(2, x(r.gops) - left);
        const mark = r.verified === true ? ' ✓' : r.verified === false ? ' ✗ FAILED' : '';
        parts.push(
          `<rect x="${left}" y="${y}" width="${w.toFixed(1)}" height="${bar}" rx="2" fill="${color(key)}" fill-opacity="${opacity(key)}"><title>${esc(label(r))} ${esc(shapeKey(r))}: ${fmtGops(r.gops)} GOPS, median ${fmtMs(r.medianMs)}</title></rect>`,
        );
        parts.push(
          `<text x="${(left + w + 5).toFixed(1)}" y="${y + bar - 2}" class="val${r.verified === false ? ' bad' : ''}">${fmtGops(r.gops)}${mark}</text>`,
        );
      } else {
        parts.push(`<text x="${left + 4}" y="${y + bar - 2}" class="val bad">${esc(label(r))}: failed</text>`);
      }
      y += bar + gap;
    }
    y += groupGap;
  }
  const height = y + 10;
  const grid = ticks
    .map(
      (t) =>
        `<line x1="${x(t).toFixed(1)}" y1="${top - 6}" x2="${x(t).toFixed(1)}" y2="${height - 14}" class="grid"/><text x="${x(t).toFixed(1)}" y="${top - 12}" text-anchor="middle" class="tick">${tickLabel(t)}</text>`,
    )
    .join('');
  const legend = legendHtml(cols, color);
  return `${legend}<svg viewBox="0 0 ${width} ${height}" width="${width}" height="${height}" role="img" aria-label="GOPS by shape and implementation">
<text x="${left + plotW / 2}" y="12" text-anchor="middle" class="axis">GOPS (2·M·N·K / median wall time), log scale</text>
${grid}${parts.join('\n')}</svg>`;
}

/**
 * The legend, grouped by implementation: one swatch per series with the modes it was run in, then one
 * line saying how a mode shows (the bar's opacity).
 */
function legendHtml(cols: string[], color: Colors): string {
  const series = new Map<string, string[]>();
  for (const c of cols) series.set(seriesKey(c), [...(series.get(seriesKey(c)) ?? []), c]);
  const items = [...series.values()].map((keys) => {
    const id = idOf(keys[0]);
    const name = `${SHORT[baseKey(id)] ?? baseKey(id)}${id.impl === 'qgemm' && id.rhsBits === 4 ? ' 4-bit' : ''}`;
    const modes = keys.map(modeName).join(', ');
    return `<span><i style="background:${color(keys[0])}"></i>${esc(name)} <span class="sub">${esc(modes)}</span></span>`;
  });
  const modes = [...new Set(cols.map((c) => idOf(c).mode))];
  const paused = cols.some((c) => idOf(c).loop === 'after-pause');
  const key =
    modes.map((m) => `<span><i style="background:#5b6475;opacity:${OPACITY[m]}"></i>${esc(m)}</span>`).join('') +
    (paused
      ? `<span><i style="background:#5b6475;opacity:${AFTER_PAUSE_OPACITY}"></i>after pause (single calls, each after a pause; the others back to back)</span>`
      : '');
  return `<div class="legend">${items.join('')}</div><div class="legend modes">mode (opacity): ${key}</div>`;
}

function speedupChart(report: BenchReport): string {
  const comps = ordered(report);
  if (!comps.length) return '<p>No pair of this project and a peer was measured on a common shape.</p>';
  const all = comps.flatMap((c) => c.shapes.map((s) => s.speedup));
  const left = labelColumn(comps.flatMap((c) => c.shapes));
  const { ticks, width, plotW, x } = logAxis(Math.min(0.1, ...all), Math.max(10, ...all), left, 70);
  const bar = 13;
  const gap = 3;
  const top = 34;
  const one = x(1);
  let y = top;
  const parts: string[] = [];
  for (const c of comps) {
    parts.push(
      `<text x="${left - 150}" y="${y + 12}" class="pair">${esc(label(c.ours))} vs ${esc(label(c.peer))} — wall ${c.geomean === null ? '—' : sig(c.geomean)}× (${inWords(c.geomean)}), GPU ${c.gpuGeomean === null ? 'n/a' : `${sig(c.gpuGeomean)}×`}</text>`,
    );
    y += 22;
    for (const s of c.shapes) {
      const xv = x(s.speedup);
      const x0 = Math.min(one, xv);
      const w = Math.max(1.5, Math.abs(xv - one));
      const fill = s.speedup >= 1 ? '#1f9d55' : '#d64545';
      parts.push(`<text x="${left - 12}" y="${y + bar - 2}" text-anchor="end" class="shape small">${esc(shapeKey(s))}</text>`);
      parts.push(`<rect x="${x0.toFixed(1)}" y="${y}" width="${w.toFixed(1)}" height="${bar}" rx="2" fill="${fill}"/>`);
      const tx = s.speedup >= 1 ? xv + 5 : xv - 5;
      parts.push(
        `<text x="${tx.toFixed(1)}" y="${y + bar - 2}" text-anchor="${s.speedup >= 1 ? 'start' : 'end'}" class="val">${sig(s.speedup)}×</text>`,
      );
      y += bar + gap;
    }
    y += 14;
  }
  const height = y;
  const grid = ticks
    .map(
      (t) =>
        `<line x1="${x(t).toFixed(1)}" y1="${top - 6}" x2="${x(t).toFixed(1)}" y2="${height - 8}" class="grid${t === 1 ? ' one' : ''}"/><text x="${x(t).toFixed(1)}" y="${top - 12}" text-anchor="middle" class="tick">${tickLabel(t)}×</text>`,
    )
    .join('');
  return `<svg viewBox="0 0 ${width} ${height}" width="${width}" height="${height}" role="img" aria-label="speed-up over peers">
<text x="${left + plotW / 2}" y="12" text-anchor="middle" class="axis">speed-up = peer median wall time / qgemm's (right of 1×: qgemm faster), log scale</text>
${grid}${parts.join('\n')}</svg>`;
}

function table(report: BenchReport): string {
  const color = colorsOf(report);
  const head = [
    'shape',
    'implementation',
    'mode',
    'median wall',
    'min – max',
    'GOPS',
    'median GPU',
    'GPU GOPS',
    'kernel',
    'roofline',
    'runs',
    'verified',
  ];
  const body = report.runs
    .map((r) => {
      const v =
        r.verified === true
          ? `<span class="ok">✓ ${r.verification?.method === 'full' ? 'all' : 'sample of'} ${r.verification?.checked}</span>`
          : r.verified === false
            ? `<span class="bad">✗ ${esc(r.error ?? r.verification?.error ?? `${r.verification?.mismatches} mismatches`)}</span>`
            : `<span class="na">${r.error ? `peer, not run: ${esc(r.error)}` : 'peer'}</span>`;
      const gpu =
        r.gpuMedianMs !== null
          ? fmtMs(r.gpuMedianMs)
          : r.medianMs === null
            ? '—'
            : `<span class="na">no GPU time</span>${r.gpuNote ? `<div class="why">${esc(r.gpuNote)}</div>` : ''}`;
      return `<tr><td>${esc(shapeKey(r))}</td><td title="${esc(`${r.impl} / ${r.backend} / ${r.runtime}`)}"><i class="dot" style="background:${color(rowKey(r))};opacity:${opacity(rowKey(r))}"></i>${esc(label(r))}</td><td>${esc(modeName(rowKey(r)))}</td>
<td class="num">${fmtMs(r.medianMs)}</td><td class="num">${r.minMs === null ? '—' : `${fmtMs(r.minMs)} – ${fmtMs(r.maxMs)}`}</td><td class="num">${fmtGops(r.gops)}</td>
<td class="num">${gpu}</td><td class="num">${fmtGops(r.gpuGops)}</td><td>${esc(r.kernel ?? '')}</td><td class="num">${esc(roofText(r))}</td><td class="num">${r.reps}</td><td>${v}</td></tr>`;
    })
    .join('\n');
  // Long cells (implementation, kernel, verification) wrap so that the table fits the page; should it
  // still be wider, it scrolls inside its box, so that no column (verified, last) is cut off.
  return `<div class="scroll"><table><thead><tr>${head.map((h) => `<th>${h}</th>`).join('')}</tr></thead><tbody>${body}</tbody></table></div>`;
}

function headline(report: BenchReport): string {
  if (!report.comparisons.length) return '';
  const x = (v: number | null) => (v === null ? '—' : `${sig(v)}×`);
  // A missing figure is grey (not a loss): the reason is beside it.
  const cls = (v: number | null) => (v === null ? 'na' : v >= 1 ? 'good' : 'worse');
  return `<div class="cards">${ordered(report)
    .map(
      (c) => `<div class="card"><div><span class="big ${cls(c.geomean)}">${x(c.geomean)}</span> <span class="sub">wall</span></div>
<div><span class="big ${cls(c.gpuGeomean)}">${c.gpuGeomean === null ? 'n/a' : x(c.gpuGeomean)}</span> <span class="sub">GPU time${c.gpuGeomean === null ? ' (a side has none)' : ''}</span></div>
<div class="words">${inWords(c.geomean)} (wall)</div>
<div>${esc(label(c.ours))}<br>vs ${esc(label(c.peer))}</div><div class="sub">geometric mean over ${c.shapes.length} shape${c.shapes.length > 1 ? 's' : ''}</div></div>`,
    )
    .join('')}</div>`;
}

function chromeAdapter(a: Record<string, unknown> | null): string {
  if (!a) return 'none';
  const name = [a.vendor, a.architecture].filter(Boolean).join(' ') || 'unknown';
  return `${name}${a.description ? ` (${a.description})` : ''}${a.isSoftware ? ', software' : ''}`;
}

/** "2.7× slower" / "1.4× faster" for a speed-up. */
export function inWords(speedup: number | null): string {
  if (speedup === null) return '';
  const f = speedup >= 1 ? speedup : 1 / speedup;
  const digits = f >= 100 ? 0 : f >= 10 ? 1 : 2;
  return `qgemm ${f.toFixed(digits)}× ${speedup >= 1 ? 'faster' : 'slower'}`;
}

const sig = (x: number) => Number(x.toPrecision(x >= 1 ? 3 : 2));

/** The clock warm-up of the report's policy (bench/timing.ts RepeatPolicy.warmRule), in words, and the rows whose calls never settled. */
function warmText(report: BenchReport): string {
  const w = report.timing.policy.warmRule;
  if (!w) return '';
  const unsteady = report.runs.filter((r) => r.warm && !r.warm.steady).length;
  return (
    ` and runs back to back for ${w.minMs} ms, then on until their wall times are steady (the median of the last ${w.windowMs} ms of calls no more than ${w.tolerance * 100}% below that of as many calls before) or ${w.maxMs} ms have passed (the clocks rise)` +
    (unsteady ? ` (${unsteady} row${unsteady > 1 ? 's' : ''} not steady by then)` : '')
  );
}

export function htmlReport(report: BenchReport): string {
  const a = report.adapter;
  const failed = report.runs.filter((r) => r.impl === 'qgemm' && r.verified !== true).length;
  const qgemmRows = report.runs.filter((r) => r.impl === 'qgemm').length;
  const facts: [string, string][] = [
    ...(report.incomplete ? [['INCOMPLETE', report.incomplete] as [string, string]] : []),
    ['date', report.date.slice(0, 19).replace('T', ' ') + ' UTC'],
    ['machine', `${describeMachine(report.machine)}; ${report.machine.os}; Node ${report.machine.node}`],
    ['adapter', report.adapterNote],
    ...(a.tuning ? [['tuning table (Node)', a.tuning] as [string, string]] : []),
    ...(a.ceilings?.dot4Tops != null
      ? [
          [
            'ceilings',
            `measured in this run on this adapter: dot4I8Packed ${a.ceilings.dot4Tops ?? '—'} TOPS (register-only), copy ${a.ceilings.copyGBs ?? '—'} GB/s (read + written), read ${a.ceilings.readGBs ?? '—'} GB/s (a kernel's streaming reads), subgroup matrix ${a.ceilings.subgroupMatrixTops === null || a.ceilings.subgroupMatrixTops === undefined ? 'not offered' : `${a.ceilings.subgroupMatrixTops} TOPS`}. Roofline: floor = max(2·M·N·K / the kernel's ceiling, bytes / read bandwidth), fraction = floor / GPU time (above 1: the bytes came from the GPU's cache)`,
          ] as [string, string],
        ]
      : []),
    ...(a.dot4
      ? [['dot4', `${a.dot4 === 'native' ? 'native dot4U8Packed / dot4I8Packed' : 'emulated (manual unpack)'}`] as [string, string]]
      : []),
    ...(report.chrome
      ? [
          [
            'chrome',
            `${report.chrome.version.replace('HeadlessChrome/', 'Chromium ').replace('Chrome/', 'Chromium ')} (headless, puppeteer-core); page adapter: ${chromeAdapter(report.chrome.adapter)}; cross-origin isolated: ${report.chrome.crossOriginIsolated ? 'yes' : 'no'}; flags: ${report.chrome.flags.join(' ')}`,
          ] as [string, string],
        ]
      : []),
    ['qgemm computes', `uint8 × uint8, zero points 119 / 131, ${report.pipeline.description}`],
    [
      'peers compute',
      'tfjs: f32 matMul of (q − zeroPoint), at convolution layers tf.conv2d f32 (NHWC, HWIO filter); onnxruntime WebGPU: MatMul f32 and MatMulNBits 8/4-bit (f32 A, int8 dot4 inside), weights as initializers; onnxruntime MatMulInteger (CPU) and naive-js: uint8 × uint8 → raw int32',
    ],
    [
      'modes',
      'call: both operands uploaded (and packed) per call; resident: the weights (rhs) stay on the GPU, each call uploads lhs and reads dst back; device: lhs and dst stay on the GPU too (GPU work + submission)',
    ],
    [
      'timing',
      `${report.timing.policy.warmup} warm-up run${warmText(report)}, then ≥ ${report.timing.policy.minReps} timed runs (up to ${report.timing.policy.maxReps}, until ${report.timing.policy.targetMs} ms). Median wall time: ${report.timing.medianMs}. GPU time: ${report.timing.gpuMs}.`,
    ],
    [
      'verification',
      `${qgemmRows - failed} of ${qgemmRows} qgemm rows verified bit-exact against the CPU reference (every timed run's output hashed; the last checked in full for M·N·K ≤ 2^24, else 2048 random entries plus the last row and column)`,
    ],
    ['suite', `${report.suite}; ${report.elapsedS.toFixed(0)} s; ${report.command}`],
  ];
  const impls = report.implementations.map((i) => `<li><b>${esc(label(i))}</b> — ${esc(i.computes)}; ${esc(i.details)}</li>`).join('');
  const skipped = report.skipped.length
    ? `<h2>Skipped</h2><ul>${[...new Set(report.skipped.map((s) => `${label(s)}: ${s.reason}`))]
        .map(
          (why) =>
            `<li>${esc(why)} (${report.skipped
              .filter((s) => `${label(s)}: ${s.reason}` === why)
              .map((s) => shapeKey(s))
              .join(', ')})</li>`,
        )
        .join('')}</ul>`
    : '';
  const notes = report.notes.length ? `<h2>Notes</h2><ul>${report.notes.map((n) => `<li>${esc(n)}</li>`).join('')}</ul>` : '';
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<title>qgemm-webgpu benchmark — ${esc(a.name)} — ${esc(report.date.slice(0, 10))}</title>
<style>
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, "DejaVu Sans", sans-serif; color: #1d2330; margin: 24px auto; max-width: 1020px; padding: 0 16px; background: #fff; }
h1 { font-size: 22px; margin: 0 0 4px; } h2 { font-size: 17px; margin: 28px 0 8px; border-bottom: 1px solid #e3e6ec; padding-bottom: 4px; }
.sub { color: #5b6475; font-size: 12px; }
dl { display: grid; grid-template-columns: 130px 1fr; gap: 3px 12px; margin: 12px 0; font-size: 13px; } dt { color: #5b6475; } dd { margin: 0; }
.cards { display: flex; flex-wrap: wrap; gap: 10px; margin: 14px 0; }
.card { border: 1px solid #e3e6ec; border-radius: 8px; padding: 10px 14px; min-width: 170px; font-size: 13px; }
.big { font-size: 26px; font-weight: 650; } .words { font-weight: 600; margin-bottom: 4px; } .good { color: #1f9d55; } .worse { color: #d64545; }
.legend { display: flex; flex-wrap: wrap; gap: 6px 16px; margin: 8px 0 4px; font-size: 13px; }
.legend i, i.dot { display: inline-block; width: 11px; height: 11px; border-radius: 2px; margin-right: 6px; vertical-align: -1px; }
svg text { font-family: inherit; fill: #1d2330; } .shape { font-size: 13px; font-weight: 600; } .small { font-size: 12px; font-weight: 500; }
.val { font-size: 11.5px; fill: #333; } .val.bad, .bad { fill: #c0392b; color: #c0392b; } .tick { font-size: 11px; fill: #5b6475; } .axis { font-size: 12px; fill: #5b6475; }
.pair { font-size: 13px; font-weight: 600; } .grid { stroke: #e6e8ee; stroke-width: 1; } .grid.one { stroke: #7b8394; stroke-width: 1.3; }
table { border-collapse: collapse; width: 100%; font-size: 12.5px; } th, td { padding: 4px 6px; border-bottom: 1px solid #eef0f4; text-align: left; vertical-align: top; }
td.num, th, td:nth-child(1), td:nth-child(3) { white-space: nowrap; } .legend.modes { color: #5b6475; font-size: 12px; }
th { background: #f6f7f9; font-weight: 600; } td.num { text-align: right; font-variant-numeric: tabular-nums; }
.ok { color: #1f9d55; } .na { color: #9aa1ad; } .scroll { overflow-x: auto; max-width: 100%; } .why { color: #9aa1ad; font-size: 11px; white-space: normal; max-width: 260px; } ul { padding-left: 20px; } li { margin: 3px 0; }
.warn { background: #fff7e6; border: 1px solid #f3d19c; border-radius: 6px; padding: 8px 12px; margin: 10px 0; font-size: 13px; }
</style></head><body>
<h1>qgemm-webgpu benchmark</h1>
<div class="sub">int8 GEMM on WebGPU and the CPU next to tfjs-backend-webgpu (f32), onnxruntime's WebGPU EP (MatMul f32, MatMulNBits 8/4-bit), onnxruntime-node (MatMulInteger, CPU) and a naive loop, in one run on one adapter: <b>${esc(a.name)}</b></div>
${report.adapterKind === 'swiftshader' ? '<div class="warn">SwiftShader is a CPU emulation of a GPU: these numbers compare implementations on the same adapter; they say nothing about speed on a real GPU.</div>' : ''}
${report.adapterKind === 'none' ? '<div class="warn">No WebGPU adapter: CPU path only.</div>' : ''}
${failed ? `<div class="warn bad">${failed} qgemm row(s) FAILED verification — see the table.</div>` : ''}
<dl>${facts.map(([k, v]) => `<dt>${esc(k)}</dt><dd>${esc(v)}</dd>`).join('')}</dl>
<h2>Speed-up of qgemm over each peer</h2>
${headline(report)}
${speedupChart(report)}
<h2>Throughput by shape</h2>
${gopsChart(report)}
<h2>All rows</h2>
${table(report)}
<h2>Implementations</h2><ul>${impls}</ul>
${skipped}${notes}
</body></html>
`;
}
