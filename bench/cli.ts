// The benchmark CLI (bench/main.ts is its entry; see bench/README.md).
// Parses the flags, runs the harness (bench/harness.ts), prints the terminal table, and writes the
// JSON (the issue's contract) and the self-contained HTML report, by default to the ignored folder
// bench/out/<date>-<adapter>[-quick].{json,html} (`--results bench/results` to keep them in the repo).
// Exit code 0 when every qgemm row is verified, 1 when one failed verification or could not run, 2 on bad flags.

import { existsSync, mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { InputError } from '../src/errors.ts';
import { repoRoot } from './environment.ts';
import { runBenchmark, type BenchOptions } from './harness.ts';
import type { BenchReport } from './report.ts';
import {
  BACKENDS,
  IMPLS,
  MODES,
  RHS_BITS,
  RUNTIMES,
  type BackendName,
  type ImplName,
  type Mode,
  type RhsBits,
  type Runtime,
} from './impls/types.ts';
import type { PipelineKind } from './problems.ts';
import { htmlReport } from './report-html.ts';
import { screenshotHtml } from './screenshot.ts';
import { terminalReport } from './report-terminal.ts';
import { FULL_SHAPES, NAMED_SHAPES, QUICK_SHAPES, parseShapes } from './shapes.ts';
import { FULL_POLICY, QUICK_POLICY } from './timing.ts';
import { writeWhole } from './write-whole.ts';

const DEFAULT_BUDGET_S = 1200;

export const HELP = `qgemm-webgpu benchmark: this project's int8 GEMM (WebGPU in Node and in headless Chrome, and the
CPU path) next to tfjs-backend-webgpu f32 matMul, onnxruntime's WebGPU EP (MatMul f32, MatMulNBits 8/4-bit),
onnxruntime-node MatMulInteger (CPU) and a naive JS loop, on the same shapes and the same adapter, every
qgemm result verified against the CPU reference, beside the adapter's own ceilings (dot4, copy).

Usage: npm run bench -- [flags]        (or: node dist/node/bench.js [flags])

  --quick               the short suite (CI's): 64^3, 256^3, 1x1024x1024, 16x1024x1024, 3136x64x576 and the
                        two convolution layers, modes resident and call
  --shapes LIST         MxNxK list, e.g. 256x256x256,1x4096x4096 (default: the full suite: squares
                        64..2048 trimmed by --budget, M in {1,16,128} x N=K in {1024,4096}, 3136x64x576,
                        the convolution layers), convolution layers by name (conv{H}x{W}x{C}-k{KH}x{KW}-s{S}[-valid]-o{O},
                        SAME padding unless -valid: conv56x56x64-k3x3-s1-o64, conv112x112x32-k3x3-s2-o64),
                        or a named set among the items: ${Object.keys(NAMED_SHAPES).join(', ')}; skinny =
                        M in {1,4,16,64,128} x N=K in {4096,11008} (meant for a GPU: far too slow on SwiftShader);
                        conv = 3136x64x576 and the two convolution layers (qgemm WebGPU and tfjs run the layers)
  --impls LIST          ${IMPLS.join(',')} (default: all)
  --runtimes LIST       ${RUNTIMES.join(',')} (default: both; chrome = headless Chromium via puppeteer-core)
  --backends LIST       ${BACKENDS.join(',')} (default: both; qgemm runs on each)
  --modes LIST          ${MODES.join(',')} (default: all three; --quick: resident,call). What stays on the
                        GPU between calls: call = nothing (both operands uploaded, packed); resident = the
                        weights (rhs), as inference runs; device = lhs and dst too (GPU work + submission).
                        CPU rows run as call, and as resident where asked; onnxruntime WebGPU rows as resident
  --rhs-bits LIST       bit widths of the weights for qgemm's resident rows (WebGPU and CPU), one row series
                        each: 8 (default) and/or 4 (requantized to 4 bits in ctx.prepack or prepackCpu,
                        stored two per byte; 4 adds onnxruntime-node's MatMulNBits-4 CPU row);
                        every row's JSON says "rhsBits" (qgemm 8|4, MatMulNBits-8/-4 8/4, other peers null)
  --pipeline KIND       uint8 (default: int32 -> uint8 through bias + fixed-point scale + saturating cast)
                        or int32 (raw accumulators, as MatMulInteger returns)
  --budget SECONDS      time budget; cells estimated not to fit are skipped, squares first
                        (default ${DEFAULT_BUDGET_S} for the full suite, none for --quick and --shapes)
  --dawn PATH           load this dawn.node instead of the 'webgpu' package (carrying dist/ to a GPU machine)
  --tuning FILE         a tuning table from \`qgemm tune\` for qgemm's WebGPU context in Node; it serves
                        before a table committed for the adapter, which serves the shapes nearer one of
                        its own entries
  --json FILE           also write the JSON results to FILE
  --checkpoint          write --json's FILE after every cell too, the report so far with "incomplete" set,
                        so that a run cut short by a time limit keeps its rows (the final report replaces it)
  --html FILE           write the HTML report to FILE (default: bench/out/<date>-<adapter>[-quick].html)
  --results DIR         folder of the default JSON and HTML files (default: bench/out, ignored by git;
                        bench/results to save them with the project)
  --no-after-pause      no after-pause rows (each resident GPU row's single calls after 200 ms idle): a second
                        pass of a time-limited run, whose first pass has them
  --no-save             do not write the default JSON and HTML files
  --screenshot PNG      also save a screenshot of the HTML report (headless Chromium)
  --report-from JSON    run nothing: re-render the reports of a saved JSON result (next to it, or --html)
  --seed N              operand seed (default 1)
  --help                this text

Adapter: a hardware WebGPU adapter if there is one; else SwiftShader if Debian's chromium is installed;
else the CPU path only (the output says which). GOPS = 2*M*N*K / median wall time of one call; GPU time
from timestamp queries is reported beside it where the adapter offers them, and each qgemm WebGPU row's
roofline (the floor its kernel could reach on this adapter's measured ceilings, and the fraction reached).`;

function list<T extends string>(flag: string, value: string | undefined, allowed: readonly T[]): T[] | undefined {
  if (value === undefined) return undefined;
  const items = value
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  for (const item of items) if (!allowed.includes(item as T)) throw new Error(`${flag}: unknown "${item}" (one of ${allowed.join(', ')})`);
  if (items.length === 0) throw new Error(`${flag}: expected at least one of ${allowed.join(', ')}`);
  return items as T[];
}

export interface CliPlan {
  options: BenchOptions;
  json?: string;
  /** Write `json` after every cell too (the report so far). */
  checkpoint: boolean;
  html?: string;
  resultsDir: string;
  save: boolean;
  screenshot?: string;
  /** Re-render this saved result instead of running. */
  reportFrom?: string;
  /** Its contents, read and checked while the command line is parsed. */
  saved?: BenchReport;
}

export function parseCli(argv: string[]): CliPlan | 'help' {
  const { values, tokens } = parseArgs({
    args: argv,
    strict: true,
    tokens: true,
    options: {
      quick: { type: 'boolean' },
      shapes: { type: 'string' },
      impls: { type: 'string' },
      runtimes: { type: 'string' },
      backends: { type: 'string' },
      modes: { type: 'string' },
      'rhs-bits': { type: 'string' },
      pipeline: { type: 'string' },
      budget: { type: 'string' },
      dawn: { type: 'string' },
      tuning: { type: 'string' },
      json: { type: 'string' },
      checkpoint: { type: 'boolean' },
      html: { type: 'string' },
      results: { type: 'string' },
      'no-save': { type: 'boolean' },
      'no-after-pause': { type: 'boolean' },
      seed: { type: 'string' },
      screenshot: { type: 'string' },
      'report-from': { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  if (values.help) return 'help';
  // A flag given twice would keep its last value without a word; an empty value would read as not given.
  const seen = new Set<string>();
  for (const t of tokens) {
    if (t.kind !== 'option') continue;
    if (seen.has(t.name)) throw new Error(`--${t.name}: given twice; give each flag once`);
    seen.add(t.name);
    if (t.value === '') throw new Error(`--${t.name}: expected a value, got an empty one`);
  }
  if (values['report-from']) {
    const runFlags = [...seen].filter((f) => !['report-from', 'html', 'screenshot'].includes(f));
    if (runFlags.length)
      throw new Error(
        `--report-from: re-renders a saved result, with --html and --screenshot only; it runs nothing (got --${runFlags.join(', --')})`,
      );
  }
  const pipeline = (values.pipeline ?? 'uint8') as PipelineKind;
  if (pipeline !== 'uint8' && pipeline !== 'int32') throw new Error(`--pipeline: expected uint8 or int32, got "${values.pipeline}"`);
  let budgetS: number | null = null;
  if (values.budget !== undefined) {
    budgetS = Number(values.budget);
    if (!(budgetS > 0 && budgetS < Number.POSITIVE_INFINITY)) {
      throw new Error(`--budget: expected a positive, finite number of seconds, got "${values.budget}"`);
    }
  }
  const seed = values.seed === undefined ? 1 : Number(values.seed);
  if (!Number.isInteger(seed)) throw new Error(`--seed: expected an integer, got "${values.seed}"`);
  const quick = !!values.quick;
  const modes = list<Mode>('--modes', values.modes, MODES) ?? (quick ? ['resident', 'call'] : [...MODES]);
  const rhsBits = (list('--rhs-bits', values['rhs-bits'], RHS_BITS.map(String)) ?? ['8']).map((b) => Number(b) as RhsBits);
  if (rhsBits.length === 0) throw new Error('--rhs-bits: expected 8 and/or 4');
  if (rhsBits.some((b) => b !== 8) && !modes.includes('resident'))
    throw new Error('--rhs-bits: 4-bit weights run in resident mode only; add resident to --modes');
  const shapes = values.shapes ? parseShapes(values.shapes) : quick ? QUICK_SHAPES : FULL_SHAPES;
  if (shapes.length === 0) throw new Error(`--shapes: expected at least one shape, got "${values.shapes}"`);
  const suite: BenchOptions['suite'] = values.shapes ? 'custom' : quick ? 'quick' : 'full';
  if (budgetS === null && suite === 'full') budgetS = DEFAULT_BUDGET_S;
  if (values.checkpoint && (!values.json || values['report-from'])) throw new Error('--checkpoint: needs --json FILE, of a run');
  // two outputs (or an output and the saved result) in one file: the last written would replace the other
  const files = (['json', 'html', 'screenshot', 'report-from'] as const).filter((f) => values[f]).map((f) => [f, resolve(values[f]!)]);
  for (const [i, [flag, path]] of files.entries()) {
    const twin = files.slice(0, i).find(([, p]) => p === path);
    if (twin) throw new Error(`--${flag}: the same file as --${twin[0]} (${path}); name another`);
  }
  return {
    options: {
      shapes,
      impls: list<ImplName>('--impls', values.impls, IMPLS) ?? [...IMPLS],
      runtimes: list<Runtime>('--runtimes', values.runtimes, RUNTIMES) ?? [...RUNTIMES],
      backends: list<BackendName>('--backends', values.backends, BACKENDS) ?? [...BACKENDS],
      modes,
      rhsBits: [...new Set(rhsBits)],
      policy: { ...(quick ? QUICK_POLICY : FULL_POLICY), ...(values['no-after-pause'] ? { afterPauseRows: false as const } : {}) },
      budgetS,
      pipeline,
      seed,
      ...(values.dawn ? { dawnPath: resolve(values.dawn) } : {}),
      ...(values.tuning ? { tuning: readJson('--tuning', resolve(values.tuning)), tuningName: values.tuning } : {}),
      suite,
      command: `bench ${argv.join(' ')}`.trim(),
    },
    ...(values.json ? { json: outFile('--json', values.json) } : {}),
    checkpoint: !!values.checkpoint,
    ...(values.html ? { html: outFile('--html', values.html) } : {}),
    resultsDir: resultsFolder(
      values.results ? resolve(values.results) : join(repoRoot(), 'bench/out'),
      !values['no-save'] && !values['report-from'],
    ),
    save: !values['no-save'],
    ...(values.screenshot ? { screenshot: outFile('--screenshot', values.screenshot) } : {}),
    ...(values['report-from'] ? { reportFrom: resolve(values['report-from']), saved: savedReport(resolve(values['report-from'])) } : {}),
  };
}

/** An output file's path, refused before any run where a file cannot be written there (a folder, a read-only place). */
function outFile(flag: string, path: string): string {
  const full = resolve(path);
  if (existsSync(full) && !statSync(full).isFile()) throw new Error(`${flag}: ${path} is not a file (a folder?); name a file to write`);
  const folder = dirname(full);
  if (!existsSync(folder) || !statSync(folder).isDirectory()) {
    throw new Error(`${flag}: the folder ${dirname(path)} does not exist; make it first (only --results makes its folder)`);
  }
  canWriteIn(flag, folder);
  return full;
}

/** The results folder, where it is written to: a folder (made if missing) in which a file can be made. */
function resultsFolder(folder: string, used: boolean): string {
  if (!used) return folder;
  if (existsSync(folder) && !statSync(folder).isDirectory()) throw new Error(`--results: ${folder} is not a folder`);
  let parent = folder;
  while (!existsSync(parent)) parent = dirname(parent);
  canWriteIn('--results', parent);
  return folder;
}

/** Makes and removes a file in `folder`: a place that takes no file is refused before the run, not after it. */
function canWriteIn(flag: string, folder: string): void {
  const probe = join(folder, `.bench-write-probe-${process.pid}`);
  try {
    writeFileSync(probe, '');
  } catch (e) {
    throw new Error(`${flag}: cannot write in ${folder} (${(e as NodeJS.ErrnoException).code ?? (e as Error).message})`);
  }
  rmSync(probe, { force: true });
}

/** A JSON file a flag names, its reading and parsing errors named by the flag. */
function readJson(flag: string, path: string): unknown {
  try {
    return JSON.parse(readFileSync(path, 'utf8'));
  } catch (e) {
    throw new Error(`${flag}: cannot read ${path} as JSON: ${(e as Error).message.split('\n')[0]}`);
  }
}

/** A saved result of this harness (--report-from), read and checked before anything is rendered. */
function savedReport(path: string): BenchReport {
  const r = readJson('--report-from', path) as Partial<BenchReport> | null;
  if (!r || typeof r !== 'object' || !Array.isArray(r.runs) || !r.adapter || typeof r.date !== 'string') {
    throw new Error(`--report-from: ${path} is not a saved benchmark result (a JSON of this harness, with date, adapter and runs)`);
  }
  return r as BenchReport;
}

/**
 * Writes `file` whole (./write-whole.ts). `makeFolder`: the results folder (--results, bench/out/), made
 * where missing; a file the user named (--json, --html) was checked to have its folder before the run (outFile).
 */
function write(file: string, text: string, makeFolder = false): void {
  if (makeFolder) mkdirSync(dirname(file), { recursive: true });
  writeWhole(file, text);
}

export function resultName(report: BenchReport): string {
  return `${report.date.slice(0, 10)}-${report.adapter.name}${report.suite === 'full' ? '' : `-${report.suite}`}`;
}

export function reportJson(report: BenchReport): string {
  return JSON.stringify(report, null, 2) + '\n';
}

export async function runCli(argv: string[]): Promise<number> {
  let plan: CliPlan | 'help';
  try {
    plan = parseCli(argv);
  } catch (e) {
    process.stderr.write(`bench: ${(e as Error).message}\n(--help lists the flags)\n`);
    return 2;
  }
  if (plan === 'help') {
    process.stdout.write(HELP + '\n');
    return 0;
  }
  const written: string[] = [];
  let report: BenchReport;
  if (plan.reportFrom && plan.saved) {
    report = plan.saved;
    plan.save = false;
    plan.html ??= plan.reportFrom.replace(/\.json$/, '') + '.html';
  } else {
    try {
      const json = plan.json;
      report = await runBenchmark({
        ...plan.options,
        log: (line) => process.stderr.write(line + '\n'),
        ...(plan.checkpoint && json ? { onCheckpoint: (partial: BenchReport) => write(json, reportJson(partial)) } : {}),
      });
    } catch (e) {
      if (!(e instanceof InputError)) throw e;
      // The library names its options; here --tuning is a flag (QGEMM_DAWN_TOGGLES stays a variable).
      const flag = /^tuning(\.|\[|$)/.test(e.field) ? '--' : '';
      process.stderr.write(`bench: error: ${flag}${e.message.split('\n')[0]}\n`);
      return 2;
    }
  }
  let json: string;
  let html: string;
  try {
    process.stdout.write(terminalReport(report));
    json = reportJson(report);
    html = htmlReport(report);
  } catch (e) {
    if (!plan.reportFrom) throw e;
    // a JSON with the top-level fields, not the rest of a report of this harness
    process.stderr.write(`bench: --report-from: ${plan.reportFrom} is not a whole saved result (${(e as Error).message.split('\n')[0]})\n`);
    return 2;
  }
  if (plan.save) {
    const base = join(plan.resultsDir, resultName(report));
    write(`${base}.json`, json, true);
    written.push(`${base}.json`);
    if (!plan.html) {
      write(`${base}.html`, html, true);
      written.push(`${base}.html`);
    }
  }
  if (plan.json && !plan.reportFrom) {
    write(plan.json, json);
    written.push(plan.json);
  }
  if (plan.html) {
    write(plan.html, html);
    written.push(plan.html);
  }
  if (plan.screenshot) {
    await screenshotHtml(html, plan.screenshot);
    written.push(plan.screenshot);
  }
  for (const f of written) process.stdout.write(`wrote ${relative(process.cwd(), f) || f}\n`);
  const bad = report.runs.filter((r) => r.impl === 'qgemm' && r.verified !== true);
  if (bad.length) process.stdout.write(`${bad.length} qgemm row(s) failed verification or did not run\n`);
  return bad.length ? 1 : 0;
}
