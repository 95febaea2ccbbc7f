// The benchmark harness (bench/), run programmatically on tiny shapes with every Node implementation:
// the JSON contract of issues 5 and 9 (field names and types: modes, kernel, roofline, adapter.ceilings,
// gpuGeomean, the onnxruntime WebGPU rows or their reasons), every qgemm row verified, peers' verified
// null, both output pipelines, the ONNX models built in code against the CPU reference, the pure helpers
// (comparisons, rooflines, onnxruntime profile parsing) and the CLI's flags.
// No timing thresholds: only the shape of the results. The Chrome runtime runs once, on one small shape:
// every Chrome row (qgemm in three modes on WebGPU, 4-bit weights resident, two modes on the CPU, tfjs, onnxruntime-web's WebGPU and
// WASM EPs) with the same contract as Node's, every qgemm row verified, and the Chrome comparisons; and a tiny
// convolution layer (qgemm: one gemm that packs the patches in its pass; tfjs conv2d), in Node and in Chrome.
// Without a WebGPU adapter the harness runs the CPU rows only; in CI (CI=true) that fails. The bundled
// CLI's bad input (a misspelt QGEMM_DAWN_TOGGLES, a --tuning table of another adapter) is exit 2 in one line.

import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseCli, reportJson } from '../../bench/cli.ts';
import { runBenchmark, type BenchOptions } from '../../bench/harness.ts';
import { afterPauseRow, type BenchReport, type Row } from '../../bench/report.ts';
import { measure, PAUSE_MS, stats } from '../../bench/timing.ts';
import { TRACE_STEPS } from '../../src/scheduler/trace.ts';
import { roofline } from '../../bench/ceilings.ts';
import { compare } from '../../bench/compare.ts';
import { IMPLS, MODES, ORT_WEBGPU_IMPLS, rowKey, type RowId } from '../../bench/impls/types.ts';
import { chromiumPath, WEBGPU_FLAGS } from '../../tools/chromium.ts';
import {
  createOrtSession,
  createOrtWeightsSession,
  loadOrt,
  ortMatMulInteger,
  ortMatMulIntegerWeights,
} from '../../bench/impls/onnxruntime.ts';
import { gpuMsPerRun } from '../../bench/impls/onnxruntime-webgpu.ts';
import { matMulF32Model, matMulNBitsModel } from '../../bench/onnx-model.ts';
import { naiveGemm } from '../../bench/impls/naive.ts';
import { makeShapeData, problemFor } from '../../bench/problems.ts';
import { htmlReport } from '../../bench/report-html.ts';
import { terminalReport } from '../../bench/report-terminal.ts';
import { CONV_LAYERS, convKey, parseShapes, QUICK_SHAPES, shapeKey, SKINNY_SHAPES } from '../../bench/shapes.ts';
import { conv2d } from '../../src/layers/layers.ts';
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
    modes: MODES,
    policy: POLICY,
    budgetS: null,
    pipeline,
    seed: 7,
    suite: 'custom',
  });
}

function checkContract(report: BenchReport) {
  // Round-trip through the JSON text, as a reader of the report gets it.
  const json = JSON.parse(reportJson(report));
  expect(Object.keys(json)).toEqual(expect.arrayContaining(['adapter', 'runs']));
  for (const field of ['vendor', 'architecture', 'description']) expect(typeof json.adapter[field]).toBe('string');
  const ceilings = json.adapter.ceilings;
  for (const field of ['dot4Tops', 'copyGBs', 'readGBs', 'subgroupMatrixTops']) {
    expect(field in ceilings).toBe(true);
    expect(ceilings[field] === null || (typeof ceilings[field] === 'number' && ceilings[field] > 0)).toBe(true);
  }
  if (report.adapterKind !== 'none') for (const field of ['dot4Tops', 'copyGBs', 'readGBs']) expect(typeof ceilings[field]).toBe('number');
  // The tuning table qgemm's context ran: the rules where none serves (SwiftShader has no committed table).
  if (report.adapterKind !== 'none') expect(json.adapter.tuning).toMatch(/^none \(the registry's rules\)$|^(committed )?table /);
  else expect(json.adapter.tuning).toBeNull();
  expect(Array.isArray(json.runs)).toBe(true);
  for (const r of json.runs) {
    expect(IMPLS).toContain(r.impl);
    expect(['webgpu', 'cpu']).toContain(r.backend);
    expect(['node', 'chrome']).toContain(r.runtime);
    expect(MODES).toContain(r.mode);
    expect(typeof r.adapter).toBe('string');
    expect(r.adapter.length).toBeGreaterThan(0);
    for (const f of ['m', 'n', 'k']) expect(Number.isInteger(r[f])).toBe(true);
    // The weights' bit width: every qgemm row 8 or 4, MatMulNBits-8/-4 8/4, every other peer null.
    expect('rhsBits' in r).toBe(true);
    if (r.impl === 'qgemm') expect([8, 4]).toContain(r.rhsBits);
    else expect(r.rhsBits).toBe({ 'onnxruntime-webgpu-matmulnbits8': 8, 'onnxruntime-webgpu-matmulnbits4': 4 }[r.impl as string] ?? null);
    if (r.rhsBits === 4 && r.impl === 'qgemm') expect(r.mode).toBe('resident');
    if (r.impl === 'qgemm') expect(typeof r.kernel).toBe('string');
    else expect(r.kernel).toBeNull();
    // a convolution layer has no GEMM floor (it reads its NHWC input, not an M x K patch matrix)
    if (r.impl === 'qgemm' && r.backend === 'webgpu' && r.gpuMedianMs !== null && report.adapterKind !== 'none' && !r.conv) {
      expect(typeof r.roofline.floorMs).toBe('number');
      expect(r.roofline.fraction).toBeCloseTo(r.roofline.floorMs / r.gpuMedianMs, 2);
      expect(Number.isInteger(r.roofline.bytes) && r.roofline.bytes > 0).toBe(true);
    } else {
      expect(r.roofline).toBeNull();
    }
    if (r.gpuMedianMs === null) expect(typeof r.gpuNote).toBe('string');
    if (r.impl !== 'qgemm' && r.medianMs === null) {
      // A peer that could not run says why.
      expect(typeof r.error).toBe('string');
      continue;
    }
    expect(typeof r.medianMs).toBe('number');
    expect(r.medianMs).toBeGreaterThan(0);
    expect(typeof r.gops).toBe('number');
    // Relative: both figures are rounded to 4 significant digits in the JSON.
    expect(Math.abs(r.gops / ((2 * r.m * r.n * r.k) / (r.medianMs * 1e6)) - 1)).toBeLessThan(2e-3);
    if (r.impl === 'qgemm') expect(r.verified, `${r.impl}/${r.backend} ${r.m}x${r.n}x${r.k}: ${JSON.stringify(r.verification)}`).toBe(true);
    else expect(r.verified).toBeNull();
  }
  for (const c of json.comparisons) {
    expect('gpuGeomean' in c).toBe(true);
    expect(c.gpuGeomean === null || c.gpuGeomean > 0).toBe(true);
    expect(c.ours.mode).toBe(c.peer.mode);
    expect(c.ours.loop).toBe(c.peer.loop);
  }
  return json;
}

describe('benchmark harness', () => {
  it('runs every Node implementation on tiny shapes and writes the JSON contract, every qgemm row verified', async () => {
    const report = await run('uint8');
    const json = checkContract(report);
    const keys = new Set(
      json.runs.map(
        (r: { impl: string; backend: string; mode: string; loop: string }) =>
          `${r.impl}/${r.backend}/${r.mode}${r.loop === 'after-pause' ? '/after-pause' : ''}`,
      ),
    );
    for (const k of ['qgemm/cpu/call', 'onnxruntime-node-matmulinteger/cpu/call', 'naive-js/cpu/call']) expect(keys).toContain(k);
    if (report.adapterKind !== 'none' || process.env.CI === 'true') {
      for (const mode of MODES) {
        expect(keys).toContain(`qgemm/webgpu/${mode}`);
        expect(keys).toContain(`tfjs-webgpu-f32/webgpu/${mode}`);
      }
      // The onnxruntime WebGPU rows are there, measured or with the reason they could not run.
      for (const impl of ORT_WEBGPU_IMPLS) expect(keys).toContain(`${impl}/webgpu/resident`);
    }
    // Every implementation ran on every shape (nothing trimmed: no budget).
    expect(json.runs.length).toBe(keys.size * TINY.length);
    expect(report.skipped.filter((s) => s.runtime === 'node')).toEqual([]);
    expect(report.pipeline.kind).toBe('uint8');
    expect(report.comparisons.length).toBeGreaterThan(0);
    if (report.adapterKind !== 'none' && (report.adapter.features as string[]).includes('timestamp-query')) {
      const resident = report.comparisons.find((c) => c.ours.mode === 'resident' && c.peer.impl === 'tfjs-webgpu-f32');
      expect(resident?.gpuGeomean ?? null).not.toBeNull(); // both sides have GPU time where timestamps exist
    }
    // The decode loop: qgemm's WebGPU rows have their wall time from untimed calls and their GPU time from
    // separate timed ones (the note says so) and a trace of each step where they read back; every resident
    // row (qgemm's and the peers' on WebGPU in Node) times calls back to back and has an after-pause row
    // of its own: single calls, each after a pause, wall time only, qgemm's verified.
    const live = json.runs.filter((x: Row) => x.medianMs !== null);
    for (const r of live.filter((x: Row) => x.impl === 'qgemm' && x.backend === 'webgpu' && x.loop === 'back-to-back')) {
      if (r.gpuMedianMs !== null) expect(r.gpuNote).toMatch(/separate/);
      if (r.mode !== 'device') expect(r.trace.steps.map((s: { step: string }) => s.step)).toEqual([...TRACE_STEPS]);
      if (r.mode === 'resident') expect(r.trace.plan).toBe('hit'); // the prepacked rhs and the CPU lhs: every traced call replays its plan
    }
    for (const r of live.filter((x: Row) => x.backend === 'webgpu' && x.mode === 'resident' && x.loop === 'back-to-back')) {
      const paused = json.runs.filter((x: Row) => rowKey(x) === `${rowKey(r)}/after-pause` && shapeKey(x) === shapeKey(r));
      expect(paused.length, rowKey(r)).toBe(1);
      expect(paused[0], rowKey(r)).toMatchObject({ pauseMs: PAUSE_MS, reps: POLICY.minReps, gpuMedianMs: null, verified: r.verified });
    }
    expect(live.filter((x: Row) => x.loop === 'after-pause').every((x: Row) => x.mode === 'resident' && x.backend === 'webgpu')).toBe(true);
    // The reports render.
    expect(terminalReport(report)).toContain('24x40x36');
    expect(terminalReport(report)).toMatch(/wall .* \| GPU/);
    const html = htmlReport(report);
    expect(html).toContain('<svg');
    expect(html).not.toMatch(/NaN|undefined/);
  });

  it.skipIf(!chromiumPath() && process.env.CI !== 'true')(
    'runs every Chrome row in headless Chromium with the same JSON contract, every qgemm row verified',
    async () => {
      const shapes = parseShapes('24x40x64,conv9x7x5-k3x3-s2-o6');
      const report = await runBenchmark({
        shapes,
        impls: IMPLS,
        runtimes: ['chrome'],
        backends: ['webgpu', 'cpu'],
        modes: MODES,
        rhsBits: [8, 4],
        // A short clock warm-up: the page runs warmUntilSteady from its source (bench/impls/chrome.ts).
        policy: { ...POLICY, warmRule: { minMs: 1, maxMs: 40, windowMs: 5, tolerance: 0.5 } },
        budgetS: null,
        pipeline: 'uint8',
        seed: 7,
        suite: 'custom',
      });
      const json = checkContract(report);
      for (const r of json.runs.filter((r: Row) => r.loop !== 'after-pause'))
        expect(r.warm, rowKey(r)).toMatchObject({ steady: expect.any(Boolean) });
      const keys = new Set(json.runs.map((r: RowId) => rowKey(r)));
      const expected = [
        ...MODES.flatMap((mode) => [`qgemm/webgpu/chrome/${mode}`, `tfjs-webgpu-f32/webgpu/chrome/${mode}`]),
        'qgemm/webgpu/chrome/resident/rhs4',
        'qgemm/cpu/chrome/call',
        'qgemm/cpu/chrome/resident',
        ...ORT_WEBGPU_IMPLS.map((impl) => `${impl}/webgpu/chrome/resident`),
        'onnxruntime-web-matmulinteger/cpu/chrome/call',
        'onnxruntime-web-matmulinteger/cpu/chrome/resident',
      ];
      // The decode loop's after-pause rows, as in Node: every resident WebGPU row, qgemm's and the peers'.
      const resident = expected.filter((key) => key.includes('/webgpu/chrome/resident'));
      expect([...keys].sort()).toEqual([...expected, ...resident.map((key) => `${key}/after-pause`)].sort());
      for (const r of json.runs.filter(
        (x: Row) => x.loop === 'back-to-back' && x.mode === 'resident' && x.backend === 'webgpu' && !x.conv,
      )) {
        const paused = json.runs.filter((x: Row) => rowKey(x) === `${rowKey(r)}/after-pause` && shapeKey(x) === shapeKey(r));
        expect(paused.length, rowKey(r)).toBe(1);
        expect(paused[0], rowKey(r)).toMatchObject({ pauseMs: PAUSE_MS, reps: POLICY.minReps, gpuMedianMs: null, verified: r.verified });
      }
      expect(json.runs.some((x: Row) => x.loop === 'after-pause' && x.conv)).toBe(false);
      expect(json.runs.every((r: { runtime: string }) => r.runtime === 'chrome')).toBe(true);
      // qgemm's rows, GEMM and convolution: the wall time from untimed calls, the GPU time from separate timed calls.
      for (const r of json.runs.filter((x: Row) => x.impl === 'qgemm' && x.backend === 'webgpu' && x.gpuMedianMs !== null))
        expect(r.gpuNote, rowKey(r)).toMatch(/separate/);
      // Every Chrome row ran here (a peer's reason would be a failure: they all run on SwiftShader).
      for (const r of json.runs) expect(r.medianMs, `${rowKey(r)}: ${r.error}`).not.toBeNull();
      // The page is cross-origin isolated, so the CPU rows say their threads; the report records the flags.
      expect(json.chrome.crossOriginIsolated).toBe(true);
      expect(json.chrome.flags).toEqual(expect.arrayContaining([...WEBGPU_FLAGS.common]));
      const cpuRows = json.implementations.filter((r: RowId) => r.backend === 'cpu');
      expect(cpuRows.length).toBe(4);
      for (const r of cpuRows) expect(r.details).toMatch(/on [1-9]\d* thread|numThreads [1-9]/);
      // The comparisons: qgemm resident against each onnxruntime-web WebGPU row, and the CPU pairs.
      const pairs = json.comparisons.map((c: { ours: RowId; peer: RowId }) => `${rowKey(c.ours)} vs ${rowKey(c.peer)}`);
      for (const impl of ORT_WEBGPU_IMPLS) expect(pairs).toContain(`qgemm/webgpu/chrome/resident vs ${impl}/webgpu/chrome/resident`);
      expect(pairs).toContain('qgemm/webgpu/chrome/resident/rhs4 vs onnxruntime-webgpu-matmulnbits4/webgpu/chrome/resident');
      expect(pairs).toContain('qgemm/cpu/chrome/call vs onnxruntime-web-matmulinteger/cpu/chrome/call');
      expect(pairs).toContain(
        'qgemm/webgpu/chrome/resident/after-pause vs onnxruntime-webgpu-matmulnbits8/webgpu/chrome/resident/after-pause',
      );
      if ((json.chrome.adapter?.features ?? []).includes('timestamp-query')) {
        const nbits8 = json.comparisons.find((c: { peer: RowId }) => c.peer.impl === 'onnxruntime-webgpu-matmulnbits8');
        expect(nbits8.gpuGeomean).not.toBeNull(); // both sides have GPU time: timestamps and onnxruntime-web's profile
      }
      expect(htmlReport(report)).toContain('ort-web');
      // The convolution layer: qgemm WebGPU (verified by checkContract) and tfjs conv2d, in every mode.
      const conv = json.runs.filter((r: { conv?: object }) => r.conv).map((r: RowId) => rowKey(r));
      expect(conv.sort()).toEqual(MODES.flatMap((m) => [`qgemm/webgpu/chrome/${m}`, `tfjs-webgpu-f32/webgpu/chrome/${m}`]).sort());
    },
    180_000,
  );

  it('runs convolution layers as convolutions: qgemm (patches gathered or packed in the gemm pass) verified in every mode, tfjs conv2d f32 beside it', async () => {
    // SAME at stride 1 and 2 (uneven padding), VALID; one beside the GEMM of the same M x N x K.
    const shapes = parseShapes('conv9x7x5-k3x3-s1-o6,conv10x9x4-k3x3-s2-o5,conv6x6x3-k3x3-s1-valid-o4,63x6x45');
    const report = await runBenchmark({
      shapes,
      impls: ['qgemm', 'tfjs-webgpu-f32', 'naive-js'],
      runtimes: ['node'],
      backends: ['webgpu', 'cpu'],
      modes: MODES,
      policy: POLICY,
      budgetS: null,
      pipeline: 'uint8',
      seed: 7,
      suite: 'custom',
    });
    const json = checkContract(report);
    if (report.adapterKind === 'none' && process.env.CI !== 'true') return; // no WebGPU here: nothing more to see
    const convRows = json.runs.filter((r: { conv?: object }) => r.conv);
    // Only the convolution implementations run the layers: qgemm WebGPU (each verified, a GEMM kernel named;
    // device: the input a GpuMatrix read where it is) and tfjs, in every mode.
    const series = (key: string) => convRows.filter((r: RowId) => rowKey(r) === key);
    for (const s of shapes.filter((x) => x.conv)) {
      const at = convRows.filter((r: { conv: object }) => shapeKey(r as never) === shapeKey(s));
      expect(at.map((r: RowId) => rowKey(r)).sort()).toEqual(
        [...MODES.map((m) => `qgemm/webgpu/node/${m}`), ...MODES.map((m) => `tfjs-webgpu-f32/webgpu/node/${m}`)].sort(),
      );
      for (const r of at.filter((x: RowId) => x.impl === 'qgemm')) {
        expect(r.verified, JSON.stringify(r.verification)).toBe(true);
        expect(r.verification.method).toBe('full');
        expect([r.m, r.n, r.k]).toEqual([s.m, s.n, s.k]);
        // dot4-tiled kernels gather the patches themselves; the others pack them first, in the same pass.
        const gathers = /^dot4-(32x32|64x64)/.test(r.kernel);
        expect(r.gpuNote).toMatch(
          gathers ? /one pass of the GEMM, which gathers the patches from the input itself/ : /one pass of the patch pack/,
        );
        expect(r.gpuMedianMs).toBeGreaterThan(0); // the one pass
      }
      // tfjs's wall time from plain calls, as its GEMM rows' (tf.time adds a query readback to a call).
      for (const r of at.filter((x: Row) => x.impl === 'tfjs-webgpu-f32' && x.gpuMedianMs !== null))
        expect(r.gpuNote, rowKey(r)).toMatch(/separate tf\.time calls; the wall time from plain calls/);
    }
    expect(series('qgemm/webgpu/node/call').length).toBe(3);
    expect(series('qgemm/webgpu/node/device').length).toBe(3);
    expect(report.skipped.filter((x) => x.conv && x.impl === 'qgemm')).toEqual([]);
    // The GEMM of the same M x N x K stays a row of its own, and the comparisons pair conv rows by layer.
    expect(json.runs.filter((r: { m: number; conv?: object }) => r.m === 63 && !r.conv).length).toBeGreaterThan(0);
    const resident = report.comparisons.find((c) => c.ours.mode === 'resident' && c.peer.impl === 'tfjs-webgpu-f32');
    expect(resident?.shapes.filter((x) => x.conv).map((x) => shapeKey(x))).toEqual(shapes.filter((x) => x.conv).map((x) => shapeKey(x)));
    const text = terminalReport(report);
    expect(text).toContain('conv10x9x4-k3x3-s2-o5');
    expect(htmlReport(report)).not.toMatch(/NaN|undefined/);
  });

  it("verifies a convolution layer against the reference GEMM over its im2col rows, which equals the library's conv2d on the CPU", async () => {
    for (const shape of parseShapes('conv9x7x5-k3x3-s1-o6,conv10x9x4-k3x3-s2-o5,conv6x6x3-k3x3-s1-valid-o4,conv12x12x8-k1x1-s2-o3')) {
      const data = makeShapeData(shape, 5, 'uint8');
      const c = data.conv!;
      const lib = await conv2d({ data: c.input, shape: [1, c.geometry.height, c.geometry.width, c.geometry.channels] }, c.params, {
        backend: 'cpu',
      });
      expect(lib.shape).toEqual([1, c.geometry.outHeight, c.geometry.outWidth, shape.n]);
      const want = referenceGemm(data.problem);
      expect(Array.from(lib.data)).toEqual(Array.from(want.data));
      for (const method of ['full', 'sampled'] as const) {
        const expected = computeExpected(data.problem, shape, 5, method);
        expect(checkResult(expected, shape, want, ['a', 'a']).verified).toBe(true);
      }
      // The pipeline is conv2d's (kernel path 'xnnpack': requantizeFloat32), and the int32 rows run no stage.
      expect(data.problem.pipeline?.map((st) => st.type)).toEqual(['bias', 'requantizeFloat32', 'clamp', 'saturatingCast']);
      expect(makeShapeData(shape, 5, 'int32').problem.pipeline).toEqual([]);
    }
  });

  it('verifies raw int32 output too', async () => {
    const report = await run('int32', TINY.slice(0, 1), ['qgemm']);
    checkContract(report);
    expect(report.runs.length).toBeGreaterThan(0);
    expect(report.runs.filter((r) => r.impl === 'qgemm').every((r) => r.verification?.method === 'full')).toBe(true);
  });

  it('runs qgemm resident with 8- and 4-bit weights (--rhs-bits 8,4): rhsBits on every row, each verified with its own bitDepth', async () => {
    const shapes = parseShapes('1x64x64,3x33x96');
    const report = await runBenchmark({
      shapes,
      impls: ['qgemm'], // the peers' rhsBits are checked on the first test's rows (checkContract)
      runtimes: ['node'],
      backends: ['webgpu'],
      modes: ['resident'],
      rhsBits: [8, 4],
      policy: POLICY,
      budgetS: null,
      pipeline: 'uint8',
      seed: 7,
      suite: 'custom',
    });
    const json = checkContract(report);
    if (report.adapterKind === 'none' && process.env.CI !== 'true') return; // no WebGPU here: nothing more to see
    for (const s of shapes) {
      const at = json.runs.filter((r: { m: number; n: number; k: number }) => r.m === s.m && r.n === s.n && r.k === s.k);
      const qgemm = at.filter((r: Row) => r.impl === 'qgemm' && r.loop === 'back-to-back');
      expect(qgemm.map((r: { rhsBits: number }) => r.rhsBits).sort()).toEqual([4, 8]);
      for (const r of qgemm) expect(r.verified, JSON.stringify(r.verification)).toBe(true);
      // Two values per byte: the 4-bit row's roofline counts N packed rows of K nibbles, fewer bytes than
      // K*N, whatever rows the prepack pads for its kernels' tiles (128 for 4-bit weights).
      const [r8, r4] = [8, 4].map((b) => qgemm.find((r: { rhsBits: number }) => r.rhsBits === b));
      if (r8.roofline && r4.roofline && report.adapter.dot4 === 'native') {
        expect(r8.roofline.bytes).toBe(s.m * s.k + s.k * s.n + s.m * s.n);
        expect(r4.roofline.bytes).toBe(s.m * s.k + s.n * Math.ceil(s.k / 64) * 32 + s.m * s.n);
        expect(r4.roofline.bytes).toBeLessThan(r8.roofline.bytes);
      }
    }
    // Two row series, two labels, and the 4-bit series compared with the 8-bit one and with MatMulNBits-4.
    // (and the decode loop's after-pause row of each).
    expect(new Set(report.runs.filter((r) => r.impl === 'qgemm').map((r) => rowKey(r)))).toEqual(
      new Set([
        'qgemm/webgpu/node/resident',
        'qgemm/webgpu/node/resident/rhs4',
        'qgemm/webgpu/node/resident/after-pause',
        'qgemm/webgpu/node/resident/rhs4/after-pause',
      ]),
    );
    expect(terminalReport(report)).toContain('qgemm webgpu node resident 4-bit');
    expect(terminalReport(report)).toContain('qgemm webgpu node resident 4-bit after pause');
    expect(htmlReport(report)).toContain('resident after pause');
    const vs8 = report.comparisons.find((c) => c.ours.rhsBits === 4 && c.peer.impl === 'qgemm');
    expect(vs8?.shapes.length).toBe(shapes.length);
    expect(htmlReport(report)).not.toMatch(/NaN|undefined/);
  });

  it("makes a row of the after-pause calls: wall only, qgemm's verified only where every call returned the back-to-back bytes", () => {
    const shape = parseShapes('1x64x64')[0];
    const verification = { verified: true, method: 'full' as const, checked: 64, mismatches: 0, consistent: true };
    const row = {
      impl: 'qgemm',
      backend: 'webgpu',
      runtime: 'node',
      mode: 'resident',
      adapter: 'swiftshader',
      m: 1,
      n: 64,
      k: 64,
      rhsBits: 8,
      loop: 'back-to-back',
      medianMs: 1,
      gops: 0.0082,
      verified: true,
      minMs: 1,
      maxMs: 1,
      q1Ms: 1,
      q3Ms: 1,
      reps: 3,
      gpuMedianMs: 0.5,
      gpuMinMs: 0.5,
      gpuMaxMs: 0.5,
      gpuGops: 0.016,
      kernel: 'gemv',
      roofline: null,
      computes: '',
      verification,
      trace: { calls: 5, plan: 'hit', steps: [], totalMs: 1 },
    } as Row;
    const pause = stats([2, 3, 4]);
    expect(pause).toMatchObject({ medianMs: 3, minMs: 2, maxMs: 4, q1Ms: 2.5, q3Ms: 3.5, reps: 3, cv: 1 / 3 }); // sd 1 (n - 1), mean 3
    expect(stats([5]).cv).toBe(0);
    const same = afterPauseRow(row, pause, { loop: ['a', 'a'], paused: ['a', 'a', 'a'] }, shape);
    expect(same).toMatchObject({
      loop: 'after-pause',
      pauseMs: PAUSE_MS,
      medianMs: 3,
      reps: 3,
      cv: 0.333,
      gpuMedianMs: null,
      gpuCv: null,
      verified: true,
    });
    expect(same.trace).toBeUndefined();
    expect(rowKey(same)).toBe('qgemm/webgpu/node/resident/after-pause');
    const other = afterPauseRow(row, pause, { loop: ['a'], paused: ['a', 'b', 'a'] }, shape);
    expect(other.verified).toBe(false);
    expect(other.verification).toMatchObject({ verified: false, consistent: false, error: expect.stringMatching(/after-pause/) });
    const peer = afterPauseRow({ ...row, impl: 'tfjs-webgpu-f32', verified: null, verification: undefined }, pause, { loop: [] }, shape);
    expect(peer.verified).toBeNull();
  });

  it('verifies 4-bit results against the reference with the same bitDepth (sampled and full checks)', () => {
    for (const shape of parseShapes('5x33x64,2x70x1100')) {
      const data = makeShapeData(shape, 3, 'uint8');
      const want = referenceGemm(problemFor(data.problem, 4));
      for (const method of ['full', 'sampled'] as const) {
        const expected = computeExpected(problemFor(data.problem, 4), shape, 3, method);
        expect(expected.method).toBe(method);
        expect(checkResult(expected, shape, want, ['a', 'a']).verified).toBe(true);
        // The 8-bit result is not the 4-bit one: the expectation does use the bitDepth.
        expect(checkResult(expected, shape, referenceGemm(data.problem), ['a', 'a']).verified).toBe(false);
      }
    }
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
      // The resident peer: B and its zero point as initializers.
      const weights = await createOrtWeightsSession(ort, data);
      expect(Array.from(await ortMatMulIntegerWeights(ort, weights, data))).toEqual(Array.from(want));
      await weights.release?.();
    }
  });

  it("builds onnxruntime's MatMul f32 and MatMulNBits (8 and 4 bits) models in code; they compute A x (W - zero point)", async () => {
    const ort = loadOrt();
    const [m, n, k] = [3, 5, 64];
    const w8 = makeShapeData({ m, n, k, family: 'custom' }, 5, 'int32').rhs;
    // Activations whose every 32-block holds a +-127: accuracy_level 4 quantizes A per block with scale
    // max|a|/127 = 1, so the int8 path is exact too.
    const a = Float32Array.from({ length: m * k }, (_, i) => (i % 32 === 0 ? (i % 64 === 0 ? 127 : -127) : ((i * 37) % 255) - 127));
    const cases = [
      {
        model: matMulF32Model(
          Float32Array.from(w8, (v) => v - 131),
          k,
          n,
        ),
        w: (kk: number, j: number) => w8[kk * n + j] - 131,
      },
      { model: matMulNBitsModel(w8, k, n, 8, 131), w: (kk: number, j: number) => w8[kk * n + j] - 131 },
      {
        model: matMulNBitsModel(
          w8.map((v) => v >> 4),
          k,
          n,
          4,
          8,
        ),
        w: (kk: number, j: number) => (w8[kk * n + j] >> 4) - 8,
      },
    ];
    for (const { model, w } of cases) {
      const session = await ort.InferenceSession.create(model, { executionProviders: ['cpu'] });
      const y = (await session.run({ A: new ort.Tensor('float32', a, [m, k]) })).Y.data as Float32Array;
      const want = Array.from({ length: m * n }, (_, i) => {
        let acc = 0;
        for (let kk = 0; kk < k; kk++) acc += a[Math.floor(i / n) * k + kk] * w(kk, i % n);
        return acc;
      });
      expect(Array.from(y)).toEqual(want);
      await session.release?.();
    }
  });

  it('computes comparisons with GPU geomeans, rooflines and per-run GPU times from a profile; warms the clocks before timed runs', async () => {
    const row = (impl: 'qgemm' | 'tfjs-webgpu-f32', medianMs: number, gpuMedianMs: number | null, m = 4) =>
      ({
        impl,
        backend: 'webgpu',
        runtime: 'node',
        mode: 'resident',
        m,
        n: 8,
        k: 8,
        medianMs,
        gpuMedianMs,
        verified: impl === 'qgemm' ? true : null,
      }) as const;
    const [c] = compare(
      [row('qgemm', 2, 1), row('tfjs-webgpu-f32', 4, 4), row('qgemm', 1, 1, 8), row('tfjs-webgpu-f32', 4, null, 8)],
      'swiftshader',
    );
    expect(c.shapes.map((s) => [s.speedup, s.gpuSpeedup])).toEqual([
      [2, 4],
      [4, null],
    ]);
    expect(c.geomean).toBeCloseTo(Math.sqrt(8), 2);
    expect(c.gpuGeomean).toBe(4);
    const [none] = compare([row('qgemm', 2, null), row('tfjs-webgpu-f32', 4, 4)], 'swiftshader');
    expect(none.gpuGeomean).toBeNull();
    const ceilings = { dot4Tops: 1, copyGBs: 1, subgroupMatrixTops: null, notes: [] };
    // 2*64^3 ops at 1 TOPS = 0.524 us; 3*4096 bytes at 1 GB/s = 12.3 us: memory bound.
    const r = roofline({ m: 64, n: 64, k: 64, gpuMedianMs: 0.1, kernel: 'dot4-64x64' }, ceilings, 1);
    expect(r?.floorMs).toBeCloseTo(0.012288, 5);
    expect(r?.fraction).toBeCloseTo(0.12288, 4);
    expect(roofline({ m: 64, n: 64, k: 64, gpuMedianMs: null, kernel: 'gemv' }, ceilings, 1)).toBeNull();
    expect(roofline({ m: 64, n: 64, k: 64, gpuMedianMs: 1, kernel: 'sgmat-64x64' }, ceilings, 1)).toBeNull(); // no subgroup-matrix ceiling
    // The read bandwidth where it was measured (copyGBs only in reports from before it): 3*4096 bytes at 4 GB/s.
    expect(roofline({ m: 64, n: 64, k: 64, gpuMedianMs: 0.1, kernel: 'dot4-64x64' }, { ...ceilings, readGBs: 4 }, 1)?.floorMs).toBeCloseTo(
      0.003072,
      6,
    );
    const events = [1, 2, 3, 4, 5, 6].map((i) => ({ cat: 'Api', ts: i, dur: i * 1000 }));
    expect(gpuMsPerRun([...events, { cat: 'Node', ts: 0, dur: 99 }], 3)).toEqual([3, 7, 11]);
    expect(gpuMsPerRun(events, 4)).toBeNull();
    // The clock warm-up: runs back to back for warm.minMs after the warm-up runs, then until steady; none timed.
    let calls = 0;
    const run = async () => {
      calls++;
      await new Promise((r) => setTimeout(r, 2));
      return { timing: { wallMs: 1, gpuMs: null }, output: null };
    };
    const warm = { minMs: 40, maxMs: 400, windowMs: 10, tolerance: 0.02 };
    const warmed = await measure({ warmup: 1, minReps: 2, maxReps: 2, targetMs: 0, warmRule: warm }, run);
    expect(warmed.wall.reps).toBe(2);
    expect(calls).toBeGreaterThan(4);
    expect(warmed.warm?.steady).toBe(true); // the same wall time every call
    expect(warmed.warm?.ms).toBeGreaterThanOrEqual(40);
    calls = 0;
    const cold = await measure({ warmup: 1, minReps: 2, maxReps: 2, targetMs: 0 }, run);
    expect(calls).toBe(3);
    expect(cold.warm).toBeUndefined();
    // 4-bit weights: the memory floor counts them as stored (N rows of K nibbles) instead of K*N.
    const packed = roofline({ m: 1, n: 4096, k: 4096, gpuMedianMs: 1, kernel: 'gemv' }, ceilings, 1, 4096 * 2048);
    expect(packed?.bytes).toBe(4096 + 4096 * 2048 + 4096);
    expect(packed?.floorMs).toBeCloseTo(packed!.bytes / 1e6, 3);
    // Comparisons keep qgemm's 4-bit series apart from its 8-bit one.
    const bits = (rhsBits: 4 | 8, medianMs: number) => ({ ...row('qgemm', medianMs, null), rhsBits });
    const vs8 = compare([bits(8, 2), bits(4, 1)], 'swiftshader').find((x) => x.ours.rhsBits === 4);
    expect(vs8?.shapes.map((s) => s.speedup)).toEqual([2]);
  });

  it('hands a checkpoint to onCheckpoint after every cell: the rows so far, marked incomplete; the final report is not', async () => {
    const partials: BenchReport[] = [];
    const cpuOnly: BenchOptions = {
      shapes: TINY,
      impls: ['qgemm', 'naive-js'],
      runtimes: ['node'],
      backends: ['cpu'],
      modes: ['call'],
      policy: POLICY,
      budgetS: null,
      pipeline: 'uint8',
      seed: 7,
      suite: 'custom',
    };
    const report = await runBenchmark({ ...cpuOnly, onCheckpoint: (r) => partials.push(JSON.parse(reportJson(r))) });
    expect(report.incomplete).toBeUndefined();
    expect(report.adapterNote).toBe('WebGPU not requested (--backends cpu): CPU path only');
    // with the webgpu backend asked for but no implementation that runs on it, the note says so (it blamed --backends cpu)
    const naive = await runBenchmark({ ...cpuOnly, impls: ['naive-js'], backends: ['webgpu', 'cpu'] });
    expect(naive.adapterNote).toBe('WebGPU not requested (no selected implementation runs on it): CPU path only');
    // a selection with no row at all is the command line's to fix (exit 2), naming --impls
    await expect(runBenchmark({ ...cpuOnly, impls: ['naive-js'], runtimes: ['chrome'] })).rejects.toMatchObject({
      name: 'InputError',
      field: '--impls',
    });
    expect(partials.map((r) => r.runs.length)).toEqual([1, 2, 3, 4]);
    for (const r of partials) expect(r.incomplete).toMatch(/^a checkpoint written after \d+ rows, at [\d.]+ s: the run had not finished$/);
    expect(
      partials
        .at(-1)
        ?.runs.map((r) => rowKey(r))
        .sort(),
    ).toEqual(report.runs.map((r) => rowKey(r)).sort());
    expect(
      partials
        .at(-1)
        ?.runs.filter((r) => r.impl === 'qgemm')
        .every((r) => r.verified === true),
    ).toBe(true);
    // A checkpoint that cannot be written stops the checkpoints, not the run: its report is whole, with a note.
    let calls = 0;
    const failing = await runBenchmark({
      ...cpuOnly,
      impls: ['naive-js'],
      onCheckpoint: () => {
        calls++;
        throw new Error('ENOSPC: no space left on device');
      },
    });
    expect(calls).toBe(1);
    expect(failing.runs).toHaveLength(2);
    expect(failing.notes).toContain('checkpoints stopped: ENOSPC: no space left on device');
  });

  it('--checkpoint: the JSON file holds the report so far while the CLI runs (a run killed mid-way keeps its rows)', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'bench-checkpoint-'));
    const file = join(dir, 'r.json');
    const args = [
      '--runtimes',
      'node',
      '--backends',
      'cpu',
      '--impls',
      'naive-js',
      '--modes',
      'call',
      '--no-save',
      '--json',
      file,
      '--checkpoint',
    ];
    const child = spawn(process.execPath, ['dist/node/bench.js', ...args, '--shapes', '16x16x16,160x160x160,170x170x170,180x180x180'], {
      stdio: 'ignore',
    });
    try {
      let text = '';
      for (let i = 0; i < 600 && !text; i++) {
        await new Promise((r) => setTimeout(r, 50));
        if (existsSync(file)) text = readFileSync(file, 'utf8');
      }
      child.kill('SIGKILL');
      const partial = JSON.parse(text) as BenchReport;
      expect(partial.incomplete).toMatch(/^a checkpoint written after \d+ rows/);
      expect(partial.runs.length).toBeGreaterThan(0);
    } finally {
      child.kill('SIGKILL');
      rmSync(dir, { recursive: true, force: true });
    }
  }, 120_000);

  it('leaves the after-pause rows out with afterPauseRows: false (--no-after-pause), and only them', async () => {
    const opts = {
      shapes: parseShapes('1x64x72'),
      impls: ['qgemm', 'tfjs-webgpu-f32'] as BenchOptions['impls'],
      runtimes: ['node'] as BenchOptions['runtimes'],
      backends: ['webgpu'] as BenchOptions['backends'],
      modes: ['resident'] as BenchOptions['modes'],
      budgetS: null,
      pipeline: 'uint8' as const,
      seed: 7,
      suite: 'custom' as const,
    };
    const without = await runBenchmark({ ...opts, policy: { ...POLICY, afterPauseRows: false } });
    if (without.adapterKind === 'none' && process.env.CI !== 'true') return; // no WebGPU here
    const keys = (r: BenchReport) => r.runs.map((x) => rowKey(x)).sort();
    expect(keys(without)).toEqual(['qgemm/webgpu/node/resident', 'tfjs-webgpu-f32/webgpu/node/resident']);
    expect(without.runs.find((r) => r.impl === 'qgemm')?.verified).toBe(true);
    expect(JSON.parse(reportJson(without)).timing.policy.afterPauseRows).toBe(false);
    const withRows = await runBenchmark({ ...opts, policy: POLICY });
    expect(keys(withRows)).toEqual([
      'qgemm/webgpu/node/resident',
      'qgemm/webgpu/node/resident/after-pause',
      'tfjs-webgpu-f32/webgpu/node/resident',
      'tfjs-webgpu-f32/webgpu/node/resident/after-pause',
    ]);
    const cli = parseCli(['--shapes', '1x64x72', '--no-after-pause']);
    expect(cli !== 'help' && cli.options.policy.afterPauseRows).toBe(false);
    const plain = parseCli(['--shapes', '1x64x72']);
    expect(plain !== 'help' && 'afterPauseRows' in plain.options.policy).toBe(false);
  });

  it('parses the CLI flags', () => {
    const quick = parseCli(['--quick', '--json', 'out.json']);
    if (quick === 'help') throw new Error('unexpected help');
    expect(quick.options.suite).toBe('quick');
    expect(quick.options.shapes).toEqual(QUICK_SHAPES);
    expect(quick.options.shapes.some((s) => s.m === 1)).toBe(true);
    expect(quick.options.budgetS).toBeNull();
    expect(quick.options.modes).toEqual(['resident', 'call']);
    const modes = parseCli(['--modes', 'device']);
    if (modes === 'help') throw new Error('unexpected help');
    expect(modes.options.modes).toEqual(['device']);
    expect(() => parseCli(['--modes', 'cached'])).toThrow(/unknown "cached"/);
    expect(quick.json).toMatch(/out\.json$/);
    const custom = parseCli([
      '--shapes',
      '256x256x256,1x4096x4096',
      '--impls',
      'qgemm,naive-js',
      '--runtimes',
      'node',
      '--budget',
      '60',
      '--pipeline',
      'int32',
    ]);
    if (custom === 'help') throw new Error('unexpected help');
    expect(custom.options.shapes.map((s) => [s.m, s.n, s.k])).toEqual([
      [256, 256, 256],
      [1, 4096, 4096],
    ]);
    expect(custom.options.impls).toEqual(['qgemm', 'naive-js']);
    expect(custom.options.budgetS).toBe(60);
    expect(custom.options.pipeline).toBe('int32');
    expect(custom.options.modes).toEqual(['call', 'resident', 'device']);
    expect(parseCli(['--help'])).toBe('help');
    expect(quick.checkpoint).toBe(false);
    const checkpoint = parseCli(['--quick', '--json', 'out.json', '--checkpoint']);
    expect(checkpoint !== 'help' && checkpoint.checkpoint).toBe(true);
    expect(() => parseCli(['--quick', '--checkpoint'])).toThrow(/--checkpoint: needs --json FILE/);
    expect(() => parseCli(['--impls', 'cublas'])).toThrow(/unknown "cublas"/);
    expect(() => parseCli(['--shapes', '12x0x3'])).toThrow(/MxNxK/);
    expect(() => parseCli(['--shapes', '1e3x2x2'])).toThrow(/MxNxK/); // digits only: was 1000x2x2
    expect(() => parseCli(['--budget', '1e309'])).toThrow(/--budget: expected a positive, finite/);
    // Files are checked before any run: a folder as --json or --html, a --report-from that is not a saved result.
    expect(() => parseCli(['--json', tmpdir()])).toThrow(/--json: .* is not a file/);
    expect(() => parseCli(['--html', tmpdir()])).toThrow(/--html: .* is not a file/);
    // A file in a folder that does not exist: refused before the run, nothing made (--results makes its own).
    const nowhere = join(tmpdir(), `bench-missing-${process.pid}`);
    for (const flag of ['--json', '--html', '--screenshot']) {
      expect(() => parseCli([flag, join(nowhere, 'x')])).toThrow(new RegExp(`${flag}: the folder .* does not exist`));
    }
    expect(existsSync(nowhere)).toBe(false);
    const notReport = join(mkdtempSync(join(tmpdir(), 'bench-cli-')), 'x.json');
    writeFileSync(notReport, '{"a": 1}');
    expect(() => parseCli(['--report-from', notReport])).toThrow(/--report-from: .* is not a saved benchmark result/);
    writeFileSync(notReport, '{"runs": [');
    expect(() => parseCli(['--report-from', notReport])).toThrow(/--report-from: cannot read .* as JSON/);
    expect(() => parseCli(['--report-from', `${notReport}.missing`])).toThrow(/--report-from: cannot read/);
    expect(() => parseCli(['--frobnicate'])).toThrow();
    // A flag twice kept its last value, an empty one read as not given (the full suite), and --report-from
    // ignored the run's flags; two outputs in one file replaced each other; a read-only place was found after the run.
    expect(() => parseCli(['--impls', 'qgemm', '--impls', 'naive-js'])).toThrow(/--impls: given twice/);
    expect(() => parseCli(['--shapes='])).toThrow(/--shapes: expected a value/);
    expect(() => parseCli(['--shapes', ','])).toThrow(/--shapes: expected at least one shape/);
    expect(() => parseCli(['--impls', ','])).toThrow(/--impls: expected at least one of/);
    expect(() => parseCli(['--tuning', `${notReport}.missing`])).toThrow(/--tuning: cannot read/);
    const same = join(dirname(notReport), 'same.json');
    expect(() => parseCli(['--json', same, '--html', same])).toThrow(/--html: the same file as --json/);
    expect(() => parseCli(['--report-from', notReport, '--shapes', '1x1x1'])).toThrow(/--report-from: .*runs nothing \(got --shapes\)/);
    expect(() => parseCli(['--json', '/proc/nope.json'])).toThrow(/--json: cannot write in \/proc/);
    expect(() => parseCli(['--results', notReport])).toThrow(/--results: .* is not a folder/);
    expect(readdirSync(dirname(notReport)).filter((f) => f.startsWith('.bench-write-probe'))).toEqual([]);
    expect(custom.options.rhsBits).toEqual([8]);
    const bits = parseCli(['--shapes', 'skinny', '--modes', 'resident', '--rhs-bits', '8,4']);
    if (bits === 'help') throw new Error('unexpected help');
    expect(bits.options.rhsBits).toEqual([8, 4]);
    expect(bits.options.shapes).toEqual(SKINNY_SHAPES);
    expect(new Set(SKINNY_SHAPES.map((s) => s.m))).toEqual(new Set([1, 4, 16, 64, 128]));
    expect(SKINNY_SHAPES.every((s) => s.n === s.k && [4096, 11008].includes(s.n))).toBe(true);
    expect(SKINNY_SHAPES.length).toBe(10);
    expect(parseShapes('1x4096x4096,skinny').length).toBe(10); // named sets mix with MxNxK items, repeats dropped
    // The convolution layers: in --quick and full, by name, and the `conv` set beside the im2col GEMM.
    for (const set of [QUICK_SHAPES, parseShapes('full')])
      expect(set.filter((s) => s.conv).map((s) => shapeKey(s))).toEqual(CONV_LAYERS.map(shapeKey));
    expect(CONV_LAYERS.map((s) => [s.m, s.n, s.k])).toEqual([
      [3136, 64, 576],
      [3136, 64, 288],
    ]);
    expect(CONV_LAYERS.map(shapeKey)).toEqual(['conv56x56x64-k3x3-s1-o64', 'conv112x112x32-k3x3-s2-o64']);
    expect(parseShapes('conv').map(shapeKey)).toEqual(['3136x64x576', ...CONV_LAYERS.map(shapeKey)]);
    expect(parseShapes('conv6x6x3-k3x3-s1-valid-o4')[0]).toMatchObject({ m: 16, n: 4, k: 27, family: 'conv2d' });
    expect(convKey(parseShapes('conv6x6x3-k3x3-s1-valid-o4')[0].conv!)).toBe('conv6x6x3-k3x3-s1-valid-o4');
    expect(() => parseShapes('conv2x2x3-k3x3-s1-valid-o4')).toThrow(/filter fits/);
    expect(() => parseCli(['--rhs-bits', '3'])).toThrow(/unknown "3"/);
    expect(() => parseCli(['--rhs-bits', '4', '--modes', 'call'])).toThrow(/resident/);
  });
});

describe('dist/node/bench.js: bad input is exit 2 in one line, never a run without the GPU', () => {
  const bench = (args: string[], env: Record<string, string> = {}) =>
    spawnSync(
      process.execPath,
      [
        'dist/node/bench.js',
        '--runtimes',
        'node',
        '--backends',
        'webgpu,cpu',
        '--impls',
        'qgemm',
        '--modes',
        'resident',
        '--shapes',
        '8x8x8',
        '--no-save',
        ...args,
      ],
      {
        encoding: 'utf8',
        env: { ...process.env, ...env },
      },
    );
  it('a misspelt QGEMM_DAWN_TOGGLES (was: "no WebGPU adapter", exit 0, the CPU rows only)', () => {
    const r = bench([], { QGEMM_DAWN_TOGGLES: 'disable_robustnes' });
    expect(r.status, r.stderr).toBe(2);
    expect(r.stderr).toMatch(/^bench: error: QGEMM_DAWN_TOGGLES: unknown Dawn toggle "disable_robustnes"/m);
    expect(r.stdout).toBe('');
  });
  it('a --dawn that gives no adapter (was: the CPU rows only, exit 0: a wasted GPU run)', () => {
    const r = bench(['--dawn', '/nonexistent/dawn.node']);
    expect(r.status, r.stderr).toBe(2);
    expect(r.stderr).toMatch(/^bench: error: --dawn: \/nonexistent\/dawn.node gave no WebGPU adapter: .*could not load it/m);
  });
  it('a --tuning table of another adapter names --tuning.adapter', () => {
    const r = bench(['--tuning', 'src/kernels/tuned/nvidia-h200.json'], { VK_ICD_FILENAMES: '/usr/lib/chromium/vk_swiftshader_icd.json' });
    if (/CPU path only/.test(r.stderr)) return; // no WebGPU here at all: nothing to compare the table with
    expect(r.status, r.stderr).toBe(2);
    expect(r.stderr).toMatch(/^bench: error: --tuning\.adapter: the table was measured on nvidia/m);
  });
});
