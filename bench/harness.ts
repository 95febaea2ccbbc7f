// The benchmark harness, callable from code (bench/main.ts is the CLI around it; test/bench/ uses it):
// picks the adapter (bench/environment.ts), starts every requested implementation on it, runs each shape
// through each implementation (warm-up + timed runs, bench/timing.ts), verifies every result of this
// project (bench/verify.ts), and returns the report object whose JSON is the issue's contract:
//   {"adapter": {vendor, architecture, description, ...}, "runs": [{impl, backend, runtime, adapter,
//    m, n, k, medianMs, gops, verified, ...extras}], ...extras}
// medianMs and gops are WALL time (upload + compute + readback); the GPU time of timestamp queries is
// reported beside it (gpuMedianMs, gpuGops) where the adapter offers them.

import { describeAdapter } from '../src/gpu/adapter.ts';
import { adapterSlug, chooseAdapter, describeMachine, machineInfo, type AdapterKind, type Machine } from './environment.ts';
import { startChrome, type ChromeSession } from './impls/chrome.ts';
import { naiveJs } from './impls/naive.ts';
import { onnxruntimeNode } from './impls/onnxruntime.ts';
import { qgemmCpuNode, qgemmWebgpuNode } from './impls/qgemm-node.ts';
import { tfjsWebgpuNode } from './impls/tfjs-node.ts';
import { rowKey, rowRank, type BackendName, type ImplName, type RowId, type Runner, type Runtime } from './impls/types.ts';
import { describePipeline, makeShapeData, type PipelineKind, type ShapeData } from './problems.ts';
import { ops, shapeKey, sortShapes, type Shape } from './shapes.ts';
import { gops, type RepeatPolicy, type Stats } from './timing.ts';
import { checkResult, computeExpected, type Expected, type Verification } from './verify.ts';

export interface BenchOptions {
  shapes: Shape[];
  impls: readonly ImplName[];
  runtimes: readonly Runtime[];
  backends: readonly BackendName[];
  policy: RepeatPolicy;
  /** Seconds; cells whose estimated time exceeds what is left are skipped (squares run last, so they go first). */
  budgetS: number | null;
  pipeline: PipelineKind;
  seed: number;
  dawnPath?: string;
  suite: 'quick' | 'full' | 'custom';
  command?: string;
  log?: (line: string) => void;
}

/** One row: the contract's fields first, then extras. */
export interface Row {
  impl: ImplName;
  backend: BackendName;
  runtime: Runtime;
  adapter: string;
  m: number;
  n: number;
  k: number;
  /** Wall time: upload + compute + readback (null only when the row failed to run). */
  medianMs: number | null;
  gops: number | null;
  /** This project's rows: true/false; peers: null. */
  verified: boolean | null;
  minMs: number | null;
  maxMs: number | null;
  q1Ms: number | null;
  q3Ms: number | null;
  reps: number;
  /** GPU time of the compute work from timestamp queries; null where unavailable. */
  gpuMedianMs: number | null;
  gpuMinMs: number | null;
  gpuMaxMs: number | null;
  gpuGops: number | null;
  computes: string;
  verification?: Verification;
  error?: string;
}

export interface Skipped extends RowId {
  m: number;
  n: number;
  k: number;
  reason: string;
}

export interface Comparison {
  ours: RowId;
  peer: RowId;
  /** Per shape: peer wall median / ours (> 1: we are faster), and the same on GPU time where both have it. */
  shapes: { m: number; n: number; k: number; speedup: number; gpuSpeedup: number | null }[];
  /** Geometric mean of the speed-ups. */
  geomean: number | null;
}

export interface BenchReport {
  adapter: { vendor: string; architecture: string; description: string; [extra: string]: unknown };
  runs: Row[];
  date: string;
  suite: BenchOptions['suite'];
  command: string;
  machine: Machine;
  adapterKind: AdapterKind;
  adapterNote: string;
  chrome: { version: string; adapter: Record<string, unknown> | null } | null;
  pipeline: { kind: PipelineKind; description: string; appliesTo: string };
  timing: { policy: RepeatPolicy; medianMs: string; gpuMs: string };
  implementations: { impl: ImplName; backend: BackendName; runtime: Runtime; computes: string; details: string }[];
  comparisons: Comparison[];
  skipped: Skipped[];
  notes: string[];
  elapsedS: number;
}

const round = (x: number, digits = 4): number => Number(x.toPrecision(digits));

function statsFields(wall: Stats | null, gpu: Stats | null, shape: Shape) {
  return {
    medianMs: wall ? round(wall.medianMs) : null,
    gops: wall ? round(gops(ops(shape), wall.medianMs)) : null,
    minMs: wall ? round(wall.minMs) : null,
    maxMs: wall ? round(wall.maxMs) : null,
    q1Ms: wall ? round(wall.q1Ms) : null,
    q3Ms: wall ? round(wall.q3Ms) : null,
    reps: wall?.reps ?? 0,
    gpuMedianMs: gpu ? round(gpu.medianMs) : null,
    gpuMinMs: gpu ? round(gpu.minMs) : null,
    gpuMaxMs: gpu ? round(gpu.maxMs) : null,
    gpuGops: gpu ? round(gops(ops(shape), gpu.medianMs)) : null,
  };
}

const fmtMs = (ms: number) => (ms >= 1000 ? `${(ms / 1000).toFixed(2)} s` : ms >= 10 ? `${ms.toFixed(0)} ms` : `${ms.toFixed(2)} ms`);
const fmtGops = (g: number) => (g >= 100 ? g.toFixed(0) : g >= 1 ? g.toFixed(2) : g.toPrecision(2));

/** The pairs the report compares: this project against each peer, on the same backend kind and runtime. */
const PAIRS: { ours: RowId; peer: RowId }[] = [
  { ours: { impl: 'qgemm', backend: 'webgpu', runtime: 'node' }, peer: { impl: 'tfjs-webgpu-f32', backend: 'webgpu', runtime: 'node' } },
  {
    ours: { impl: 'qgemm', backend: 'webgpu', runtime: 'chrome' },
    peer: { impl: 'tfjs-webgpu-f32', backend: 'webgpu', runtime: 'chrome' },
  },
  {
    ours: { impl: 'qgemm', backend: 'cpu', runtime: 'node' },
    peer: { impl: 'onnxruntime-node-matmulinteger', backend: 'cpu', runtime: 'node' },
  },
  { ours: { impl: 'qgemm', backend: 'cpu', runtime: 'node' }, peer: { impl: 'naive-js', backend: 'cpu', runtime: 'node' } },
];
/** On a hardware adapter only (SwiftShader against a CPU library says nothing): the GPU against what a Node user has today. */
const HARDWARE_PAIRS: { ours: RowId; peer: RowId }[] = [
  {
    ours: { impl: 'qgemm', backend: 'webgpu', runtime: 'node' },
    peer: { impl: 'onnxruntime-node-matmulinteger', backend: 'cpu', runtime: 'node' },
  },
];

export function compare(rows: Row[], adapterKind: AdapterKind): Comparison[] {
  const find = (id: RowId, s: Pick<Row, 'm' | 'n' | 'k'>) =>
    rows.find((r) => rowKey(r) === rowKey(id) && r.m === s.m && r.n === s.n && r.k === s.k && r.medianMs !== null && r.verified !== false);
  const out: Comparison[] = [];
  for (const { ours, peer } of adapterKind === 'hardware' ? [...PAIRS, ...HARDWARE_PAIRS] : PAIRS) {
    const shapes: Comparison['shapes'] = [];
    for (const o of rows.filter((r) => rowKey(r) === rowKey(ours))) {
      const mine = find(ours, o);
      const theirs = find(peer, o);
      if (!mine || !theirs) continue;
      const gpuSpeedup = mine.gpuMedianMs && theirs.gpuMedianMs ? round(theirs.gpuMedianMs / mine.gpuMedianMs, 3) : null;
      shapes.push({ m: o.m, n: o.n, k: o.k, speedup: round(theirs.medianMs! / mine.medianMs!, 3), gpuSpeedup });
    }
    if (shapes.length === 0) continue;
    const geomean = round(Math.exp(shapes.reduce((s, x) => s + Math.log(x.speedup), 0) / shapes.length), 3);
    out.push({ ours, peer, shapes, geomean });
  }
  return out;
}

export async function runBenchmark(opts: BenchOptions): Promise<BenchReport> {
  const t0 = performance.now();
  const elapsed = () => (performance.now() - t0) / 1000;
  const log = opts.log ?? (() => undefined);
  const progress = (line: string) => log(`[${elapsed().toFixed(1).padStart(6)} s] ${line}`);
  const notes: string[] = [];
  const machine = machineInfo();
  progress(`machine: ${describeMachine(machine)}; ${machine.os}; Node ${machine.node}`);

  const wantWebgpu = opts.backends.includes('webgpu') && (opts.impls.includes('qgemm') || opts.impls.includes('tfjs-webgpu-f32'));
  const choice = await chooseAdapter({ dawnPath: opts.dawnPath, cpuOnly: !wantWebgpu, log: progress });
  progress(`adapter: ${choice.note}`);
  if (choice.kind === 'none' && wantWebgpu) notes.push(choice.note);
  const slug = adapterSlug(choice.summary);
  const computes = `uint8 x uint8 GEMM, ${opts.pipeline === 'uint8' ? 'output pipeline -> uint8' : 'raw int32 out'}`;

  // ---- start the implementations --------------------------------------------------------------------
  const runners: Runner[] = [];
  const skipped: Skipped[] = [];
  const wants = (impl: ImplName, backend: BackendName, runtime: Runtime) =>
    opts.impls.includes(impl) && opts.backends.includes(backend) && opts.runtimes.includes(runtime);
  const unavailable = (id: RowId, reason: string) => {
    notes.push(`${rowKey(id)}: ${reason}`);
    progress(`skipping ${rowKey(id)}: ${reason}`);
    for (const s of opts.shapes) skipped.push({ ...id, m: s.m, n: s.n, k: s.k, reason });
  };
  const start = async (id: RowId, make: () => Promise<Runner> | Runner) => {
    try {
      runners.push(await make());
    } catch (e) {
      unavailable(id, `could not start: ${(e as Error).message.split('\n')[0]}`);
    }
  };
  const hasGpu = choice.ctx !== null;
  if (wants('qgemm', 'webgpu', 'node')) {
    if (hasGpu) await start({ impl: 'qgemm', backend: 'webgpu', runtime: 'node' }, () => qgemmWebgpuNode(choice.ctx!, slug, computes));
    else unavailable({ impl: 'qgemm', backend: 'webgpu', runtime: 'node' }, 'no WebGPU adapter');
  }
  if (wants('tfjs-webgpu-f32', 'webgpu', 'node')) {
    const id: RowId = { impl: 'tfjs-webgpu-f32', backend: 'webgpu', runtime: 'node' };
    if (hasGpu)
      await start(id, () => tfjsWebgpuNode({ allowSoftware: choice.kind === 'swiftshader', dawnPath: opts.dawnPath, adapter: slug }));
    else unavailable(id, 'no WebGPU adapter');
  }
  if (wants('qgemm', 'cpu', 'node')) await start({ impl: 'qgemm', backend: 'cpu', runtime: 'node' }, async () => qgemmCpuNode(computes));
  if (wants('onnxruntime-node-matmulinteger', 'cpu', 'node')) {
    await start({ impl: 'onnxruntime-node-matmulinteger', backend: 'cpu', runtime: 'node' }, () => onnxruntimeNode());
  }
  if (wants('naive-js', 'cpu', 'node')) await start({ impl: 'naive-js', backend: 'cpu', runtime: 'node' }, () => naiveJs());

  let chrome: ChromeSession | null = null;
  const chromeImpls = (['qgemm', 'tfjs-webgpu-f32'] as const).filter((i) => wants(i, 'webgpu', 'chrome'));
  if (chromeImpls.length) {
    const ids = chromeImpls.map((impl): RowId => ({ impl, backend: 'webgpu', runtime: 'chrome' }));
    if (choice.kind === 'none') {
      for (const id of ids) unavailable(id, 'no WebGPU adapter (hardware or SwiftShader) for Chromium');
    } else {
      progress(`starting headless Chromium (${choice.kind === 'swiftshader' ? 'SwiftShader' : 'hardware adapter'})`);
      try {
        chrome = await startChrome({
          swiftshader: choice.kind === 'swiftshader',
          seed: opts.seed,
          impls: chromeImpls,
          computes,
          log: progress,
        });
        runners.push(...chrome.runners);
        for (const note of chrome.notes) notes.push(`chrome: ${note}`);
        for (const id of ids)
          if (!chrome.runners.some((r) => rowKey(r) === rowKey(id))) unavailable(id, chrome.notes.join('; ') || 'did not start');
        progress(`Chromium ${chrome.version}, page adapter: ${chrome.adapter ? adapterSlug(chrome.adapter as never) : 'none'}`);
      } catch (e) {
        for (const id of ids) unavailable(id, `Chromium: ${(e as Error).message.split('\n')[0]}`);
      }
    }
  }
  if (runners.length === 0) throw new Error(`nothing to run: ${notes.join('; ') || 'no implementation selected'}`);

  // ---- run ------------------------------------------------------------------------------------------
  // Squares last (ascending), so that the budget trims the square sweep from the top; every other shape first.
  const order = [
    ...opts.shapes.filter((s) => s.family !== 'square'),
    ...opts.shapes.filter((s) => s.family === 'square').sort((a, b) => a.m - b.m),
  ];
  const throughput = new Map<string, number>(); // ops per ms, from the largest shape measured so far
  const rows: Row[] = [];
  for (const shape of order) {
    let data: ShapeData | null = null;
    let expected: Expected | null = null;
    for (const runner of runners) {
      const id = rowKey(runner);
      if (opts.budgetS !== null) {
        const tput = throughput.get(id);
        const estimateS = tput ? ((opts.policy.warmup + opts.policy.minReps) * ops(shape)) / tput / 1000 : 0;
        const left = opts.budgetS - elapsed();
        if (estimateS > left) {
          const reason = `time budget: about ${estimateS.toFixed(0)} s estimated, ${Math.max(0, left).toFixed(0)} s left`;
          skipped.push({ impl: runner.impl, backend: runner.backend, runtime: runner.runtime, m: shape.m, n: shape.n, k: shape.k, reason });
          progress(`${shapeKey(shape).padEnd(15)} ${id.padEnd(44)} skipped (${reason})`);
          continue;
        }
      }
      data ??= makeShapeData(shape, opts.seed, opts.pipeline);
      const base = {
        impl: runner.impl,
        backend: runner.backend,
        runtime: runner.runtime,
        adapter: runner.adapter,
        m: shape.m,
        n: shape.n,
        k: shape.k,
      };
      try {
        const outcome = await runner.run(data, opts.policy);
        let verified: boolean | null = null;
        let verification: Verification | undefined;
        if (runner.impl === 'qgemm') {
          expected ??= computeExpected(data.problem, shape, opts.seed);
          verification = outcome.output
            ? checkResult(expected, shape, outcome.output, outcome.hashes ?? [])
            : { verified: false, method: expected.method, checked: 0, mismatches: 0, consistent: false, error: 'no output came back' };
          verified = verification.verified;
        }
        const { medianMs, gops: rowGops, ...spread } = statsFields(outcome.wall, outcome.gpu, shape);
        const row: Row = {
          ...base,
          medianMs,
          gops: rowGops,
          verified,
          ...spread,
          computes: runner.computes,
          ...(verification ? { verification } : {}),
        };
        rows.push(row);
        throughput.set(id, ops(shape) / outcome.wall.medianMs);
        const gpuPart = row.gpuMedianMs !== null ? `; GPU ${fmtMs(row.gpuMedianMs)} = ${fmtGops(row.gpuGops!)} GOPS` : '';
        const check = verification
          ? verification.verified
            ? ` verified (${verification.method}, ${verification.checked} entries)`
            : ` VERIFICATION FAILED: ${verification.error ?? `${verification.mismatches} mismatches, first ${JSON.stringify(verification.firstMismatch)}`}`
          : '';
        progress(
          `${shapeKey(shape).padEnd(15)} ${id.padEnd(44)} ${String(row.reps).padStart(2)} runs, median ${fmtMs(row.medianMs!)} = ${fmtGops(row.gops!)} GOPS${gpuPart}${check}`,
        );
      } catch (e) {
        const message = (e as Error).message.split('\n')[0];
        const { medianMs, gops: rowGops, ...spread } = statsFields(null, null, shape);
        rows.push({
          ...base,
          medianMs,
          gops: rowGops,
          verified: runner.impl === 'qgemm' ? false : null,
          ...spread,
          computes: runner.computes,
          error: message,
        });
        progress(`${shapeKey(shape).padEnd(15)} ${id.padEnd(44)} FAILED: ${message}`);
      }
    }
  }

  for (const r of runners) await r.close().catch(() => undefined);
  await chrome?.close();
  choice.ctx?.destroy();

  const sortedRows = sortShapes(
    rows.map((r) => ({ ...r, family: opts.shapes.find((s) => s.m === r.m && s.n === r.n && s.k === r.k)?.family ?? 'custom' })),
  ).map(({ family: _family, ...r }) => r as Row);
  const finalRows: Row[] = [];
  const seen = new Set<string>();
  for (const r of sortedRows) {
    const key = shapeKey(r);
    if (seen.has(key)) continue;
    seen.add(key);
    const group = sortedRows.filter((x) => shapeKey(x) === key).sort((a, b) => rowRank(a) - rowRank(b));
    finalRows.push(...group);
  }

  const summary = choice.summary;
  return {
    adapter: {
      vendor: summary?.vendor ?? '',
      architecture: summary?.architecture ?? (choice.kind === 'none' ? 'cpu-only' : ''),
      description: summary ? describeAdapter(summary) : choice.note,
      device: summary?.device ?? '',
      name: slug,
      kind: choice.kind,
      isSoftware: summary?.isSoftware ?? null,
      dot4: choice.ctx ? choice.ctx.dot4 : null,
      features: summary?.features ?? [],
      wgslLanguageFeatures: summary?.wgslLanguageFeatures ?? [],
    },
    runs: finalRows,
    date: new Date().toISOString(),
    suite: opts.suite,
    command: opts.command ?? '',
    machine,
    adapterKind: choice.kind,
    adapterNote: choice.note,
    chrome: chrome ? { version: chrome.version, adapter: chrome.adapter } : null,
    pipeline: {
      kind: opts.pipeline,
      description: describePipeline(opts.pipeline),
      appliesTo: "this project's rows (qgemm); onnxruntime and naive-js return raw int32, tfjs f32",
    },
    timing: {
      policy: opts.policy,
      medianMs: 'wall time of one call: upload + compute + readback (CPU rows: the call itself)',
      gpuMs: 'GPU time from timestamp queries around the compute pass (qgemm: pack + gemm + output; tfjs: its kernels)',
    },
    implementations: runners.map((r) => ({
      impl: r.impl,
      backend: r.backend,
      runtime: r.runtime,
      computes: r.computes,
      details: r.details,
    })),
    comparisons: compare(finalRows, choice.kind),
    skipped,
    notes,
    elapsedS: round(elapsed(), 3),
  };
}
