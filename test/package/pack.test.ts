// The published package as a consumer gets it: `npm pack` (scripts off, so it packs what `npm run
// build` made), the file list checked against the runtime set (no benchmark, no demo, no sources,
// whatever else is in dist/) and its size, then the tarball installed into a fresh temp project
// together with the current TypeScript 7 from the npm registry (one install; the package has no
// runtime dependency). A consumer file is type-checked under strict `nodenext` and `bundler` settings
// (skipLibCheck off, exactOptionalPropertyTypes on: an option given as undefined is absent) by
// TypeScript 5.9 (the repository's) and by TypeScript 7, each with and without the DOM library
// (TypeScript 7's DOM library declares WebGPU itself; the package's declarations take the GPU types
// from the program, see tools/env-types.d.ts), then compiled and run in Node against both
// entries ('qgemm-webgpu' and 'qgemm-webgpu/cpu') and the `qgemm` bin.
// The docs are code too: every ```ts snippet of README.md and docs/*.md is type-checked the same way
// (strict, nodenext and bundler; TypeScript 5.9 and 7) against the installed package and run in Node
// (Dawn's `webgpu` linked in from the repository, so GpuContext snippets run on SwiftShader); every
// ```json block parses as strict JSON; every export the README's API table names is imported by name,
// and every call it writes, `f(a, b?, c = 1, { d?, e })`, is checked against the declarations: its
// parameters, which are optional, the option keys.

import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, posix } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newest } from '../browser/freshness.ts';

const REPO = join(import.meta.dirname, '../..');
const work = mkdtempSync(join(tmpdir(), 'qgemm-pack-'));
const consumer = join(work, 'consumer');
/** The two compilers: the repository's TypeScript 5.9, and TypeScript 7 as installed in the consumer. */
const TSC = join(REPO, 'node_modules/typescript/bin/tsc');
const TSC7 = join(consumer, 'node_modules/typescript/bin/tsc');
const COMPILERS = [
  { name: 'TypeScript 5.9', tsc: TSC, version: /^Version 5\.9\./ },
  { name: 'TypeScript 7', tsc: TSC7, version: /^Version 7\./ },
];
afterAll(() => rmSync(work, { recursive: true, force: true }));

/** The environment of a user's shell: none of the npm_* variables of the npm that started vitest. */
const cleanEnv = () => Object.fromEntries(Object.entries(process.env).filter(([k]) => !/^npm_/i.test(k)));

function sh(cmd: string, args: string[], cwd: string): string {
  return execFileSync(cmd, args, { cwd, encoding: 'utf8', env: cleanEnv(), stdio: ['ignore', 'pipe', 'pipe'] });
}

interface Packed {
  filename: string;
  size: number;
  unpackedSize: number;
  files: { path: string }[];
}
let packed: Packed;

beforeAll(() => {
  const built = join(REPO, 'dist/types/index.d.ts');
  if (!existsSync(built) || statSync(built).mtimeMs < newest([join(REPO, 'src')])) sh('npm', ['run', 'build'], REPO);
  // Something a bench or demo build leaves in dist/ must not ship.
  mkdirSync(join(REPO, 'dist/demo'), { recursive: true });
  writeFileSync(join(REPO, 'dist/demo/stray.txt'), 'not published\n');
  packed = JSON.parse(sh('npm', ['pack', '--ignore-scripts', '--json', '--pack-destination', work], REPO))[0];
  mkdirSync(consumer);
  writeFileSync(join(consumer, 'package.json'), JSON.stringify({ name: 'consumer', private: true, type: 'module' }));
  sh('npm', ['install', '--prefer-offline', '--no-audit', '--no-fund', '--no-save', join(work, packed.filename), 'typescript@7'], consumer);
  // Node's own types, for the programs compiled without the DOM library; Dawn's `webgpu` for the snippets.
  mkdirSync(join(consumer, 'node_modules/@types'), { recursive: true });
  symlinkSync(join(REPO, 'node_modules/@types/node'), join(consumer, 'node_modules/@types/node'), 'dir');
  symlinkSync(join(REPO, 'node_modules/webgpu'), join(consumer, 'node_modules/webgpu'), 'dir');
}, 600_000);

describe('the packed file list', () => {
  it('is the runtime alone: bin, dist/node entries and chunks, browser bundles, declarations, docs', () => {
    const paths = packed.files.map((f) => f.path);
    const allowed = [
      /^bin\/qgemm\.mjs$/,
      /^dist\/node\/(index|cpu|cli|launch)\.js$/,
      /^dist\/node\/chunks\/[\w-]+\.js$/,
      /^dist\/browser\/(qgemm|cpu)\.js$/,
      /^dist\/browser\/chunks\/[\w-]+\.js$/,
      /^dist\/types\/[\w/.-]+\.d\.ts$/,
      /^(package\.json|README\.md|LICENSE|CHANGELOG\.md)$/,
      /^docs\/[\w-]+\.(md|svg)$/, // what README.md and the CLI's help link to, and a figure of one
    ];
    expect(paths.filter((p) => !allowed.some((re) => re.test(p)))).toEqual([]);
    for (const p of [
      'LICENSE',
      'CHANGELOG.md',
      'dist/types/index.d.ts',
      'dist/types/cpu.d.ts',
      'dist/browser/cpu.js',
      'dist/node/cli.js',
      'dist/node/launch.js',
      'docs/gpu.md',
    ]) {
      expect(paths).toContain(p);
    }
  });
  // The budget guards against shipping what is not the library (the benchmark bundle made it 6.1 MB);
  // the library itself is about 2.0 MB unpacked, 508 kB packed (2026-11-27: with the tuner and its
  // kernel configurations, the call plans, the layers' validation; 1.65 MB and 403 kB on 2026-11-25), so
  // the bounds leave room for growth, not for a second bundle. docs/ (its pages, which README.md and the
  // CLI's help link to, and a figure) adds 0.3 MB unpacked and about 80 kB packed (2026-11-29: 2.72 MB
  // and 723 kB in all).
  it('is small (was 6.1 MB installed with the benchmark bundle)', () => {
    expect(packed.unpackedSize).toBeLessThan(3e6);
    expect(packed.size).toBeLessThan(800e3);
  });
  it('installs no runtime dependency, not even the WebGPU types (wgsl_reflect is inlined)', () => {
    const pkg = JSON.parse(readFileSync(join(REPO, 'package.json'), 'utf8'));
    expect(Object.keys(pkg.dependencies ?? {})).toEqual([]);
    expect(existsSync(join(consumer, 'node_modules/wgsl_reflect'))).toBe(false);
    expect(existsSync(join(consumer, 'node_modules/@webgpu/types'))).toBe(false);
    // No module acts on import (Dawn's globals are installed when a device is acquired): a page that imports
    // referenceGemm alone is bundled without the GPU path (vite: 16 kB against 399 kB without the field).
    expect(pkg.sideEffects).toBe(false);
  });
  it('declares no WebGPU global and references no types package', () => {
    const dts = packed.files.map((f) => f.path).filter((p) => p.endsWith('.d.ts'));
    for (const p of dts) {
      const text = readFileSync(join(consumer, 'node_modules/qgemm-webgpu', p), 'utf8');
      const code = text.replace(/\/\*[\s\S]*?\*\//g, '').replace(/^\s*\/\/(?!\/).*$/gm, '');
      expect(code, p).not.toMatch(/reference types=|declare global|@webgpu\/types/);
    }
  });
  it('the CPU-only browser entry, with the chunk it shares, is a tenth of the full one, without GPU code', () => {
    const cpu = browserEntry('cpu.js');
    const full = browserEntry('qgemm.js');
    expect(cpu.text.length).toBeLessThan(full.text.length / 5);
    expect(cpu.text).not.toMatch(/requestAdapter|WgslReflect|createComputePipeline/);
    // the code they share is a chunk both import (one InputError class for both), and it is packed
    expect(cpu.chunks.length).toBeGreaterThan(0);
    expect(full.chunks).toEqual(expect.arrayContaining(cpu.chunks));
    for (const c of cpu.chunks) expect(packed.files.map((f) => f.path)).toContain(`dist/browser/${c}`);
  });
});

/** A browser entry of dist/browser: the chunks it imports, and its text with theirs. */
function browserEntry(file: string): { chunks: string[]; text: string } {
  const entry = readFileSync(join(REPO, 'dist/browser', file), 'utf8');
  const chunks = [...new Set([...entry.matchAll(/from "\.\/(chunks\/[\w.-]+\.js)"/g)].map((m) => m[1]))];
  return { chunks, text: [entry, ...chunks.map((c) => readFileSync(join(REPO, 'dist/browser', c), 'utf8'))].join('\n') };
}

const CONSUMER = `
import { cpuGemm, gemm, GpuContext, referenceGemm, InputError, quantizeMultiplier, runLayers, verifyDevice, type GemmProblem, type GemmResult, type SequentialLayer } from 'qgemm-webgpu';
import { cpuGemm as cpuOnly, parseNpy, serializeNpy } from 'qgemm-webgpu/cpu';

const problem: GemmProblem = {
  lhs: { data: Uint8Array.from([1, 2, 3, 4, 5, 6]), rows: 2, cols: 3, order: 'row-major' },
  rhs: { data: Int8Array.from([-1, 2, -3, 4, -5, 6]), rows: 3, cols: 2, order: 'col-major' },
  lhsZeroPoint: 3,
  rhsZeroPoint: -7,
  pipeline: [{ type: 'saturatingCast', to: 'int16' }],
};
// An option or field given as undefined is absent, at run time and under exactOptionalPropertyTypes.
const unset = { bitDepth: undefined, dstOrder: undefined };
const results: GemmResult[] = [
  cpuGemm(problem),
  referenceGemm(problem),
  cpuOnly(problem),
  await gemm(problem, { backend: 'cpu' }),
  await gemm({ ...problem, ...unset }, { backend: 'cpu', kernel: undefined, onKernel: undefined, device: undefined }),
];
const npy = parseNpy(serializeNpy({ dtype: 'int16', shape: [2, 2], fortranOrder: false, data: results[0].data as Int16Array }));
let field = '';
try {
  cpuGemm({ ...problem, lhsZeroPoint: 2 ** 40 });
} catch (e) {
  if (e instanceof InputError) field = e.field;
}
const { multiplier } = quantizeMultiplier(0.5);
// Type-checked, not run: more optional fields given as undefined (a layer's, a stage's axis, verify's).
export async function undefinedIsAbsent(): Promise<void> {
  const weights = { data: new Int8Array(4), shape: [2, 2], scale: 0.5 };
  const layer: SequentialLayer = { op: 'fullyConnected', name: undefined, input: undefined, params: { weights, output: { scale: 1, zeroPoint: 0 }, input: undefined } };
  await runLayers([layer], { data: new Int8Array(2), shape: [1, 2] }, { backend: undefined, inputs: { input: { scale: 1, zeroPoint: 0 } } });
  cpuGemm({ ...problem, pipeline: [{ type: 'requantizeFloat32', scale: 0.5, zeroPoint: 0, axis: undefined }] });
  await verifyDevice({ backend: 'cpu', onStart: undefined });
  (await GpuContext.create({ limits: { maxBufferSize: undefined, maxComputeWorkgroupsPerDimension: 65535 } })).destroy();
}
console.log(JSON.stringify({ results: results.map((r) => Array.from(r.data)), npy: Array.from(npy.data as Int16Array), field, multiplier }));
`;

const STRICT = { strict: true, exactOptionalPropertyTypes: true, skipLibCheck: false, noEmitOnError: true, target: 'es2022' };
/** With the DOM library (a browser program), or without it (a Node program, Node's types instead). */
const LIBS = [
  { name: 'lib dom', lib: ['es2022', 'dom'], types: [] as string[] },
  { name: 'no dom', lib: ['es2022'], types: ['node'] },
];
const MODULES = [
  { name: 'nodenext', module: 'nodenext', moduleResolution: 'nodenext' },
  { name: 'bundler', module: 'esnext', moduleResolution: 'bundler' },
];

/** Runs one compiler on one config of the consumer project; a failure says which and what tsc said. */
function tsc(compiler: string, config: string, what = config): void {
  try {
    sh(process.execPath, [compiler, '-p', config], consumer);
  } catch (e) {
    throw new Error(`${what}: ${(e as { stdout?: string }).stdout ?? e}`);
  }
}

describe('a consumer project', () => {
  it('installed TypeScript 7 from the registry', () => {
    for (const c of COMPILERS) expect(sh(process.execPath, [c.tsc, '--version'], consumer).trim()).toMatch(c.version);
  });
  for (const c of COMPILERS) {
    for (const l of LIBS) {
      it(`type-checks under ${c.name}, strict nodenext and bundler, ${l.name}`, () => {
        writeFileSync(join(consumer, 'main.ts'), CONSUMER);
        for (const m of MODULES) {
          const config = `tsconfig.${c.name.replace(/\W/g, '')}.${l.name.replace(/\W/g, '')}.${m.name}.json`;
          const { name: _, ...modules } = m;
          const compilerOptions = { ...STRICT, lib: l.lib, types: l.types, ...modules, noEmit: true };
          writeFileSync(join(consumer, config), JSON.stringify({ compilerOptions, files: ['main.ts'] }));
          tsc(c.tsc, config, `${c.name}, ${l.name}, ${m.name}`);
        }
      });
    }
  }
  it("takes a GPUDevice's type from the program: TypeScript 7's DOM library, or @webgpu/types where the program adds it", () => {
    // Where the program has WebGPU types, GpuContext.device is a GPUDevice with its members (and a
    // GPUDevice passes in); where it has none, the declarations still compile (the tests above).
    writeFileSync(
      join(consumer, 'device.ts'),
      "import type { GpuContext } from 'qgemm-webgpu';\n" +
        'export const use = (ctx: GpuContext, other: GPUDevice): [GPUQueue, GPUDevice] => [ctx.device.queue, other];\n' +
        'export const pass: (device: GPUDevice) => Promise<GpuContext> = (device) => import("qgemm-webgpu").then((q) => q.GpuContext.create({ device }));\n',
    );
    const options = { ...STRICT, module: 'nodenext', moduleResolution: 'nodenext', noEmit: true };
    writeFileSync(
      join(consumer, 'tsconfig.device-dom.json'),
      JSON.stringify({ compilerOptions: { ...options, lib: ['es2022', 'dom'], types: [] }, files: ['device.ts'] }),
    );
    tsc(TSC7, 'tsconfig.device-dom.json', 'TypeScript 7, lib dom');
    mkdirSync(join(consumer, 'node_modules/@webgpu'), { recursive: true });
    const webgpuTypes = join(consumer, 'node_modules/@webgpu/types');
    if (!existsSync(webgpuTypes)) symlinkSync(join(REPO, 'node_modules/@webgpu/types'), webgpuTypes, 'dir');
    writeFileSync(
      join(consumer, 'tsconfig.device-types.json'),
      JSON.stringify({ compilerOptions: { ...options, lib: ['es2022', 'dom'], types: ['@webgpu/types'] }, files: ['device.ts'] }),
    );
    tsc(TSC, 'tsconfig.device-types.json', 'TypeScript 5.9, lib dom and @webgpu/types');
  });
  it('compiles and runs in Node', () => {
    writeFileSync(join(consumer, 'main.ts'), CONSUMER);
    writeFileSync(
      join(consumer, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: { ...STRICT, lib: ['es2022', 'dom'], types: [], module: 'nodenext', moduleResolution: 'nodenext', outDir: 'out' },
        files: ['main.ts'],
      }),
    );
    tsc(TSC7, 'tsconfig.json');
    const out = JSON.parse(sh(process.execPath, ['out/main.js'], consumer));
    const expected = [
      [(1 - 3) * (-1 + 7) + (2 - 3) * (2 + 7) + (3 - 3) * (-3 + 7), (1 - 3) * (4 + 7) + (2 - 3) * (-5 + 7) + (3 - 3) * (6 + 7)],
      [(4 - 3) * (-1 + 7) + (5 - 3) * (2 + 7) + (6 - 3) * (-3 + 7), (4 - 3) * (4 + 7) + (5 - 3) * (-5 + 7) + (6 - 3) * (6 + 7)],
    ].flat();
    expect(out).toEqual({
      results: [expected, expected, expected, expected, expected],
      npy: expected,
      field: 'lhsZeroPoint',
      multiplier: 2 ** 30,
    });
  });
  it('runs the installed qgemm bin', () => {
    expect(sh(join(consumer, 'node_modules/.bin/qgemm'), ['--version'], consumer).trim()).toBe(
      JSON.parse(readFileSync(join(REPO, 'package.json'), 'utf8')).version,
    );
  });
});

/** The fenced blocks of one language in a Markdown file, with the line each starts at. */
function fenced(file: string, lang: string): { line: number; code: string }[] {
  const lines = readFileSync(join(REPO, file), 'utf8').split('\n');
  const blocks: { line: number; code: string }[] = [];
  for (let i = 0; i < lines.length; i++) {
    if (lines[i].trim() !== `\`\`\`${lang}`) continue;
    const start = i + 1;
    while (++i < lines.length && lines[i].trim() !== '```');
    blocks.push({ line: start, code: lines.slice(start, i).join('\n') });
  }
  return blocks;
}

const DOCS = [
  'README.md',
  ...readdirSync(join(REPO, 'docs'))
    .filter((f) => f.endsWith('.md'))
    .map((f) => `docs/${f}`),
];

/** The first cells of the README's API table (the exports and their calls), without explanations in " (...)". */
function apiTable(): string[] {
  const readme = readFileSync(join(REPO, 'README.md'), 'utf8');
  const table = readme.slice(readme.indexOf('### API reference'), readme.indexOf('\n## ', readme.indexOf('### API reference')));
  const rows = table.split('\n').filter((l) => l.startsWith('| `'));
  // A call's own parentheses follow its name; an explanation's follow a space.
  return rows.map((row) => row.split(' | ')[0].replace(/ \((?:[^()]|\([^()]*\))*\)/g, ''));
}

/** A list split at its commas outside brackets and braces: `a, { b, c }` is `a` and `{ b, c }`. */
function splitTopLevel(list: string): string[] {
  const parts = [''];
  let depth = 0;
  for (const c of list) {
    if ('([{'.includes(c)) depth++;
    if (')]}'.includes(c)) depth--;
    if (c === ',' && depth === 0) parts.push('');
    else parts[parts.length - 1] += c;
  }
  return parts.map((p) => p.trim()).filter((p) => p !== '');
}

/** Type-checks one file of the consumer project under strict nodenext; a failure says `what` and what tsc said. */
function typeCheck(name: string, code: string, what: string): void {
  writeFileSync(join(consumer, `${name}.ts`), code);
  writeFileSync(
    join(consumer, `tsconfig.${name}.json`),
    JSON.stringify({
      compilerOptions: { ...STRICT, lib: ['es2022', 'dom'], types: [], module: 'nodenext', moduleResolution: 'nodenext', noEmit: true },
      files: [`${name}.ts`],
    }),
  );
  tsc(TSC, `tsconfig.${name}.json`, what);
}

describe('the docs', () => {
  const snippets = DOCS.flatMap((file) => fenced(file, 'ts').map((b) => ({ ...b, file, name: `${file.replace(/[/.]/g, '_')}_${b.line}` })));
  it('have TypeScript snippets (README.md and docs/tflite.md at least)', () => {
    expect(snippets.filter((s) => s.file === 'README.md').length).toBeGreaterThan(0);
    expect(snippets.filter((s) => s.file === 'docs/tflite.md').length).toBeGreaterThan(0);
  });
  it('every ts snippet type-checks under strict nodenext and bundler (TypeScript 5.9 and 7), and runs in Node', () => {
    const dir = join(consumer, 'snippets');
    mkdirSync(dir, { recursive: true });
    const files = snippets.map((s) => {
      writeFileSync(join(dir, `${s.name}.ts`), `${s.code}\nexport {};\n`);
      return `snippets/${s.name}.ts`;
    });
    const opts = { ...STRICT, lib: ['es2022', 'dom'], types: [], noUnusedLocals: false };
    writeFileSync(
      join(consumer, 'tsconfig.snippets.json'),
      JSON.stringify({
        compilerOptions: { ...opts, module: 'nodenext', moduleResolution: 'nodenext', rootDir: '.', outDir: 'out' },
        files,
      }),
    );
    writeFileSync(
      join(consumer, 'tsconfig.snippets-bundler.json'),
      JSON.stringify({ compilerOptions: { ...opts, module: 'esnext', moduleResolution: 'bundler', noEmit: true }, files }),
    );
    for (const config of ['tsconfig.snippets.json', 'tsconfig.snippets-bundler.json']) {
      tsc(TSC7, config, `TypeScript 7, ${config}`);
      tsc(TSC, config, `TypeScript 5.9, ${config}`);
    }
    for (const s of snippets) {
      try {
        sh(process.execPath, [`out/snippets/${s.name}.js`], consumer);
      } catch (e) {
        throw new Error(`${s.file}:${s.line}: the snippet failed: ${(e as { stderr?: string }).stderr ?? e}`);
      }
    }
  }, 600_000);
  // A link to a file the package does not ship would be dead in node_modules: such a link is the
  // repository's address (package.json's), and the file it names must exist there.
  it("every link of a packaged page reaches a packaged file, or a file of the repository at package.json's address", () => {
    const paths = new Set(packed.files.map((f) => f.path));
    const { url } = JSON.parse(readFileSync(join(REPO, 'package.json'), 'utf8')).repository;
    const blob = `${url.replace(/^git\+/, '').replace(/\.git$/, '')}/blob/main/`;
    const tracked = new Set(execFileSync('git', ['ls-files'], { cwd: REPO, encoding: 'utf8' }).split('\n'));
    const dead: string[] = [];
    for (const page of [...paths].filter((p) => p.endsWith('.md'))) {
      for (const [, target] of readFileSync(join(REPO, page), 'utf8').matchAll(/\]\(([^)#\s]+)(?:#[^)]*)?\)/g)) {
        if (target.startsWith(blob)) {
          if (!tracked.has(target.slice(blob.length))) dead.push(`${page}: ${target} (not in the repository)`);
        } else if (!/^[a-z]+:/.test(target)) {
          const file = posix.normalize(posix.join(posix.dirname(page), target)).replace(/\/$/, '');
          if (!paths.has(file)) dead.push(`${page}: ${target} (not in the package)`);
        }
      }
    }
    expect(dead).toEqual([]);
  });
  it('every json block is strict JSON', () => {
    for (const file of [...DOCS, 'bench/README.md']) {
      for (const b of fenced(file, 'json')) {
        expect(() => JSON.parse(b.code), `${file}:${b.line}`).not.toThrow();
      }
    }
  });
  it("every function, class and error the README's API table names is an export of the package", () => {
    const names = new Set<string>();
    for (const first of apiTable()) {
      for (const m of first.matchAll(/`([A-Za-z]+)(?:\.[A-Za-z]+)?(?:\(|`)/g)) names.add(m[1]);
    }
    const imported = [...names];
    expect(imported.length).toBeGreaterThan(20);
    typeCheck(
      'api-table',
      `import type { ${imported.join(', ')} } from 'qgemm-webgpu';\nexport {};\n`,
      'the API table names what the package does not export',
    );
  });
  it("every call the README's API table writes matches the declarations: parameters, optional ones, option keys", () => {
    // `f(a, b?, c = 1, { d?, e })`: f takes exactly these parameters, b and c optional, the fourth's type
    // has d (optional) and e (required). Each check is a type that is 'ok' or the message tsc prints.
    const calls = apiTable().flatMap((first) => [...first.matchAll(/`([A-Za-z]+(?:\.[A-Za-z]+)?)\(([^`]*)\)`/g)]);
    expect(calls.length).toBeGreaterThan(15);
    const checks: string[] = [];
    const check = (actual: string, expected: number | boolean, message: string) =>
      checks.push(`const check${checks.length}: Check<${actual}, ${expected}, ${JSON.stringify(message)}> = 'ok';`);
    calls.forEach(([call, name, list], i) => {
      const params = splitTopLevel(list);
      checks.push(`type F${i} = typeof ${name};`);
      check(
        `Required<Parameters<F${i}>>['length']`,
        params.length,
        `README ${call}: the code does not take exactly ${params.length} parameters`,
      );
      params.forEach((param, j) => {
        const [written, fallback] = param.split(' = ');
        const optional = fallback !== undefined || written.endsWith('?');
        const at = `README ${call}: parameter ${j + 1} (${written})`;
        check(`Optional<Parameters<F${i}>, '${j}'>`, optional, `${at} is ${optional ? 'required' : 'optional'} in the code, or absent`);
        const keys = written.startsWith('{') ? splitTopLevel(written.slice(1, -1)) : [];
        for (const key of keys) {
          const k = key.replace(/\?$/, '');
          const why = `${key.endsWith('?') ? 'required' : 'optional'} in the code, or absent`;
          check(`Optional<NonNullable<Parameters<F${i}>[${j}]>, '${k}'>`, key.endsWith('?'), `${at}: ${k} is ${why}`);
        }
      });
    });
    const imported = [...new Set(calls.map((c) => c[1].split('.')[0]))];
    const code = [
      `import type { ${imported.join(', ')} } from 'qgemm-webgpu';`,
      "type Check<Actual, Expected, Message extends string> = [Actual] extends [Expected] ? 'ok' : Message;",
      "/** Whether key K of T (an object's property, a tuple's element) is optional; 'missing' where T has none. */",
      "type Optional<T, K extends PropertyKey> = K extends keyof T ? ({} extends Pick<T, K> ? true : false) : 'missing';",
      ...checks,
      'export {};',
    ];
    typeCheck('api-signatures', `${code.join('\n')}\n`, 'the API table writes calls that the declarations do not match');
  });
});
