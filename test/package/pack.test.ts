// The published package as a consumer gets it: `npm pack` (scripts off, so it packs what `npm run
// build` made), the file list checked against the runtime set (no benchmark, no demo, no sources,
// whatever else is in dist/) and its size, then the tarball installed into a fresh temp project
// (cache first; the package's only dependency is @webgpu/types), a consumer file type-checked with the
// repository's TypeScript under strict `nodenext` and `bundler` settings (skipLibCheck off), compiled
// and run in Node against both entries ('qgemm-webgpu' and 'qgemm-webgpu/cpu') and the `qgemm` bin.
// The docs are code too: every ```ts snippet of README.md and docs/*.md is type-checked the same way
// (strict, nodenext and bundler) against the installed package and run in Node (Dawn's `webgpu` linked
// in from the repository, so GpuContext snippets run on SwiftShader); every ```json block parses as
// strict JSON; every export the README's API table names is imported by name, and every call it writes,
// `f(a, b?, c = 1, { d?, e })`, is checked against the declarations: its parameters, which are optional,
// the option keys.

import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newest } from '../browser/freshness.ts';

const REPO = join(import.meta.dirname, '../..');
const TSC = join(REPO, 'node_modules/typescript/bin/tsc');
const work = mkdtempSync(join(tmpdir(), 'qgemm-pack-'));
const consumer = join(work, 'consumer');
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
  sh('npm', ['install', '--prefer-offline', '--no-audit', '--no-fund', '--no-save', join(work, packed.filename)], consumer);
}, 600_000);

describe('the packed file list', () => {
  it('is the runtime alone: bin, dist/node entries and chunks, browser bundles, declarations, docs', () => {
    const paths = packed.files.map((f) => f.path);
    const allowed = [
      /^bin\/qgemm\.mjs$/,
      /^dist\/node\/(index|cpu|cli|launch)\.js$/,
      /^dist\/node\/chunks\/[\w-]+\.js$/,
      /^dist\/browser\/(qgemm|cpu)\.js$/,
      /^dist\/types\/[\w/.-]+\.d\.ts$/,
      /^(package\.json|README\.md|LICENSE|CHANGELOG\.md)$/,
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
    ]) {
      expect(paths).toContain(p);
    }
  });
  // The budget guards against shipping what is not the library (the benchmark bundle made it 6.1 MB);
  // the library itself is about 1.65 MB unpacked, 403 kB packed (2026-11-25: with the layers, verify and
  // the 4-bit CPU kernel), so the bounds leave room for growth, not for a second bundle.
  it('is small (was 6.1 MB installed with the benchmark bundle)', () => {
    expect(packed.unpackedSize).toBeLessThan(2e6);
    expect(packed.size).toBeLessThan(500e3);
  });
  it('installs no runtime dependency but the types it names (wgsl_reflect is inlined)', () => {
    const pkg = JSON.parse(readFileSync(join(REPO, 'package.json'), 'utf8'));
    expect(Object.keys(pkg.dependencies ?? {})).toEqual(['@webgpu/types']);
    expect(existsSync(join(consumer, 'node_modules/wgsl_reflect'))).toBe(false);
  });
  it('the CPU-only browser entry is a tenth of the full one, without GPU code', () => {
    const cpu = readFileSync(join(REPO, 'dist/browser/cpu.js'), 'utf8');
    expect(cpu.length).toBeLessThan(readFileSync(join(REPO, 'dist/browser/qgemm.js'), 'utf8').length / 5);
    expect(cpu).not.toMatch(/requestAdapter|WgslReflect|createComputePipeline/);
  });
});

const CONSUMER = `
import { cpuGemm, gemm, referenceGemm, InputError, quantizeMultiplier, type GemmProblem, type GemmResult } from 'qgemm-webgpu';
import { cpuGemm as cpuOnly, parseNpy, serializeNpy } from 'qgemm-webgpu/cpu';

const problem: GemmProblem = {
  lhs: { data: Uint8Array.from([1, 2, 3, 4, 5, 6]), rows: 2, cols: 3, order: 'row-major' },
  rhs: { data: Int8Array.from([-1, 2, -3, 4, -5, 6]), rows: 3, cols: 2, order: 'col-major' },
  lhsZeroPoint: 3,
  rhsZeroPoint: -7,
  pipeline: [{ type: 'saturatingCast', to: 'int16' }],
};
const results: GemmResult[] = [cpuGemm(problem), referenceGemm(problem), cpuOnly(problem), await gemm(problem, { backend: 'cpu' })];
const npy = parseNpy(serializeNpy({ dtype: 'int16', shape: [2, 2], fortranOrder: false, data: results[0].data as Int16Array }));
let field = '';
try {
  cpuGemm({ ...problem, lhsZeroPoint: 2 ** 40 });
} catch (e) {
  if (e instanceof InputError) field = e.field;
}
const { multiplier } = quantizeMultiplier(0.5);
console.log(JSON.stringify({ results: results.map((r) => Array.from(r.data)), npy: Array.from(npy.data as Int16Array), field, multiplier }));
`;

const STRICT = { strict: true, skipLibCheck: false, noEmitOnError: true, target: 'es2022', lib: ['es2022', 'dom'], types: [] as string[] };

describe('a consumer project', () => {
  it('type-checks under strict nodenext, compiles and runs in Node', () => {
    writeFileSync(join(consumer, 'main.ts'), CONSUMER);
    writeFileSync(
      join(consumer, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: { ...STRICT, module: 'nodenext', moduleResolution: 'nodenext', outDir: 'out' },
        files: ['main.ts'],
      }),
    );
    sh(process.execPath, [TSC, '-p', 'tsconfig.json'], consumer);
    const out = JSON.parse(sh(process.execPath, ['out/main.js'], consumer));
    const expected = [
      [(1 - 3) * (-1 + 7) + (2 - 3) * (2 + 7) + (3 - 3) * (-3 + 7), (1 - 3) * (4 + 7) + (2 - 3) * (-5 + 7) + (3 - 3) * (6 + 7)],
      [(4 - 3) * (-1 + 7) + (5 - 3) * (2 + 7) + (6 - 3) * (-3 + 7), (4 - 3) * (4 + 7) + (5 - 3) * (-5 + 7) + (6 - 3) * (6 + 7)],
    ].flat();
    expect(out).toEqual({ results: [expected, expected, expected, expected], npy: expected, field: 'lhsZeroPoint', multiplier: 2 ** 30 });
  });
  it('type-checks under strict bundler resolution', () => {
    writeFileSync(
      join(consumer, 'tsconfig.bundler.json'),
      JSON.stringify({ compilerOptions: { ...STRICT, module: 'esnext', moduleResolution: 'bundler', noEmit: true }, files: ['main.ts'] }),
    );
    sh(process.execPath, [TSC, '-p', 'tsconfig.bundler.json'], consumer);
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
      compilerOptions: { ...STRICT, module: 'nodenext', moduleResolution: 'nodenext', noEmit: true },
      files: [`${name}.ts`],
    }),
  );
  try {
    sh(process.execPath, [TSC, '-p', `tsconfig.${name}.json`], consumer);
  } catch (e) {
    throw new Error(`${what}: ${(e as { stdout?: string }).stdout ?? e}`);
  }
}

describe('the docs', () => {
  const snippets = DOCS.flatMap((file) => fenced(file, 'ts').map((b) => ({ ...b, file, name: `${file.replace(/[/.]/g, '_')}_${b.line}` })));
  it('have TypeScript snippets (README.md and docs/tflite.md at least)', () => {
    expect(snippets.filter((s) => s.file === 'README.md').length).toBeGreaterThan(0);
    expect(snippets.filter((s) => s.file === 'docs/tflite.md').length).toBeGreaterThan(0);
  });
  it('every ts snippet type-checks under strict nodenext and bundler, and runs in Node', () => {
    const dir = join(consumer, 'snippets');
    mkdirSync(dir, { recursive: true });
    const webgpu = join(consumer, 'node_modules/webgpu');
    if (!existsSync(webgpu)) symlinkSync(join(REPO, 'node_modules/webgpu'), webgpu, 'dir');
    const files = snippets.map((s) => {
      writeFileSync(join(dir, `${s.name}.ts`), `${s.code}\nexport {};\n`);
      return `snippets/${s.name}.ts`;
    });
    const opts = { ...STRICT, noUnusedLocals: false };
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
      try {
        sh(process.execPath, [TSC, '-p', config], consumer);
      } catch (e) {
        throw new Error(`${config}: ${(e as { stdout?: string }).stdout ?? e}`);
      }
    }
    for (const s of snippets) {
      try {
        sh(process.execPath, [`out/snippets/${s.name}.js`], consumer);
      } catch (e) {
        throw new Error(`${s.file}:${s.line}: the snippet failed: ${(e as { stderr?: string }).stderr ?? e}`);
      }
    }
  }, 600_000);
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
