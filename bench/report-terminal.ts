// The terminal report: the headline (qgemm's speed-up over each peer, wall time and GPU time, geometric
// means), the adapter's ceilings, then one line per row: shape, implementation and mode, wall and GPU
// median, GOPS, the kernel that ran and its roofline (qgemm rows), verified (✓) or FAILED (✗); then the
// per-shape speed-ups and what was skipped. Rows with no GPU time say so ("no GPU time").

import type { Comparison } from './compare.ts';
import type { BenchReport, Row } from './report.ts';
import { describeMachine } from './environment.ts';
import { baseKey, rowKey, rowRank, type RowId } from './impls/types.ts';
import { shapeKey, type ConvLayer } from './shapes.ts';
import { PAUSE_MS } from './timing.ts';

export const SHORT: Record<string, string> = {
  'qgemm/webgpu/node': 'qgemm webgpu node',
  'qgemm/webgpu/chrome': 'qgemm webgpu chrome',
  'qgemm/cpu/node': 'qgemm cpu node',
  'tfjs-webgpu-f32/webgpu/node': 'tfjs f32 node',
  'tfjs-webgpu-f32/webgpu/chrome': 'tfjs f32 chrome',
  'onnxruntime-webgpu-matmul-f32/webgpu/node': 'ort webgpu f32',
  'onnxruntime-webgpu-matmulnbits8/webgpu/node': 'ort webgpu nbits8',
  'onnxruntime-webgpu-matmulnbits4/webgpu/node': 'ort webgpu nbits4',
  'onnxruntime-node-matmulinteger/cpu/node': 'ort cpu int8',
  'onnxruntime-node-matmulnbits4/cpu/node': 'ort cpu nbits4',
  'naive-js/cpu/node': 'naive-js',
  'qgemm/cpu/chrome': 'qgemm cpu chrome',
  'onnxruntime-webgpu-matmul-f32/webgpu/chrome': 'ort-web webgpu f32',
  'onnxruntime-webgpu-matmulnbits8/webgpu/chrome': 'ort-web webgpu nbits8',
  'onnxruntime-webgpu-matmulnbits4/webgpu/chrome': 'ort-web webgpu nbits4',
  'onnxruntime-web-matmulinteger/cpu/chrome': 'ort-web wasm int8',
};

/**
 * Short name of a row series: the implementation, plus the mode for WebGPU rows and resident CPU rows,
 * plus "4-bit" for qgemm's 4-bit weights, plus "after pause" for the decode loop's after-pause rows.
 */
export const label = (id: RowId): string =>
  `${SHORT[baseKey(id)] ?? baseKey(id)}${id.backend === 'webgpu' || id.mode !== 'call' ? ` ${id.mode}` : ''}${id.impl === 'qgemm' && id.rhsBits === 4 ? ' 4-bit' : ''}${id.loop === 'after-pause' ? ' after pause' : ''}`;

export function fmtGops(g: number | null): string {
  if (g === null) return '—';
  return g >= 100 ? g.toFixed(0) : g >= 10 ? g.toFixed(1) : g >= 1 ? g.toFixed(2) : g >= 0.01 ? g.toFixed(3) : g.toPrecision(2);
}

export const fmtMs = (ms: number | null): string =>
  ms === null
    ? '—'
    : ms >= 1000
      ? `${(ms / 1000).toFixed(2)} s`
      : ms >= 10
        ? `${ms.toFixed(0)} ms`
        : ms >= 1
          ? `${ms.toFixed(2)} ms`
          : ms >= 0.01 || ms === 0
            ? `${ms.toFixed(3)} ms`
            : `${ms.toPrecision(2)} ms`;

export const fmtX = (x: number | null): string => (x === null ? '—' : `${x}x`);

/** Row series present in the report, in the canonical order. */
export function columns(report: BenchReport): string[] {
  const seen = new Map<string, RowId>();
  for (const r of report.runs) if (!seen.has(rowKey(r))) seen.set(rowKey(r), r);
  return [...seen.entries()].sort((a, b) => rowRank(a[1]) - rowRank(b[1])).map(([k]) => k);
}

/** The inverse of rowKey. */
export const idOf = (key: string): RowId => {
  const [impl, backend, runtime, mode, ...rest] = key.split('/');
  return {
    impl,
    backend,
    runtime,
    mode,
    ...(rest.includes('rhs4') ? { rhsBits: 4 } : {}),
    ...(rest.includes('after-pause') ? { loop: 'after-pause' } : {}),
  } as RowId;
};

export function shapesOf(report: BenchReport): { m: number; n: number; k: number; conv?: ConvLayer }[] {
  const seen = new Map<string, { m: number; n: number; k: number; conv?: ConvLayer }>();
  for (const r of report.runs)
    if (!seen.has(shapeKey(r))) seen.set(shapeKey(r), { m: r.m, n: r.n, k: r.k, ...(r.conv ? { conv: r.conv } : {}) });
  return [...seen.values()];
}

/** The headline comparisons first: resident against tfjs and onnxruntime, then the rest. */
export function headline(report: BenchReport): Comparison[] {
  const rank = (c: Comparison) => (c.ours.mode === 'resident' ? 0 : c.ours.mode === 'call' ? 1 : 2) + (c.ours.backend === 'cpu' ? 3 : 0);
  return [...report.comparisons].sort((a, b) => rank(a) - rank(b));
}

export const roofText = (r: Row): string =>
  r.roofline ? `${(r.roofline.fraction * 100).toPrecision(2)}% of ${fmtMs(r.roofline.floorMs)}` : '';

function mark(r: Row): string {
  if (r.medianMs === null) return r.impl === 'qgemm' ? 'FAILED' : `not run: ${r.error ?? ''}`;
  return r.verified === true ? '✓' : r.verified === false ? '✗ FAILED' : '';
}

export function terminalReport(report: BenchReport): string {
  const lines: string[] = [];
  lines.push('');
  lines.push(`qgemm-webgpu benchmark (${report.suite}), ${report.date.slice(0, 19).replace('T', ' ')} UTC`);
  if (report.incomplete) lines.push(`INCOMPLETE: ${report.incomplete}`);
  lines.push(`machine: ${describeMachine(report.machine)}; adapter: ${report.adapterNote}`);
  lines.push(`qgemm output: ${report.pipeline.description}`);
  if (report.adapter.tuning) lines.push(`qgemm tuning table (Node): ${report.adapter.tuning}`);
  const c = report.adapter.ceilings;
  if (c && c.dot4Tops !== null)
    lines.push(
      `adapter ceilings (measured in this run): dot4 ${c.dot4Tops ?? '—'} TOPS, copy ${c.copyGBs ?? '—'} GB/s, read ${c.readGBs ?? '—'} GB/s, subgroup matrix ${c.subgroupMatrixTops === null || c.subgroupMatrixTops === undefined ? 'not offered' : `${c.subgroupMatrixTops} TOPS`}`,
    );
  if (report.comparisons.length) {
    lines.push('');
    lines.push('speed-up of qgemm (peer time / ours, > 1: qgemm faster), geometric mean over shapes: wall | GPU');
    for (const cmp of headline(report)) {
      lines.push(
        `  ${label(cmp.ours).padEnd(28)} vs ${label(cmp.peer).padEnd(28)} wall ${fmtX(cmp.geomean).padStart(8)} | GPU ${cmp.gpuGeomean === null ? 'n/a (no GPU time on a side)' : fmtX(cmp.gpuGeomean)}`,
      );
    }
  }
  lines.push('');
  lines.push(
    `wall = median of one call, calls back to back ("after pause" rows: single calls, each after ${PAUSE_MS} ms idle, wall only); GPU = timestamp queries, in separate calls; ✓ = every timed qgemm result verified bit-exact; roofline = floor / GPU time`,
  );
  const header = ['shape (MxNxK or conv layer)', 'implementation', 'wall', 'GPU', 'GOPS (wall)', 'GOPS (GPU)', 'kernel', 'roofline', ''];
  const table: string[][] = [];
  for (const s of shapesOf(report)) {
    const rows = report.runs.filter((r) => shapeKey(r) === shapeKey(s)).sort((a, b) => rowRank(a) - rowRank(b));
    for (const r of rows) {
      const gpu =
        r.gpuMedianMs !== null ? fmtMs(r.gpuMedianMs) : r.medianMs === null ? '—' : r.loop === 'after-pause' ? 'wall only' : 'no GPU time';
      table.push([
        shapeKey(r),
        label(r),
        fmtMs(r.medianMs),
        gpu,
        fmtGops(r.gops),
        fmtGops(r.gpuGops),
        r.kernel ?? '',
        roofText(r),
        mark(r),
      ]);
    }
  }
  const widths = header.map((h, i) => Math.max([...h].length, ...table.map((row) => [...row[i]].length)));
  const fmtRow = (row: string[]) =>
    row
      .map((cell, i) => (i < 2 || i >= 6 ? cell.padEnd(widths[i]) : cell.padStart(widths[i])))
      .join('  ')
      .trimEnd();
  lines.push(fmtRow(header));
  lines.push(widths.map((w) => '-'.repeat(w)).join('  '));
  for (const row of table) lines.push(fmtRow(row));

  if (report.comparisons.length) {
    lines.push('');
    lines.push('per shape (wall / GPU speed-up):');
    for (const cmp of headline(report)) {
      const per = cmp.shapes.map((s) => `${shapeKey(s)} ${s.speedup}x/${s.gpuSpeedup === null ? '—' : `${s.gpuSpeedup}x`}`).join(', ');
      lines.push(`  ${label(cmp.ours)} vs ${label(cmp.peer)}: ${per}`);
    }
  }
  const failed = report.runs.filter((r) => r.impl === 'qgemm' && r.verified !== true);
  if (failed.length) {
    lines.push('');
    lines.push(`FAILED qgemm rows (${failed.length}):`);
    for (const r of failed)
      lines.push(`  ${shapeKey(r)} ${label(r)}: ${r.error ?? r.verification?.error ?? JSON.stringify(r.verification?.firstMismatch)}`);
  }
  if (report.skipped.length) {
    lines.push('');
    lines.push(`skipped (${report.skipped.length}):`);
    const byReason = new Map<string, string[]>();
    for (const s of report.skipped)
      byReason.set(`${label(s)}: ${s.reason}`, [...(byReason.get(`${label(s)}: ${s.reason}`) ?? []), shapeKey(s)]);
    for (const [why, shapes] of byReason) lines.push(`  ${why} (${shapes.join(', ')})`);
  }
  for (const note of report.notes) if (!report.skipped.some((s) => note.includes(s.reason))) lines.push(`note: ${note}`);
  lines.push('');
  return lines.join('\n');
}
