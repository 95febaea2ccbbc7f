/**
 * Writes test/golden/tflite/*.json: builds each case of ./cases.ts as a one-layer .tflite model
 * (./model.ts; FULLY_CONNECTED and CONV_2D, and ADD, SUB and MUL of two graph inputs) and runs it in
 * TFLite's interpreters: the two compiled to WebAssembly that npm serves, LiteRT.js (@litertjs/core, page
 * ./runner.html, both of its single-thread builds) and @tensorflow/tfjs-tflite (page
 * ./runner-tfjs.html), whose loaders need a browser, so they run in headless Chromium
 * (tools/chromium.ts); and TFLite's C++ interpreter through TensorFlow's Python package (./run_tflite.py)
 * with each op resolver: the default (XNNPACK delegate), the builtin kernels without delegates, and the
 * reference kernels. It then identifies which kernel path produced each output by comparing it with the
 * naive models of ./paths.ts, per interpreter and group of cases (op, weight kind or dtype, and whether
 * the runtime logged the XNNPACK delegate falling back to the builtin kernels; for ADD/SUB/MUL, whether
 * the scales lie outside the range the delegate takes). A path's outputs are written under
 * `outputs.<path>` only when exactly that model reproduces every element of the group, including
 * elements on which the models differ; the evidence goes into each case's `producedBy`.
 * Not run in CI: `cd tools/tflite-golden && npm ci --ignore-scripts && TFLITE_PYTHON=... npm run generate` (README.md).
 * Part of the golden tests of the layers (pack -> gemm -> output), not of the library.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { launchChromium, serveStatic, watchPage } from '../chromium.ts';
import { elementwiseCases, goldenCases } from './cases.ts';
import { type ElementwiseCase, type LayerCase, writeElementwiseModel, writeModel } from './model.ts';
import {
  type KernelPath,
  libraryBuiltinElementwise,
  naiveLayer,
  naiveXnnpackElementwise,
  type PathModel,
  xnnpackTakesElementwise,
} from './paths.ts';

const here = dirname(fileURLToPath(import.meta.url));
const outDir = join(here, '../../test/golden/tflite');
const PATHS: KernelPath[] = ['xnnpack', 'optimized', 'reference'];

function pkgVersion(name: string): string {
  return JSON.parse(readFileSync(join(here, 'node_modules', name, 'package.json'), 'utf8')).version;
}

/**
 * LiteRT.js's JavaScript wrapper maps only float32, int32 and uint8 tensors to typed arrays; the
 * runtime holds int8 (element type 9) too. The page loads a copy of the wrapper whose dtype table also
 * maps int8 to Int8Array (host-memory input and output only; the interpreter is untouched).
 */
function patchedWrapper(): void {
  const src = readFileSync(join(here, 'node_modules/@litertjs/core/dist/index.js'), 'utf8');
  const anchor = 'var DATATYPES = Object.freeze([';
  if (!src.includes(anchor)) throw new Error('@litertjs/core: dtype table not found; check the wrapper version');
  const patched = src.replace(anchor, `${anchor}\n  { dtype: "int8", typedArrayConstructor: Int8Array, elementType: 9 },`);
  mkdirSync(join(here, '.runner'), { recursive: true });
  writeFileSync(join(here, '.runner/litert-core.js'), patched);
}

/**
 * An interpreter: one on npm (its runner page, and the WebAssembly builds it runs, which must agree), or
 * TFLite's C++ interpreter through TensorFlow's Python package with one op resolver (./run_tflite.py,
 * the Python of TFLITE_PYTHON, default python3).
 */
interface Interpreter {
  pkg: string;
  page: string;
  builds: string[];
  about: string;
  /** The op resolver of a Python run (tf.lite.experimental.OpResolverType). */
  resolver?: 'AUTO' | 'BUILTIN_WITHOUT_DEFAULT_DELEGATES' | 'BUILTIN_REF';
}

const python = (resolver: Interpreter['resolver'], about: string): Interpreter => ({
  pkg: 'tensorflow',
  page: '',
  builds: [],
  about: `TFLite's interpreter in TensorFlow's Python package (tf.lite.Interpreter), op resolver ${resolver}: ${about}`,
  resolver,
});

const INTERPRETERS: Interpreter[] = [
  {
    pkg: '@litertjs/core',
    page: 'runner.html',
    builds: ['litert_wasm_internal.js', 'litert_wasm_compat_internal.js'],
    about: "LiteRT compiled to WebAssembly, CompiledModel on accelerator 'wasm'",
  },
  {
    pkg: '@tensorflow/tfjs-tflite',
    page: 'runner-tfjs.html',
    builds: ["(loader's choice)"],
    about: 'TFLite compiled to WebAssembly, TFLiteWebModelRunner',
  },
  python('AUTO', 'the default, with the XNNPACK delegate'),
  python('BUILTIN_WITHOUT_DEFAULT_DELEGATES', 'the builtin (optimized) kernels, no delegate'),
  python('BUILTIN_REF', 'the reference kernels'),
];

interface CaseRun {
  output: number[];
  /** What the runtime logged while this case was compiled and run. */
  log: string[];
}

interface BuildRun {
  runs: CaseRun[];
  /** What loadRuntime reported (the build's features), and every distinct runtime line. */
  info: unknown;
  log: string[];
  browser: string;
}

/** What a runner page runs for one case: the model and its inputs in order. */
interface RunSpec {
  tflite: Uint8Array;
  inputs: { dtype: string; data: number[]; shape: number[] }[];
}

const layerSpec = (c: LayerCase): RunSpec => ({ tflite: writeModel(c), inputs: [c.input] });
const elementwiseSpec = (c: ElementwiseCase): RunSpec => ({ tflite: writeElementwiseModel(c), inputs: [c.a, c.b] });

async function runBuild(cases: RunSpec[], it: Interpreter, build: string, server: { url: string }): Promise<BuildRun> {
  const browser = await launchChromium({ swiftshader: true });
  try {
    const page = await browser.newPage();
    const log = watchPage(page);
    await page.goto(`${server.url}${it.page}`);
    await page.waitForFunction('window.runnerReady', { timeout: 120_000 });
    type W = { loadRuntime: (f: string) => Promise<unknown>; runModels: (x: unknown) => Promise<{ output: number[] }[]> };
    const info = await page.evaluate((f) => (window as unknown as W).loadRuntime(f), build);
    const runs: CaseRun[] = [];
    for (const c of cases) {
      const before = log.entries.length;
      const model = { tflite: Buffer.from(c.tflite).toString('base64'), inputs: c.inputs };
      const [r] = await page.evaluate((m) => (window as unknown as W).runModels([m]), model);
      runs.push({ output: r.output, log: log.entries.slice(before).map((e) => e.text) });
    }
    return { runs, info, log: [...new Set(log.entries.map((e) => e.text))], browser: await browser.version() };
  } finally {
    await browser.close();
  }
}

/** Runs every case through ./run_tflite.py with the interpreter's op resolver, one thread. */
function runPython(specs: RunSpec[], it: Interpreter): BuildRun & { describe: string } {
  const bin = process.env.TFLITE_PYTHON ?? 'python3';
  const models = specs.map((c) => ({ tflite: Buffer.from(c.tflite).toString('base64'), inputs: c.inputs }));
  const r = spawnSync(bin, [join(here, 'run_tflite.py'), it.resolver!], {
    input: JSON.stringify(models),
    encoding: 'utf8',
    maxBuffer: 1 << 28,
  });
  if (r.status !== 0) throw new Error(`${bin} run_tflite.py ${it.resolver}: exit ${r.status}: ${r.stderr.slice(-2000)}`);
  const out = JSON.parse(r.stdout) as { tensorflow: string; runs: CaseRun[] };
  const describe = `tensorflow ${out.tensorflow} (${it.about}; 1 thread) in Python ${execFileSync(bin, ['--version']).toString().trim()}`;
  return { runs: out.runs, info: { tensorflow: out.tensorflow }, log: [], browser: '', describe };
}

/** Runs every case in every build of `it`; the builds must agree element for element. */
async function runInterpreter(
  cases: { name: string }[],
  specs: RunSpec[],
  it: Interpreter,
  server: { url: string },
): Promise<BuildRun & { describe: string }> {
  if (it.resolver) return runPython(specs, it);
  const builds: BuildRun[] = [];
  for (const build of it.builds) builds.push(await runBuild(specs, it, build, server));
  cases.forEach((c, i) => {
    const [a, ...rest] = builds.map((b) => b.runs[i].output);
    for (const b of rest)
      if (a.length !== b.length || a.some((v, j) => v !== b[j]))
        throw new Error(`${it.pkg}: ${c.name}: the builds ${it.builds.join(', ')} disagree`);
  });
  const created = builds[0].log.find((l) => /Created TensorFlow Lite XNNPACK delegate/.test(l));
  const describe =
    `${it.pkg} ${pkgVersion(it.pkg)} (${it.about}; build ${it.builds.join(' and ')}${it.builds.length > 1 ? ', identical outputs' : ''}; ` +
    `features ${JSON.stringify(builds[0].info)}; 1 thread; runtime log: "${created ?? 'no XNNPACK line'}") in headless Chromium ${builds[0].browser}`;
  return { ...builds[0], describe };
}

const kindOf = (c: LayerCase) =>
  `${c.op} ${c.weights.dtype === 'uint8' ? 'uint8' : Array.isArray(c.weights.scale) ? 'int8 per-channel' : 'int8 per-tensor'}`;

interface Tally {
  elements: number;
  /** Elements on which the three path models do not all agree. */
  discriminating: number;
  /** Per model: elements reproduced, and of the discriminating ones. */
  match: Record<string, { all: number; disc: number }>;
}

const MODELS: { name: string; path: PathModel; clamp: 'tflite' | 'xnnpack' }[] = [
  { name: 'xnnpack', path: 'xnnpack', clamp: 'xnnpack' },
  { name: 'optimized', path: 'optimized', clamp: 'tflite' },
  { name: 'reference', path: 'reference', clamp: 'tflite' },
  { name: 'xnnpack-with-tflite-clamp', path: 'xnnpack', clamp: 'tflite' },
  { name: 'single-rounding', path: 'single', clamp: 'tflite' },
];

/** The runtime said that the XNNPACK delegate failed to prepare and the builtin kernels run instead. */
const fellBack = (log: string[]) => log.some((l) => /failed to prepare|Restored original execution plan/.test(l));

interface Verdict {
  path: KernelPath | null;
  evidence: string;
}

/**
 * Per interpreter, the cases fall into groups (op and weight kind, and whether the runtime reported the
 * delegate's fallback); a group's path is identified when exactly one of MODELS reproduces every element
 * of every case in it, that model is one of the kernel paths, and the models differ on some element.
 */
function identify(cases: LayerCase[], runs: CaseRun[], label: string): Verdict[] {
  const groupOf = (i: number) =>
    `${kindOf(cases[i])}${fellBack(runs[i].log) ? ', where the runtime logged the XNNPACK delegate failing to prepare' : ''}`;
  const tallies = new Map<string, Tally>();
  cases.forEach((c, i) => {
    const got = runs[i].output;
    const predicted = Object.fromEntries(MODELS.map((m) => [m.name, naiveLayer(c, m.path, m.clamp)]));
    const key = groupOf(i);
    const t = tallies.get(key) ?? {
      elements: 0,
      discriminating: 0,
      match: Object.fromEntries(MODELS.map((m) => [m.name, { all: 0, disc: 0 }])),
    };
    tallies.set(key, t);
    got.forEach((v, j) => {
      const disc = new Set(MODELS.map((m) => predicted[m.name][j])).size > 1;
      t.elements++;
      if (disc) t.discriminating++;
      for (const m of MODELS)
        if (predicted[m.name][j] === v) {
          t.match[m.name].all++;
          if (disc) t.match[m.name].disc++;
        }
    });
  });
  const verdicts = new Map<string, Verdict>();
  console.log(label);
  for (const [key, t] of tallies) {
    const full = MODELS.filter((m) => t.match[m.name].all === t.elements);
    const path =
      full.length === 1 && PATHS.includes(full[0].name as KernelPath) && t.discriminating > 0 ? (full[0].name as KernelPath) : null;
    const other = full.length === 1 && !path ? `; reproduced only by '${full[0].name}', no kernel path of the layers` : '';
    const stats = MODELS.map((m) => `${m.name} ${t.match[m.name].all}/${t.elements} (${t.match[m.name].disc}/${t.discriminating})`).join(
      ', ',
    );
    const evidence =
      `${path ? `path '${path}'` : 'path NOT identified'} from all ${key} cases; elements reproduced by each naive model ` +
      `(of them where the models differ): ${stats}${other}`;
    verdicts.set(key, { path, evidence });
    console.log(`  ${evidence}`);
  }
  return cases.map((_, i) => verdicts.get(groupOf(i))!);
}

/** The elementwise models: XNNPACK's arithmetic (paths.ts) with either clamp, and the library's TFLite builtin arithmetic. */
type ElementwisePath = 'xnnpack' | 'builtin';
const ELEMENTWISE_MODELS: { name: string; run: (c: ElementwiseCase) => number[] }[] = [
  { name: 'xnnpack', run: (c) => naiveXnnpackElementwise(c, 'xnnpack') },
  { name: 'builtin', run: libraryBuiltinElementwise },
  { name: 'xnnpack-with-tflite-clamp', run: (c) => naiveXnnpackElementwise(c, 'tflite') },
];

/**
 * identify() for the elementwise cases: groups are op and dtype (and whether the scales lie outside the
 * delegate's range, and the delegate's fallback); a group's
 * path is 'xnnpack' or 'builtin' when exactly that model reproduces every element and the models differ
 * on some element.
 */
function identifyElementwise(
  cases: ElementwiseCase[],
  runs: CaseRun[],
  label: string,
): { path: ElementwisePath | null; evidence: string }[] {
  const groupOf = (i: number) => {
    const c = cases[i];
    const outside = xnnpackTakesElementwise(c) ? '' : ", with scales outside the range TFLite's XNNPACK delegate takes";
    return `${c.op} ${c.a.dtype}${outside}${fellBack(runs[i].log) ? ', where the runtime logged the XNNPACK delegate failing to prepare' : ''}`;
  };
  const tallies = new Map<string, Tally>();
  cases.forEach((c, i) => {
    const got = runs[i].output;
    const predicted = Object.fromEntries(ELEMENTWISE_MODELS.map((m) => [m.name, m.run(c)]));
    const key = groupOf(i);
    const t = tallies.get(key) ?? {
      elements: 0,
      discriminating: 0,
      match: Object.fromEntries(ELEMENTWISE_MODELS.map((m) => [m.name, { all: 0, disc: 0 }])),
    };
    tallies.set(key, t);
    got.forEach((v, j) => {
      const disc = new Set(ELEMENTWISE_MODELS.map((m) => predicted[m.name][j])).size > 1;
      t.elements++;
      if (disc) t.discriminating++;
      for (const m of ELEMENTWISE_MODELS)
        if (predicted[m.name][j] === v) {
          t.match[m.name].all++;
          if (disc) t.match[m.name].disc++;
        }
    });
  });
  const verdicts = new Map<string, { path: ElementwisePath | null; evidence: string }>();
  console.log(label);
  for (const [key, t] of tallies) {
    const full = ELEMENTWISE_MODELS.filter((m) => t.match[m.name].all === t.elements);
    const path =
      full.length === 1 && (full[0].name === 'xnnpack' || full[0].name === 'builtin') && t.discriminating > 0
        ? (full[0].name as ElementwisePath)
        : null;
    const stats = ELEMENTWISE_MODELS.map(
      (m) => `${m.name} ${t.match[m.name].all}/${t.elements} (${t.match[m.name].disc}/${t.discriminating})`,
    ).join(', ');
    const evidence =
      `${path ? `path '${path}'` : 'path NOT identified'} from all ${key} cases; elements reproduced by each model ` +
      `('builtin' is the library's TFLite builtin arithmetic; of them where the models differ): ${stats}`;
    verdicts.set(key, { path, evidence });
    console.log(`  ${evidence}`);
  }
  return cases.map((_, i) => verdicts.get(groupOf(i))!);
}

async function main(): Promise<void> {
  const cases = goldenCases();
  const ewCases = elementwiseCases();
  patchedWrapper();
  const server = await serveStatic(here);
  const results: { it: Interpreter; describe: string; runs: CaseRun[]; verdicts: Verdict[] }[] = [];
  const ewResults: {
    it: Interpreter;
    describe: string;
    runs: CaseRun[];
    verdicts: { path: ElementwisePath | null; evidence: string }[];
  }[] = [];
  try {
    for (const it of INTERPRETERS) {
      const r = await runInterpreter(cases, cases.map(layerSpec), it, server);
      results.push({ it, describe: r.describe, runs: r.runs, verdicts: identify(cases, r.runs, r.describe) });
      const e = await runInterpreter(ewCases, ewCases.map(elementwiseSpec), it, server);
      ewResults.push({ it, describe: e.describe, runs: e.runs, verdicts: identifyElementwise(ewCases, e.runs, e.describe) });
    }
  } finally {
    server.close();
  }

  rmSync(outDir, { recursive: true, force: true });
  mkdirSync(outDir, { recursive: true });
  const files = new Map<string, object[]>();
  cases.forEach((c, i) => {
    const outputs: Partial<Record<KernelPath, number[]>> = {};
    const notes: string[] = [];
    for (const r of results) {
      const { path, evidence } = r.verdicts[i];
      const got = r.runs[i].output;
      const fb = fellBack(r.runs[i].log)
        ? ' The runtime logged, for this case: XNNPACK delegate failed to prepare, original execution plan restored.'
        : '';
      const exact = MODELS.filter((m) => naiveLayer(c, m.path, m.clamp).every((v, j) => v === got[j])).map((m) => m.name);
      notes.push(`${r.describe}: ${evidence}.${fb} This case reproduced exactly by: ${exact.join(', ') || 'none'}.`);
      if (!path) continue;
      const had = outputs[path];
      if (had?.some((v, j) => v !== got[j])) throw new Error(`${c.name}: two interpreters identified as '${path}' disagree`);
      outputs[path] = got;
    }
    const { outputShape, ...layer } = c;
    const golden = { ...layer, outputs, outputShape, producedBy: notes.join(' | ') };
    const file = `${c.op === 'FULLY_CONNECTED' ? 'fc' : 'conv'}-${c.weights.dtype === 'uint8' ? 'uint8' : Array.isArray(c.weights.scale) ? 'int8-perchannel' : 'int8-pertensor'}.json`;
    files.set(file, [...(files.get(file) ?? []), golden]);
  });
  ewCases.forEach((c, i) => {
    const outputs: Partial<Record<ElementwisePath, number[]>> = {};
    const notes: string[] = [];
    for (const r of ewResults) {
      const { path, evidence } = r.verdicts[i];
      const got = r.runs[i].output;
      const fb = fellBack(r.runs[i].log)
        ? ' The runtime logged, for this case: XNNPACK delegate failed to prepare, original execution plan restored.'
        : '';
      const exact = ELEMENTWISE_MODELS.filter((m) => m.run(c).every((v, j) => v === got[j])).map((m) => m.name);
      notes.push(`${r.describe}: ${evidence}.${fb} This case reproduced exactly by: ${exact.join(', ') || 'none'}.`);
      if (!path) continue;
      const had = outputs[path];
      if (had?.some((v, j) => v !== got[j])) throw new Error(`${c.name}: two interpreters identified as '${path}' disagree`);
      outputs[path] = got;
    }
    const { outputShape, ...rest } = c;
    const golden = { ...rest, outputs, outputShape, producedBy: notes.join(' | ') };
    const file = `${c.op.toLowerCase()}-${c.a.dtype}.json`;
    files.set(file, [...(files.get(file) ?? []), golden]);
  });
  for (const [file, list] of files) writeFileSync(join(outDir, file), `${JSON.stringify(list, null, 1)}\n`);
  // The repository's formatter, so that a regeneration from the same interpreters gives the same bytes.
  execFileSync(join(here, '../../node_modules/.bin/biome'), ['format', '--write', outDir], { stdio: 'inherit' });

  for (const c of cases) {
    const hit = results.flatMap((r) => (r.verdicts[cases.indexOf(c)].path ? [`${r.it.pkg}: ${r.verdicts[cases.indexOf(c)].path}`] : []));
    if (!hit.length) console.log(`case ${c.name}: no path identified by any interpreter`);
  }
  console.log(`wrote ${[...files.keys()].join(', ')} to ${outDir}`);
}

await main();
process.exit(0);
