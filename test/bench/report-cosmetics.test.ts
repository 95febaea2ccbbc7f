// The bench reports as a reader sees them, rendered from a committed SwiftShader run
// (bench/results/): the wide "All rows" table wraps its long cells and scrolls inside its box, a missing
// GPU time is grey with its reason beside it (never alarm red), and a missing subgroup-matrix ceiling
// reads "not offered". The throughput chart's legend, on the run with the most series (23 row kinds),
// has one clearly distinct colour per implementation series, the mode shown once as opacity.

import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { htmlReport, PALETTE } from '../../bench/report-html.ts';
import { fmtMs, terminalReport } from '../../bench/report-terminal.ts';

const RESULTS = join(import.meta.dirname, '../../bench/results');
const file = readdirSync(RESULTS)
  .filter((f) => /swiftshader-quick\.json$/.test(f))
  .sort()
  .at(-1)!;
const report = JSON.parse(readFileSync(join(RESULTS, file), 'utf8'));

describe(`the reports of ${file}`, () => {
  it('the HTML table scrolls in its box; missing GPU time is grey with its reason; no "none"/"not offered" TOPS', () => {
    const html = htmlReport(report);
    expect(html).toContain('<div class="scroll"><table>');
    expect(html).toMatch(/\.scroll \{ overflow-x: auto;/);
    expect(html).not.toMatch(/none TOPS|not offered TOPS/);
    expect(html).not.toMatch(/class="big worse">n\/a/);
    const noted = report.runs.filter(
      (r: { gpuMedianMs: number | null; medianMs: number | null; gpuNote?: string }) =>
        r.gpuMedianMs === null && r.medianMs !== null && r.gpuNote,
    );
    if (noted.length) expect(html).toContain('<span class="na">no GPU time</span><div class="why">');
  });
  it("both say a checkpoint is incomplete, name the machine's vector extensions, and print the command once escaped", () => {
    const partial = {
      ...report,
      incomplete: 'a checkpoint written after 2 rows',
      machine: { ...report.machine, isa: 'AVX2 AVX-512 VNNI' },
      command: 'bench --json a&b.json',
    };
    const html = htmlReport(partial);
    expect(html).toContain('<dt>INCOMPLETE</dt><dd>a checkpoint written after 2 rows</dd>');
    expect(html).toContain('(AVX2 AVX-512 VNNI)');
    expect(html).toContain('bench --json a&amp;b.json');
    expect(html).not.toContain('&amp;amp;');
    const text = terminalReport(partial);
    expect(text).toContain('INCOMPLETE: a checkpoint written after 2 rows');
    expect(text).toContain('(AVX2 AVX-512 VNNI)');
    expect(terminalReport(report)).not.toContain('INCOMPLETE');
  });
  it('the terminal says "not offered" for a missing subgroup-matrix ceiling', () => {
    const text = terminalReport(report);
    expect(text).not.toMatch(/none TOPS/);
    if (report.adapter?.ceilings && report.adapter.ceilings.subgroupMatrixTops == null)
      expect(text).toContain('subgroup matrix not offered');
  });
});

/** The committed report with the most row kinds (implementation, backend, runtime, mode, bits). */
const widest = readdirSync(RESULTS)
  .filter((f) => f.endsWith('.json'))
  .map((f) => JSON.parse(readFileSync(join(RESULTS, f), 'utf8')))
  .filter((r) => Array.isArray(r.runs) && r.runs.length > 0 && r.adapter)
  .map((r) => ({
    r,
    kinds: new Set(r.runs.map((x: Record<string, unknown>) => [x.impl, x.backend, x.runtime, x.mode, x.rhsBits].join('/'))).size,
  }))
  .sort((a, b) => b.kinds - a.kinds)[0];

describe('the throughput chart legend', () => {
  const rgb = (hex: string) => [1, 3, 5].map((i) => Number.parseInt(hex.slice(i, i + 2), 16));
  it('the palette is clearly distinct: no two colours within 60 of each other (RGB distance)', () => {
    for (const [i, a] of PALETTE.entries()) {
      for (const b of PALETTE.slice(i + 1)) {
        const d = Math.hypot(...rgb(a).map((v, j) => v - rgb(b)[j]));
        expect(d, `${a} ${b}`).toBeGreaterThan(60);
      }
    }
  });
  it(`groups by implementation series: one colour each, all different (${widest.kinds} row kinds)`, () => {
    expect(widest.kinds).toBeGreaterThanOrEqual(20);
    const html = htmlReport(widest.r);
    const legend = html.slice(html.indexOf('<div class="legend">'), html.indexOf('<svg', html.indexOf('<div class="legend">')));
    const swatches = [...legend.matchAll(/<i style="background:(#[0-9a-f]{6})"><\/i>/g)].map((m) => m[1]);
    const series = new Set(widest.r.runs.map((x: Record<string, unknown>) => [x.impl, x.backend, x.runtime, x.rhsBits].join('/')));
    expect(swatches.length).toBe(series.size);
    expect(new Set(swatches).size).toBe(swatches.length);
    expect(swatches.length).toBeLessThan(widest.kinds);
    expect(legend).toContain('mode (opacity):');
  });
  it('a floor or a time under 0.01 ms keeps two significant digits, not "0.000 ms"', () => {
    expect(fmtMs(0.00042)).toBe('0.00042 ms');
    expect(fmtMs(0.0123)).toBe('0.012 ms');
    expect(fmtMs(3.456)).toBe('3.46 ms');
    expect(fmtMs(null)).toBe('—');
    expect(fmtMs(0)).toBe('0.000 ms');
  });
});
