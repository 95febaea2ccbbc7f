// The benchmark harness, callable from code (bench/main.ts is the CLI around it; test/bench/ uses it):
// picks the adapter (bench/environment.ts), measures its ceilings (bench/ceilings.ts), starts every
// requested implementation in every requested mode (bench/runners.ts), runs each shape through each
// (warm-up + timed runs, bench/timing.ts), verifies every result of this project (bench/verify.ts), and
// returns the report object (bench/report.ts) whose JSON is the issues' contract:
//   {"adapter": {vendor, architecture, description, ceilings: {dot4Tops, copyGBs, readGBs, subgroupMatrixTops}, ...},
//    "runs": [{impl, backend, runtime, mode, adapter, m, n, k, medianMs, gops, verified, kernel, roofline, ...}],
//    "comparisons": [{ours, peer, shapes, geomean, gpuGeomean}], ...extras}
// medianMs and gops are WALL time of one call; the GPU time of timestamp queries is reported beside it
// (gpuMedianMs, gpuGops) where the adapter offers them, and `gpuNote` says why where it is missing; a
// back-to-back row of a policy with a warmRule records its clock warm-up (`warm`: ms, steady).

import { InputError } from '../src/errors.ts';
import { describeAdapter } from '../src/gpu/adapter.ts';
import { describeTuning } from '../src/kernels/tuning.ts';
import { PACK_FORMATS, packedRowBytes } from '../src/pack/formats.ts';
import { measureCeilings, roofline, type Ceilings } from './ceilings.ts';
import { compare } from './compare.ts';
import { adapterSlug, chooseAdapter, describeMachine, machineInfo } from './environment.ts';
import {
  ORT_WEBGPU_IMPLS,
  rhsBitsOf,
  rowKey,
  rowRank,
  type BackendName,
  type ImplName,
  type Mode,
  type RhsBits,
  type RowId,
  type Runtime,
} from './impls/types.ts';
import { startRunners } from './runners.ts';
import { describePipeline, makeShapeData, problemFor, type PipelineKind, type ShapeData } from './problems.ts';
import { ops, shapeKey, sortShapes, type ConvLayer, type Shape } from './shapes.ts';
import type { RepeatPolicy } from './timing.ts';
import { checkResult, computeExpected, type Expected, type Verification } from './verify.ts';
import { fmtGops, fmtMs } from './report-terminal.ts';
import { afterPauseRow, round, statsFields, type BenchReport, type Row, type Skipped, type Suite } from './report.ts';

export interface BenchOptions {
  shapes: Shape[];
  impls: readonly ImplName[];
  runtimes: readonly Runtime[];
  backends: readonly BackendName[];
  /** What stays on the GPU between calls (bench/impls/types.ts); GPU rows run in each, CPU rows in 'call'. */
  modes: readonly Mode[];
  /** Bit widths of the weights for qgemm's WebGPU `resident` rows, one row series each (default [8]; --rhs-bits). */
  rhsBits?: readonly RhsBits[];
  policy: RepeatPolicy;
  /** Seconds; cells whose estimated time exceeds what is left are skipped (squares run last, so they go first). */
  budgetS: number | null;
  pipeline: PipelineKind;
  seed: number;
  dawnPath?: string;
  /** A tuning table (parsed JSON of `qgemm tune`), for qgemm's WebGPU context in Node, and its name (the path given). */
  tuning?: unknown;
  tuningName?: string;
  suite: Suite;
  command?: string;
  log?: (line: string) => void;
  /**
   * Called after every cell with the report so far (`incomplete` says so), where a run may be cut short by
   * a time limit (bench/device-run.sh): the CLI writes it to --json with --checkpoint.
   */
  onCheckpoint?: (report: BenchReport) => void;
}

/** The `conv` field of a convolution layer's rows (none on GEMM rows). */
const convOf = (s: Shape): { conv?: ConvLayer } => (s.conv ? { conv: s.conv } : {});

const rowIdOf = (r: RowId): RowId & { rhsBits: RhsBits | null } => ({
  impl: r.impl,
  backend: r.backend,
  runtime: r.runtime,
  mode: r.mode,
  rhsBits: rhsBitsOf(r),
});

/** The pause before each cell (see the run loop). */
const SETTLE_MS = 100;
/** A cell estimated at more than budget / CELL_SHARE seconds is skipped, whatever is left. */
const CELL_SHARE = 10;

export async function runBenchmark(opts: BenchOptions): Promise<BenchReport> {
  const t0 = performance.now();
  const elapsed = () => (performance.now() - t0) / 1000;
  const log = opts.log ?? (() => undefined);
  const progress = (line: string) => log(`[${elapsed().toFixed(1).padStart(6)} s] ${line}`);
  const notes: string[] = [];
  const machine = machineInfo();
  progress(`machine: ${describeMachine(machine)}; ${machine.os}; Node ${machine.node}`);

  // Every WebGPU row needs the adapter, and so does Chrome, whose flags follow it (its CPU rows included).
  const gpuImpls = opts.impls.filter(
    (i) => i === 'qgemm' || i === 'tfjs-webgpu-f32' || (ORT_WEBGPU_IMPLS as readonly string[]).includes(i),
  );
  const wantWebgpu = (opts.backends.includes('webgpu') && gpuImpls.length > 0) || opts.runtimes.includes('chrome');
  const why = opts.backends.includes('webgpu') ? 'no selected implementation runs on it' : '--backends cpu';
  const choice = await chooseAdapter({
    dawnPath: opts.dawnPath,
    tuning: opts.tuning,
    tuningName: opts.tuningName,
    cpuOnly: wantWebgpu ? false : why,
    log: progress,
  });
  progress(`adapter: ${choice.note}`);
  if (choice.kind === 'none' && wantWebgpu) notes.push(choice.note);
  const slug = adapterSlug(choice.summary);
  const computes = `uint8 x uint8 GEMM, ${opts.pipeline === 'uint8' ? 'output pipeline -> uint8' : 'raw int32 out'}`;

  // ---- ceilings, then the implementations ---------------------------------------------------------
  let ceilings: Ceilings | null = null;
  if (choice.kind !== 'none') {
    progress('measuring the adapter ceilings (dot4, copy, read, subgroup matrix)');
    ceilings = await measureCeilings({ dawnPath: opts.dawnPath, software: choice.kind === 'swiftshader', log: progress }).catch((e) => {
      notes.push(`ceilings: ${(e as Error).message.split('\n')[0]}`);
      return null;
    });
  }
  const started = await startRunners(opts, choice, slug, computes, progress);
  const { runners, chrome } = started;
  notes.push(...started.notes);
  const skipped: Skipped[] = started.unavailable.flatMap(({ reason, convolution, ...id }) =>
    opts.shapes
      .filter((s) => !s.conv || convolution)
      .map((s) => ({ ...id, rhsBits: rhsBitsOf(id), m: s.m, n: s.n, k: s.k, ...convOf(s), reason })),
  );
  if (chrome) progress(`Chromium ${chrome.version}, page adapter: ${chrome.adapter ? adapterSlug(chrome.adapter as never) : 'none'}`);
  if (runners.length === 0) {
    // Nothing selected at all (an implementation on a runtime, backend or mode it has no row for) is the
    // command line's to fix; selected rows that cannot run here are the machine's.
    if (started.unavailable.length === 0) {
      throw new InputError(
        '--impls',
        'nothing to run: no selected implementation has a row on the selected runtimes, backends and modes (bench/README.md lists them)',
      );
    }
    throw new Error(`nothing to run: ${notes.join('; ') || 'no implementation selected'}`);
  }
  // A convolution layer that no selected implementation runs (qgemm's CPU path and onnxruntime run GEMMs
  // only) would otherwise leave its rows out without a word.
  const convRunners = [...runners, ...started.unavailable].filter((r) => r.convolution !== undefined);
  for (const s of opts.shapes.filter((x) => x.conv && convRunners.length === 0)) {
    const line = `${shapeKey(s)}: not measured: no implementation selected runs convolution layers (qgemm on WebGPU and tfjs do)`;
    notes.push(line);
    progress(line);
  }
  const dstBytes = opts.pipeline === 'uint8' ? 1 : 4;

  // ---- run ------------------------------------------------------------------------------------------
  // Squares last (ascending), so that the budget trims the square sweep from the top; every other shape first.
  const order = [
    ...opts.shapes.filter((s) => s.family !== 'square'),
    ...opts.shapes.filter((s) => s.family === 'square').sort((a, b) => a.m - b.m),
  ];
  // A row's ops per ms at the last shape it measured (squares run last and ascending, so a square's estimate
  // comes from the next smaller one, the first square's from the last other shape). The estimate counts
  // the warm-ups and the policy's wall-time calls, not a row's other calls (timed, traced, after a pause)
  // nor a kernel that differs from the last shape's, so it can be short: the bench's callers leave a margin
  // past the budget (bench/device-run.sh: 10 to 15 s).
  const throughput = new Map<string, number>();
  // A cell's clock warm-up: its row's last one (it runs until steady), at most the rule's cap (a warm-up
  // of slow calls can end past it, but those calls are the throughput term's).
  const warmRule = opts.policy.warmRule;
  const warmMs = new Map<string, number>();
  const rows: Row[] = [];
  let checkpoint = opts.onCheckpoint;
  for (const shape of order) {
    let data: ShapeData | null = null;
    const expected = new Map<RhsBits, Expected>(); // per weight bit width: the GEMM each row series ran
    for (const runner of runners) {
      const id = rowKey(runner);
      const convSkip = shape.conv && runner.convolution !== true ? runner.convolution : undefined;
      if (shape.conv && runner.convolution === undefined) continue; // a GEMM implementation: no convolution rows
      if (convSkip) {
        skipped.push({ ...rowIdOf(runner), m: shape.m, n: shape.n, k: shape.k, ...convOf(shape), reason: convSkip });
        progress(`${shapeKey(shape).padEnd(15)} ${id.padEnd(44)} skipped (${convSkip})`);
        continue;
      }
      if (opts.budgetS !== null) {
        const tput = throughput.get(id);
        // onnxruntime's WebGPU rows warm twice: before the wall-time runs and in the profiled session.
        const warmups = (ORT_WEBGPU_IMPLS as readonly string[]).includes(runner.impl) ? 2 : 1;
        const estimateS =
          (tput ? ((opts.policy.warmup + opts.policy.minReps) * ops(shape)) / tput / 1000 : 0) +
          (warmups * (warmMs.get(id) ?? warmRule?.minMs ?? 0)) / 1000;
        const left = opts.budgetS - elapsed();
        // One slow cell (naive-js at 128x4096x4096: minutes) may not eat the budget of every later one.
        const cap = opts.budgetS / CELL_SHARE;
        if (estimateS > left || estimateS > cap) {
          const reason =
            estimateS > left
              ? `time budget: about ${estimateS.toFixed(0)} s estimated, ${Math.max(0, left).toFixed(0)} s left`
              : `time budget: about ${estimateS.toFixed(0)} s estimated, over 1/${CELL_SHARE} of the ${opts.budgetS} s budget`;
          skipped.push({ ...rowIdOf(runner), m: shape.m, n: shape.n, k: shape.k, ...convOf(shape), reason });
          progress(`${shapeKey(shape).padEnd(15)} ${id.padEnd(44)} skipped (${reason})`);
          continue;
        }
      }
      data ??= makeShapeData(shape, opts.seed, opts.pipeline);
      const base = {
        impl: runner.impl,
        backend: runner.backend,
        runtime: runner.runtime,
        mode: runner.mode,
        adapter: runner.adapter,
        m: shape.m,
        n: shape.n,
        k: shape.k,
        ...convOf(shape),
        rhsBits: rhsBitsOf(runner),
        loop: 'back-to-back' as const,
      };
      try {
        // A quiet moment between cells: a previous row's threads (onnxruntime's pool spin-waits after
        // each run) would otherwise compete with this row's first runs.
        await new Promise((r) => setTimeout(r, SETTLE_MS));
        const outcome = await runner.run(data, opts.policy);
        let verified: boolean | null = null;
        let verification: Verification | undefined;
        if (runner.impl === 'qgemm') {
          const bits = rhsBitsOf(runner) ?? 8;
          const want = expected.get(bits) ?? computeExpected(problemFor(data.problem, bits), shape, opts.seed);
          expected.set(bits, want);
          verification = outcome.output
            ? checkResult(want, shape, outcome.output, outcome.hashes ?? [])
            : { verified: false, method: want.method, checked: 0, mismatches: 0, consistent: false, error: 'no output came back' };
          verified = verification.verified;
        }
        const { medianMs, gops: rowGops, ...spread } = statsFields(outcome.wall, outcome.gpu, shape);
        const kernel = runner.impl === 'qgemm' ? (outcome.kernel ?? null) : null;
        const gpuNote = outcome.gpu ? (outcome.gpuNote ? { gpuNote: outcome.gpuNote } : {}) : { gpuNote: outcome.gpuNote ?? 'no GPU time' };
        const row: Row = {
          ...base,
          medianMs,
          gops: rowGops,
          verified,
          ...spread,
          ...gpuNote,
          kernel,
          roofline: null,
          computes: runner.computes,
          ...(verification ? { verification } : {}),
          ...(outcome.trace ? { trace: outcome.trace } : {}),
          ...(outcome.warm ? { warm: { ms: Math.round(outcome.warm.ms), steady: outcome.warm.steady } } : {}),
        };
        // 4-bit weights: the memory floor counts them as stored, N packed rows of K values in the prepack's
        // layout (two per byte where the adapter reads nibbles; K padded to 64), not K*N bytes; the rows a
        // prepack pads for its kernels' tiles need not be read.
        const rhsBytes =
          row.rhsBits !== 8 && outcome.rhsFormat ? row.n * packedRowBytes(row.k, PACK_FORMATS[outcome.rhsFormat]) : undefined;
        // a convolution layer reads its NHWC input, not the M x K patch matrix the GEMM floor counts: no roofline
        if (runner.impl === 'qgemm' && runner.backend === 'webgpu' && ceilings && !shape.conv)
          row.roofline = roofline(row, ceilings, dstBytes, rhsBytes);
        rows.push(row);
        if (outcome.afterPause) {
          const paused = afterPauseRow(row, outcome.afterPause, { loop: outcome.hashes ?? [], paused: outcome.afterPauseHashes }, shape);
          rows.push(paused);
          progress(
            `${shapeKey(shape).padEnd(15)} ${rowKey(paused).padEnd(44)} ${String(paused.reps).padStart(2)} runs, median ${fmtMs(paused.medianMs!)}`,
          );
        }
        throughput.set(id, ops(shape) / outcome.wall.medianMs);
        if (outcome.warm && warmRule)
          warmMs.set(id, Math.min(outcome.warm.ms, Number.isFinite(warmRule.maxMs) ? warmRule.maxMs : Infinity));
        const gpuPart =
          row.gpuMedianMs !== null
            ? `; GPU ${fmtMs(row.gpuMedianMs)} = ${fmtGops(row.gpuGops!)} GOPS`
            : `; GPU time: none (${row.gpuNote})`;
        const check = verification
          ? verification.verified
            ? ` verified (${verification.method}, ${verification.checked} entries)`
            : ` VERIFICATION FAILED: ${verification.error ?? `${verification.mismatches} mismatches, first ${JSON.stringify(verification.firstMismatch)}`}`
          : '';
        const warmPart = outcome.warm
          ? `; warmed ${(outcome.warm.ms / 1000).toFixed(1)} s${outcome.warm.steady ? '' : ' (not steady)'}`
          : '';
        progress(
          `${shapeKey(shape).padEnd(15)} ${id.padEnd(44)} ${String(row.reps).padStart(2)} runs, median ${fmtMs(row.medianMs!)} = ${fmtGops(row.gops!)} GOPS${gpuPart}${warmPart}${check}`,
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
          gpuNote: `did not run: ${message}`,
          kernel: null,
          roofline: null,
          computes: runner.computes,
          error: message,
        });
        progress(`${shapeKey(shape).padEnd(15)} ${id.padEnd(44)} FAILED: ${message}`);
      }
      if (checkpoint) {
        const cut = `a checkpoint written after ${rows.length} rows, at ${elapsed().toFixed(1)} s: the run had not finished`;
        try {
          checkpoint(assemble(rows, cut));
        } catch (e) {
          // A checkpoint that cannot be written (a full disk) costs the checkpoints, never the run or its report.
          checkpoint = undefined;
          const line = `checkpoints stopped: ${(e as Error).message.split('\n')[0]}`;
          notes.push(line);
          progress(line);
        }
      }
    }
  }

  // A peer that could not start says why in its rows (qgemm's missing rows stay in `skipped` only).
  for (const u of started.unavailable.filter((x) => x.impl !== 'qgemm')) {
    for (const shape of opts.shapes.filter((s) => !s.conv || u.convolution)) {
      const { medianMs, gops: rowGops, ...spread } = statsFields(null, null, shape);
      const adapter = u.backend === 'cpu' ? 'cpu' : slug;
      rows.push({
        impl: u.impl,
        backend: u.backend,
        runtime: u.runtime,
        mode: u.mode,
        adapter,
        m: shape.m,
        n: shape.n,
        k: shape.k,
        ...convOf(shape),
        rhsBits: rhsBitsOf(u),
        loop: 'back-to-back',
        medianMs,
        gops: rowGops,
        verified: null,
        ...spread,
        gpuNote: u.reason,
        kernel: null,
        roofline: null,
        computes: '',
        error: u.reason,
      });
    }
  }

  for (const r of runners) await r.close().catch(() => undefined);
  await chrome?.close();
  choice.ctx?.destroy();
  return assemble(rows);

  /** The report of `all` rows; `incomplete` (why) where the run has not finished (a checkpoint). */
  function assemble(all: readonly Row[], incomplete?: string): BenchReport {
    const sortedRows = sortShapes(
      all.map((r) => ({ ...r, family: opts.shapes.find((s) => shapeKey(s) === shapeKey(r))?.family ?? 'custom' })),
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
        toggles: choice.ctx ? (choice.ctx.caps.toggles ?? null) : null,
        tuning: choice.ctx ? describeTuning(choice.ctx.tuning) : null,
        ceilings: ceilings ?? {
          dot4Tops: null,
          copyGBs: null,
          readGBs: null,
          subgroupMatrixTops: null,
          notes: [choice.kind === 'none' ? 'no WebGPU adapter' : 'not measured (see notes)'],
        },
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
      chrome: chrome
        ? {
            version: chrome.version,
            adapter: chrome.adapter,
            flags: chrome.flags,
            profile: chrome.profile,
            verify: chrome.verify,
            crossOriginIsolated: chrome.crossOriginIsolated,
          }
        : null,
      pipeline: {
        kind: opts.pipeline,
        description: describePipeline(
          opts.pipeline,
          opts.shapes.some((s) => s.conv),
        ),
        appliesTo: "this project's rows (qgemm); onnxruntime and naive-js return raw int32, tfjs f32",
      },
      timing: {
        policy: opts.policy,
        medianMs:
          'wall time of one call (call: upload both + compute + readback; resident: upload lhs + compute + readback; device: compute + submission; CPU rows: the call itself)',
        gpuMs:
          'GPU time from timestamp queries (qgemm: the compute pass, pack + gemm + output; tfjs: its kernels; onnxruntime WebGPU: its kernels, from a profiled session)',
      },
      implementations: runners.map((r) => ({
        impl: r.impl,
        backend: r.backend,
        runtime: r.runtime,
        mode: r.mode,
        rhsBits: rhsBitsOf(r),
        computes: r.computes,
        details: r.details,
      })),
      comparisons: compare(finalRows, choice.kind),
      skipped: [...skipped],
      notes: [...notes],
      ...(incomplete ? { incomplete } : {}),
      elapsedS: round(elapsed(), 3),
    };
  }
}
