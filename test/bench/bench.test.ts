// The benchmark harness (bench/), run programmatically on tiny shapes with every Node implementation:
// the JSON contract of issue 5 (field names and types), every qgemm row verified, peers' verified null,
// both output pipelines, the ONNX model built in code against the CPU reference, and the CLI's flags.
// No timing thresholds: only the shape of the results. The Chrome runtime is left to `npm run bench`
// (its page code is shared with the browser tests' Chromium launcher).
// Without a WebGPU adapter the harness runs the CPU rows only; in CI (CI=true) that fails.

import { describe, expect, it } from 'vitest';
import { parseCli, reportJson } from '../../bench/cli.ts';
import { runBenchmark, type BenchOptions, type BenchReport } from '../../bench/harness.ts';
import { IMPLS } from '../../bench/impls/types.ts';
import { createOrtSession, loadOrt, ortMatMulInteger } from '../../bench/impls/onnxruntime.ts';
import { naiveGemm } from '../../bench/impls/naive.ts';
import { makeShapeData } from '../../bench/problems.ts';
import { htmlReport } from '../../bench/report-html.ts';
import { terminalReport } from '../../bench/report-terminal.ts';
import { parseShapes, QUICK_SHAPES } from '../../bench/shapes.ts';
import { computeExpected, checkResult } from '../../bench/verify.ts';
import { referenceGemm } from '../../src/reference/gemm.ts';

const TINY = parseShapes('24x40x36,1x64x72');
const POLICY = { warmup: 1, minReps: 2, maxReps: 2, targetMs: 0 };

async function run(pipeline: 'uint8' | 'int32', shapes = TINY, impls: BenchOptions['impls'] = IMPLS): Promise<BenchReport> {
  return runBenchmark({
    shapes,
    impls,
    runtimes: ['node'],
    backends: ['webgpu', 'cpu'],
    policy: POLICY,
    budgetS: null,
    pipeline,
    seed: 7,
    suite: 'custom',
  });
}

function checkContract(report: BenchReport) {
  // Round-trip through the JSON text, as the outside checker reads it.
  const json = JSON.parse(reportJson(report));
  expect(Object.keys(json)).toEqual(expect.arrayContaining(['adapter', 'runs']));
  for (const field of ['vendor', 'architecture', 'description']) expect(typeof json.adapter[field]).toBe('string');
  expect(Array.isArray(json.runs)).toBe(true);
  for (const r of json.runs) {
    expect(['qgemm', 'tfjs-webgpu-f32', 'onnxruntime-node-matmulinteger', 'naive-js']).toContain(r.impl);
    expect(['webgpu', 'cpu']).toContain(r.backend);
    expect(['node', 'chrome']).toContain(r.runtime);
    expect(typeof r.adapter).toBe('string');
    expect(r.adapter.length).toBeGreaterThan(0);
    for (const f of ['m', 'n', 'k']) expect(Number.isInteger(r[f])).toBe(true);
    expect(typeof r.medianMs).toBe('number');
    expect(r.medianMs).toBeGreaterThan(0);
    expect(typeof r.gops).toBe('number');
    // Relative: both figures are rounded to 4 significant digits in the JSON.
    expect(Math.abs(r.gops / ((2 * r.m * r.n * r.k) / (r.medianMs * 1e6)) - 1)).toBeLessThan(2e-3);
    if (r.impl === 'qgemm') expect(r.verified, `${r.impl}/${r.backend} ${r.m}x${r.n}x${r.k}: ${JSON.stringify(r.verification)}`).toBe(true);
    else expect(r.verified).toBeNull();
  }
  return json;
}

describe('benchmark harness', () => {
  it('runs every Node implementation on tiny shapes and writes the JSON contract, every qgemm row verified', async () => {
    const report = await run('uint8');
    const json = checkContract(report);
    const keys = new Set(json.runs.map((r: { impl: string; backend: string }) => `${r.impl}/${r.backend}`));
    for (const k of ['qgemm/cpu', 'onnxruntime-node-matmulinteger/cpu', 'naive-js/cpu']) expect(keys).toContain(k);
    if (report.adapterKind !== 'none' || process.env.CI === 'true') {
      expect(keys).toContain('qgemm/webgpu');
      expect(keys).toContain('tfjs-webgpu-f32/webgpu');
    }
    // Every implementation ran on every shape (nothing trimmed: no budget).
    expect(json.runs.length).toBe(keys.size * TINY.length);
    expect(report.skipped.filter((s) => s.runtime === 'node')).toEqual([]);
    expect(report.pipeline.kind).toBe('uint8');
    expect(report.comparisons.length).toBeGreaterThan(0);
    // The reports render.
    expect(terminalReport(report)).toContain('24x40x36');
    const html = htmlReport(report);
    expect(html).toContain('<svg');
    expect(html).not.toMatch(/NaN|undefined/);
  });

  it('verifies raw int32 output too', async () => {
    const report = await run('int32', TINY.slice(0, 1), ['qgemm']);
    checkContract(report);
    expect(report.runs.length).toBeGreaterThan(0);
    expect(report.runs.filter((r) => r.impl === 'qgemm').every((r) => r.verification?.method === 'full')).toBe(true);
  });

  it('flags a wrong result as failed (sampled and full checks)', () => {
    for (const shape of [...parseShapes('8x8x8'), { m: 300, n: 260, k: 256, family: 'custom' as const }]) {
      const data = makeShapeData(shape, 3, 'uint8');
      const expected = computeExpected(data.problem, shape, 3);
      const good = referenceGemm(data.problem);
      expect(checkResult(expected, shape, good, ['a', 'a']).verified).toBe(true);
      const bad = { ...good, data: good.data.slice() };
      bad.data[bad.data.length - 1] ^= 1; // the last entry: always among the checked ones
      const v = checkResult(expected, shape, bad, ['a', 'a']);
      expect(v.verified).toBe(false);
      expect(v.firstMismatch).toMatchObject({ m: shape.m - 1, n: shape.n - 1 });
      expect(checkResult(expected, shape, good, ['a', 'b']).verified).toBe(false); // runs disagree
    }
  });

  it("builds onnxruntime's MatMulInteger model in code and it computes the reference's int32 accumulators", async () => {
    const ort = loadOrt();
    const session = await createOrtSession(ort);
    for (const shape of parseShapes('5x7x9,1x33x70,17x3x128')) {
      const data = makeShapeData(shape, 11, 'int32');
      const got = await ortMatMulInteger(ort, session, data);
      const want = referenceGemm(data.problem).data;
      expect(Array.from(got)).toEqual(Array.from(want));
      expect(Array.from(naiveGemm(data.lhs, data.rhs, shape.m, shape.n, shape.k, 119, 131))).toEqual(Array.from(want));
    }
  });

  it('parses the CLI flags', () => {
    const quick = parseCli(['--quick', '--json', 'out.json']);
    if (quick === 'help') throw new Error('unexpected help');
    expect(quick.options.suite).toBe('quick');
    expect(quick.options.shapes).toEqual(QUICK_SHAPES);
    expect(quick.options.shapes.some((s) => s.m === 1)).toBe(true);
    expect(quick.options.budgetS).toBeNull();
    expect(quick.json).toMatch(/out\.json$/);
    const custom = parseCli(['--shapes', '256x256x256,1x4096x4096', '--impls', 'qgemm,naive-js', '--runtimes', 'node', '--budget', '60', '--pipeline', 'int32']);
    if (custom === 'help') throw new Error('unexpected help');
    expect(custom.options.shapes.map((s) => [s.m, s.n, s.k])).toEqual([[256, 256, 256], [1, 4096, 4096]]);
    expect(custom.options.impls).toEqual(['qgemm', 'naive-js']);
    expect(custom.options.budgetS).toBe(60);
    expect(custom.options.pipeline).toBe('int32');
    expect(parseCli(['--help'])).toBe('help');
    expect(() => parseCli(['--impls', 'cublas'])).toThrow(/unknown "cublas"/);
    expect(() => parseCli(['--shapes', '12x0x3'])).toThrow(/MxNxK/);
    expect(() => parseCli(['--frobnicate'])).toThrow();
  });
});
