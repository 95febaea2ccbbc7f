// The terminal report: one table of GOPS (wall time) by shape and implementation, this project's rows
// marked verified (✓) or FAILED (✗), then the speed-ups over each peer and what was skipped.

import type { BenchReport, Row } from './harness.ts';
import { ROW_ORDER, rowKey, type RowId } from './impls/types.ts';
import { shapeKey } from './shapes.ts';

export const SHORT: Record<string, string> = {
  'qgemm/webgpu/node': 'qgemm webgpu node',
  'qgemm/webgpu/chrome': 'qgemm webgpu chrome',
  'qgemm/cpu/node': 'qgemm cpu node',
  'tfjs-webgpu-f32/webgpu/node': 'tfjs f32 node',
  'tfjs-webgpu-f32/webgpu/chrome': 'tfjs f32 chrome',
  'onnxruntime-node-matmulinteger/cpu/node': 'onnxruntime int8',
  'naive-js/cpu/node': 'naive-js',
};

export const label = (id: RowId): string => SHORT[rowKey(id)] ?? rowKey(id);

export function fmtGops(g: number | null): string {
  if (g === null) return '—';
  return g >= 100 ? g.toFixed(0) : g >= 10 ? g.toFixed(1) : g >= 1 ? g.toFixed(2) : g >= 0.01 ? g.toFixed(3) : g.toPrecision(2);
}

function cell(r: Row | undefined): string {
  if (!r) return 'skipped';
  if (r.medianMs === null) return 'FAILED';
  const mark = r.verified === true ? ' ✓' : r.verified === false ? ' ✗' : '';
  return `${fmtGops(r.gops)}${mark}`;
}

export function columns(report: BenchReport): string[] {
  const keys: string[] = [];
  for (const r of report.runs) if (!keys.includes(rowKey(r))) keys.push(rowKey(r));
  return keys.sort((a, b) => (ROW_ORDER.indexOf(a) + 1 || 99) - (ROW_ORDER.indexOf(b) + 1 || 99));
}

export function shapesOf(report: BenchReport): { m: number; n: number; k: number }[] {
  const seen = new Map<string, { m: number; n: number; k: number }>();
  for (const r of report.runs) if (!seen.has(shapeKey(r))) seen.set(shapeKey(r), { m: r.m, n: r.n, k: r.k });
  return [...seen.values()];
}

export function terminalReport(report: BenchReport): string {
  const cols = columns(report);
  const lines: string[] = [];
  lines.push('');
  lines.push(`qgemm-webgpu benchmark (${report.suite}), ${report.date.slice(0, 19).replace('T', ' ')} UTC`);
  lines.push(`machine: ${report.machine.cpu}, ${report.machine.cores} cores; adapter: ${report.adapterNote}`);
  lines.push(`qgemm output: ${report.pipeline.description}`);
  lines.push('GOPS = 2*M*N*K / median wall time (upload + compute + readback); ✓ = every timed qgemm result verified bit-exact against the CPU reference');
  lines.push('');
  const header = ['shape (MxNxK)', ...cols.map((c) => SHORT[c] ?? c)];
  const table = shapesOf(report).map((s) => [
    shapeKey(s),
    ...cols.map((c) => cell(report.runs.find((r) => rowKey(r) === c && r.m === s.m && r.n === s.n && r.k === s.k))),
  ]);
  const widths = header.map((h, i) => Math.max([...h].length, ...table.map((row) => [...row[i]].length)));
  const fmtRow = (row: string[]) => row.map((c, i) => (i === 0 ? c.padEnd(widths[i]) : c.padStart(widths[i]))).join('  ');
  lines.push(fmtRow(header));
  lines.push(widths.map((w) => '-'.repeat(w)).join('  '));
  for (const row of table) lines.push(fmtRow(row));

  const gpuRows = report.runs.filter((r) => r.gpuMedianMs !== null);
  if (gpuRows.length) {
    lines.push('');
    lines.push('GPU time (timestamp queries), GOPS: ' + cols
      .filter((c) => gpuRows.some((r) => rowKey(r) === c))
      .map((c) => `${SHORT[c] ?? c}: ${gpuRows.filter((r) => rowKey(r) === c).map((r) => `${shapeKey(r)} ${fmtGops(r.gpuGops)}`).join(', ')}`)
      .join('; '));
  }
  if (report.comparisons.length) {
    lines.push('');
    lines.push('speed-up of qgemm over each peer (peer wall time / ours; > 1 means qgemm is faster), geometric mean over shapes:');
    for (const c of report.comparisons) {
      const per = c.shapes.map((s) => `${shapeKey(s)} ${s.speedup}x`).join(', ');
      lines.push(`  ${label(c.ours).padEnd(20)} vs ${label(c.peer).padEnd(17)} ${String(c.geomean).padStart(7)}x   (${per})`);
    }
  }
  const failed = report.runs.filter((r) => r.impl === 'qgemm' && r.verified !== true);
  if (failed.length) {
    lines.push('');
    lines.push(`FAILED qgemm rows (${failed.length}):`);
    for (const r of failed) lines.push(`  ${shapeKey(r)} ${label(r)}: ${r.error ?? r.verification?.error ?? JSON.stringify(r.verification?.firstMismatch)}`);
  }
  if (report.skipped.length) {
    lines.push('');
    lines.push(`skipped (${report.skipped.length}):`);
    const byReason = new Map<string, string[]>();
    for (const s of report.skipped) byReason.set(`${label(s)}: ${s.reason}`, [...(byReason.get(`${label(s)}: ${s.reason}`) ?? []), shapeKey(s)]);
    for (const [why, shapes] of byReason) lines.push(`  ${why} (${shapes.join(', ')})`);
  }
  for (const note of report.notes) if (!report.skipped.some((s) => note.includes(s.reason))) lines.push(`note: ${note}`);
  lines.push('');
  return lines.join('\n');
}
