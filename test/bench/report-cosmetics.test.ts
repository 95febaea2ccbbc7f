// The bench reports as a reader sees them, rendered from a committed SwiftShader run
// (bench/results/): the wide "All rows" table scrolls inside its box, a missing GPU time is grey with
// its reason beside it (never alarm red), and a missing subgroup-matrix ceiling reads "not offered".

import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { htmlReport } from '../../bench/report-html.ts';
import { terminalReport } from '../../bench/report-terminal.ts';

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
  it('the terminal says "not offered" for a missing subgroup-matrix ceiling', () => {
    const text = terminalReport(report);
    expect(text).not.toMatch(/none TOPS/);
    if (report.adapter?.ceilings && report.adapter.ceilings.subgroupMatrixTops == null)
      expect(text).toContain('subgroup matrix not offered');
  });
});
