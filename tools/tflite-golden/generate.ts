/**
 * Writes test/golden/tflite/*.json: builds each case of ./cases.ts as a one-layer .tflite model
 * (./model.ts), runs it in TFLite compiled to WebAssembly (LiteRT.js, @litertjs/core, whose loader needs
 * a browser: headless Chromium through tools/chromium.ts, page ./runner.html), and identifies which
 * kernel path produced the outputs by comparing them with the naive path models of ./paths.ts. A path's
 * outputs are written under `outputs.<path>` only when the evidence identifies it: over every case of
 * the same op and weight kind, exactly that model reproduces every element, including elements on which
 * the other models differ. The evidence goes into each case's `producedBy`.
 * Not run in CI: `cd tools/tflite-golden && npm install && npm run generate` (README.md).
 * Part of the golden tests of the layers (pack -> gemm -> output), not of the library.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { launchChromium, serveStatic, watchPage } from '../chromium.ts';
import { goldenCases } from './cases.ts';
import { type LayerCase, writeModel } from './model.ts';
import { type KernelPath, naiveLayer } from './paths.ts';

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

/** The two WebAssembly builds of the package; every case runs in both and they must agree. */
const BUILDS = ['litert_wasm_internal.js', 'litert_wasm_compat_internal.js'];

interface RunAll {
  outputs: number[][];
  /** Distinct lines the runtime logged (e.g. the XNNPACK delegate's creation). */
  log: string[];
  browser: string;
}

async function runBuild(cases: LayerCase[], build: string, server: { url: string }): Promise<RunAll> {
  const browser = await launchChromium({ swiftshader: true });
  try {
    const page = await browser.newPage();
    const log = watchPage(page);
    await page.goto(`${server.url}runner.html`);
    await page.waitForFunction('window.runnerReady', { timeout: 120_000 });
    type W = { loadRuntime: (f: string) => Promise<unknown>; runModels: (x: unknown) => Promise<{ output: number[] }[]> };
    await page.evaluate((f) => (window as unknown as W).loadRuntime(f), build);
    const models = cases.map((c) => ({
      tflite: Buffer.from(writeModel(c)).toString('base64'),
      dtype: c.input.dtype,
      input: c.input.data,
      shape: c.input.shape,
    }));
    const results = await page.evaluate((m) => (window as unknown as W).runModels(m), models);
    return { outputs: results.map((r) => r.output), log: [...new Set(log.entries.map((e) => e.text))], browser: await browser.version() };
  } finally {
    await browser.close();
  }
}

async function runAll(cases: LayerCase[]): Promise<RunAll & { builds: string }> {
  patchedWrapper();
  const server = await serveStatic(here);
  try {
    const runs: RunAll[] = [];
    for (const build of BUILDS) runs.push(await runBuild(cases, build, server));
    cases.forEach((c, i) => {
      const [a, b] = runs.map((r) => r.outputs[i]);
      if (a.length !== b.length || a.some((v, j) => v !== b[j])) throw new Error(`${c.name}: ${BUILDS[0]} and ${BUILDS[1]} disagree`);
    });
    return { ...runs[0], log: [...new Set(runs.flatMap((r) => r.log))], builds: `${BUILDS.join(' and ')} (identical outputs)` };
  } finally {
    server.close();
  }
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

const MODELS: { name: string; path: KernelPath; clamp: 'tflite' | 'xnnpack' }[] = [
  { name: 'xnnpack', path: 'xnnpack', clamp: 'xnnpack' },
  { name: 'optimized', path: 'optimized', clamp: 'tflite' },
  { name: 'reference', path: 'reference', clamp: 'tflite' },
  { name: 'xnnpack-with-tflite-clamp', path: 'xnnpack', clamp: 'tflite' },
];

async function main(): Promise<void> {
  const cases = goldenCases();
  const run = await runAll(cases);
  const delegateLine = run.log.find((l) => /XNNPACK/i.test(l));
  const interpreter =
    `@litertjs/core ${pkgVersion('@litertjs/core')} (LiteRT compiled to WebAssembly: ${run.builds}; accelerator 'wasm', 1 thread; ` +
    `runtime log: "${delegateLine ?? 'no XNNPACK line'}") in headless Chromium ${run.browser}`;

  const tallies = new Map<string, Tally>();
  const perCase = cases.map((c, i) => {
    const got = run.outputs[i];
    const predicted = Object.fromEntries(MODELS.map((m) => [m.name, naiveLayer(c, m.path, m.clamp)]));
    const t = tallies.get(kindOf(c)) ?? {
      elements: 0,
      discriminating: 0,
      match: Object.fromEntries(MODELS.map((m) => [m.name, { all: 0, disc: 0 }])),
    };
    tallies.set(kindOf(c), t);
    got.forEach((v, j) => {
      const disc = new Set(PATHS.map((p) => predicted[p][j])).size > 1;
      t.elements++;
      if (disc) t.discriminating++;
      for (const m of MODELS)
        if (predicted[m.name][j] === v) {
          t.match[m.name].all++;
          if (disc) t.match[m.name].disc++;
        }
    });
    return { c, got, predicted };
  });

  // A kind's path: the one model of PATHS that reproduces every element of the kind, on at least one
  // element where the models differ.
  const identified = new Map<string, KernelPath | null>();
  for (const [kind, t] of tallies) {
    const full = MODELS.filter((m) => PATHS.includes(m.name as KernelPath) && t.match[m.name].all === t.elements);
    identified.set(kind, full.length === 1 && t.discriminating > 0 ? (full[0].name as KernelPath) : null);
  }

  rmSync(outDir, { recursive: true, force: true });
  mkdirSync(outDir, { recursive: true });
  const files = new Map<string, object[]>();
  for (const { c, got, predicted } of perCase) {
    const kind = kindOf(c);
    const t = tallies.get(kind)!;
    const path = identified.get(kind);
    const stats = MODELS.map(
      (m) => `${m.name} ${t.match[m.name].all}/${t.elements} (${t.match[m.name].disc}/${t.discriminating} where the path models differ)`,
    );
    const caseMatches = MODELS.filter((m) => predicted[m.name].every((v, j) => v === got[j])).map((m) => m.name);
    const producedBy =
      `${interpreter}. ` +
      (path ? `Kernel path identified as '${path}'` : 'Kernel path NOT identified; no outputs written') +
      ` from all ${kind} cases, elements reproduced by each model: ${stats.join(', ')}. ` +
      `This case reproduced exactly by: ${caseMatches.join(', ') || 'none'}.`;
    const { outputShape, ...layer } = c;
    const golden = { ...layer, outputs: path ? { [path]: got } : {}, outputShape, producedBy };
    const file = `${c.op === 'FULLY_CONNECTED' ? 'fc' : 'conv'}-${c.weights.dtype === 'uint8' ? 'uint8' : Array.isArray(c.weights.scale) ? 'int8-perchannel' : 'int8-pertensor'}.json`;
    files.set(file, [...(files.get(file) ?? []), golden]);
  }
  for (const [file, list] of files) writeFileSync(join(outDir, file), `${JSON.stringify(list, null, 1)}\n`);
  // The repository's formatter, so that a regeneration from the same interpreter gives the same bytes.
  execFileSync(join(here, '../../node_modules/.bin/biome'), ['format', '--write', outDir], { stdio: 'inherit' });

  console.log(interpreter);
  console.log(run.log.join('\n'));
  for (const [kind, t] of tallies) {
    console.log(
      `${kind}: identified ${identified.get(kind) ?? 'none'}; ${t.elements} elements, ${t.discriminating} where the path models differ`,
    );
    for (const m of MODELS) console.log(`  ${m.name}: ${t.match[m.name].all}/${t.elements}, ${t.match[m.name].disc}/${t.discriminating}`);
  }
  for (const { c, got, predicted } of perCase) {
    const bad = MODELS.filter((m) => predicted[m.name].some((v, j) => v !== got[j])).map((m) => m.name);
    if (bad.length === MODELS.length) console.log(`case ${c.name}: reproduced by no model`);
  }
  console.log(`wrote ${[...files.keys()].join(', ')} to ${outDir}`);
}

await main();
process.exit(0);
