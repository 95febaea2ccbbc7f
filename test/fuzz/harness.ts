// The project's own fuzz harness of the bad-input contract (`npm run fuzz`; a seeded smoke runs in
// test/fuzz/fuzz.test.ts): fast-check generates bad inputs by category, runs each through the CLI's
// `main` in-process (`qgemm run SPEC`, before and instead of any pack -> gemm -> output) or through the
// library, and checks the properties every bad input must keep:
//   CLI: exit code 2, exactly one stderr line `qgemm: error: FIELD: ...` (cut, no stack), the old `out`
//   file untouched (content hash, inode, mode), no temporary file left, within a time bound;
//   library: an InputError naming a field, always a rejection (never a synchronous throw).
// Every generated case is bad by construction (a strict prefix of a JSON object, a value outside its
// range...), so a clean run has no exceptions to excuse. Layers and graphs (./layer-cases.ts,
// ./layer-run.ts): each case also names the field its error must name, as the caller wrote it.
// Backends: 'cpu', 'webgpu' (an adapter, SwiftShader included) and 'no-adapter' (`--backend webgpu`
// where no Dawn can load, so that whatever asks for a device fails: bad input must be refused first);
// no-adapter runs before webgpu, whose context would otherwise be reused.

import { createHash } from 'node:crypto';
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { elementwise, gemm } from '../../src/api.ts';
import { main } from '../../src/cli/main.ts';
import { InputError } from '../../src/errors.ts';
import { serializeNpy } from '../../src/io/npy.ts';
import { arbGraphCase, arbLayerCase, type GraphCase, type LayerCase, namesField } from './layer-cases.ts';
import { graphSpec, layerSpec, releaseLayerFuzz, runGraphLibraryCase, runLayerLibraryCase } from './layer-run.ts';

export const CATEGORIES = [
  'npy-header',
  'zero-point',
  'stage',
  'bit-depth',
  'json',
  'path',
  'flag',
  'library',
  'layer',
  'layer-spec',
  'graph',
  'graph-spec',
] as const;
export type Category = (typeof CATEGORIES)[number];
/** The categories of layers and graphs (./layer-cases.ts). */
const LAYER_CATEGORIES = new Set<Category>(['layer', 'layer-spec', 'graph', 'graph-spec']);

/** What one CLI case sets up: the spec (an object patched over a valid one, or raw text), files, extra flags. */
interface CliCase {
  patch?: Record<string, unknown>;
  text?: string;
  files?: Record<string, Uint8Array | string>;
  flags?: string[];
  /** The fields the error line may name (or a part of one); any field where absent. */
  expect?: string[];
}

const A = () => serializeNpy({ dtype: 'uint8', shape: [2, 3], fortranOrder: false, data: Uint8Array.of(1, 2, 3, 4, 5, 6) });
const B = () => serializeNpy({ dtype: 'uint8', shape: [3, 4], fortranOrder: false, data: Uint8Array.from({ length: 12 }, (_, i) => i) });

/** A version 1.0 .npy file with this header text (padded) and data. */
function rawNpy(header: string, data: Uint8Array): Uint8Array {
  const pad = (64 - ((10 + header.length + 1) % 64)) % 64;
  const h = Buffer.from(`${header}${' '.repeat(pad)}\n`, 'latin1');
  return Uint8Array.from([0x93, 0x4e, 0x55, 0x4d, 0x50, 0x59, 1, 0, h.length & 0xff, h.length >> 8, ...h, ...data]);
}

/** A valid spec's text: every strict prefix of it is bad JSON. */
const VALID_SPEC = JSON.stringify({ op: 'gemm', lhs: 'A.npy', rhs: 'B.npy', out: 'C.npy' });

const notInt32 = fc.oneof(
  fc.double({ noDefaultInfinity: false }).filter((x) => !Number.isInteger(x)),
  fc.integer({ min: 2 ** 31, max: 2 ** 40 }),
  fc.integer({ min: -(2 ** 40), max: -(2 ** 31) - 1 }),
  fc.string({ maxLength: 300 }),
  fc.boolean(),
  fc.constant(null),
  fc.dictionary(fc.string({ maxLength: 5 }), fc.integer(), { maxKeys: 3 }),
);

const arbCli: Record<Exclude<Category, 'library' | 'layer' | 'graph' | 'layer-spec' | 'graph-spec'>, fc.Arbitrary<CliCase>> = {
  'npy-header': fc.oneof(
    fc
      .record({
        descr: fc.constantFrom("'<f4'", "'|b1'", "'<i8'", "'|u2'", "'xx'", '3', "'|u1"),
        shape: fc.constantFrom('(2, 3)', '(2,)', '(-2, 3)', '(2, 3, 1)', "('a', 3)", '(99999999999, 3)', '(2, 3'),
        order: fc.constantFrom('False', 'True', 'None', '1', 'maybe'),
      })
      .map((h) => ({
        files: { 'A.npy': rawNpy(`{'descr': ${h.descr}, 'fortran_order': ${h.order}, 'shape': ${h.shape}, }`, new Uint8Array(6)) },
      })),
    fc.string({ maxLength: 200 }).map((s) => ({ files: { 'A.npy': rawNpy(s, new Uint8Array(6)) } })),
    fc.uint8Array({ maxLength: 200 }).map((bytes) => ({ files: { 'A.npy': bytes } })),
    fc.integer({ min: 0, max: A().length - 1 }).map((n) => ({ files: { 'A.npy': A().subarray(0, n) } })),
    fc.integer({ min: 1, max: 64 }).map((n) => ({ files: { 'A.npy': Uint8Array.from([...A(), ...new Uint8Array(n)]) } })),
  ),
  'zero-point': fc
    .record({ field: fc.constantFrom('lhsZeroPoint', 'rhsZeroPoint'), value: notInt32 })
    .map(({ field, value }) => ({ patch: { [field]: value } })),
  stage: fc.oneof(
    fc
      .string({ maxLength: 200 })
      .filter((t) => !['quantizeDownInt32ByFixedPoint', 'saturatingCast', 'clamp', 'tanh', 'bias', 'truncatingCast'].includes(t))
      .map((type) => ({ patch: { pipeline: [{ type }] } })),
    notInt32.map((shift) => ({ patch: { pipeline: [{ type: 'quantizeDownInt32ByFixedPoint', multiplier: 1 << 30, shift, offset: 0 }] } })),
    notInt32.map((min) => ({ patch: { pipeline: [{ type: 'clamp', min, max: 10 }] } })),
    fc.constantFrom<unknown>(3, 'x', null, {}, [[1]]).map((pipeline) => ({ patch: { pipeline } })),
    fc
      .string({ maxLength: 30 })
      .filter((t) => !['uint8', 'int8', 'int16'].includes(t))
      .map((to) => ({ patch: { pipeline: [{ type: 'saturatingCast', to }] } })),
  ),
  'bit-depth': fc.oneof(
    fc
      .record({
        lhs: fc.oneof(
          fc.integer({ min: -5, max: 0 }),
          fc.integer({ min: 9, max: 64 }),
          fc.double().filter((x) => !Number.isInteger(x)),
        ),
        rhs: fc.integer({ min: 1, max: 8 }),
      })
      .map((b) => ({ patch: { bitDepth: b } })),
    fc
      .string({ maxLength: 40 })
      .filter((r) => !['nearest', 'probabilistic-addmod', 'probabilistic-xorshift', 'default'].includes(r))
      .map((rounding) => ({ patch: { bitDepth: { lhs: 4, rhs: 4, rounding } } })),
    fc.constantFrom<unknown>(8, 'x', null, [4, 4]).map((bitDepth) => ({ patch: { bitDepth } })),
  ),
  json: fc.oneof(
    fc.integer({ min: 0, max: VALID_SPEC.length - 1 }).map((n) => ({ text: VALID_SPEC.slice(0, n) })), // a strict prefix
    fc
      .constantFrom('gemm', 'lhs', 'out', 'op')
      .map((k) => ({ text: `{"op":"gemm","lhs":"A.npy","rhs":"B.npy","out":"C.npy","${k}":"x"}` })),
    fc.integer({ min: 33, max: 5000 }).map((d) => ({ text: `${'['.repeat(d)}${']'.repeat(d)}` })),
    fc.constantFrom('[]', '3', 'null', '"x"', '{"op":"gemm"}', '{"op":"frobnicate"}').map((text) => ({ text })),
  ),
  path: fc.oneof(
    fc.constantFrom('lhs', 'rhs', 'out').chain((field) =>
      fc
        .constantFrom('../A.npy', 'A.npy/', 'nowhere/x.npy', 'x\0.npy', '', `${'x'.repeat(300)}.npy`, 'sub', '/dev/zero', 'missing.npy')
        .filter((p) => !(field === 'out' && p === 'missing.npy'))
        .map((p) => ({ patch: { [field]: p } })),
    ),
    fc.constantFrom('lhs', 'rhs').map((field) => ({ patch: { out: field === 'lhs' ? 'A.npy' : 'B.npy' } })),
    fc.constantFrom(3, null, true, ['A.npy']).map((p) => ({ patch: { lhs: p } })),
  ),
  flag: fc.oneof(
    fc
      .string({ maxLength: 20 })
      .filter((b) => !['auto', 'cpu', 'webgpu'].includes(b))
      .map((b) => ({ flags: ['--backend', b] })),
    fc.constantFrom('x', '-1', '0', '1.5Q', 'G', '99999999999999999999G', '').map((m) => ({ flags: ['--max-memory', m] })),
    fc.constantFrom('--frobnicate', '--lhs', '-x', '--allow-outside=3').map((f) => ({ flags: [f] })),
  ),
};

const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');

export interface Outcome {
  clean: boolean;
  why?: string;
}

/** Runs one CLI case in a fresh folder with an old C.npy (mode 0640) and checks every property. */
export async function runCliCase(root: string, n: number, c: CliCase, backend: string, timeBoundMs: number): Promise<Outcome> {
  const dir = join(root, `case${n}`);
  mkdirSync(join(dir, 'sub'), { recursive: true });
  for (const [name, content] of Object.entries({ 'A.npy': A(), 'B.npy': B(), ...c.files })) writeFileSync(join(dir, name), content);
  const out = join(dir, 'C.npy');
  writeFileSync(out, 'old result\n');
  chmodSync(out, 0o640);
  const before = statSync(out);
  const hash = sha(readFileSync(out));
  const spec = join(dir, 'spec.json');
  writeFileSync(spec, c.text ?? JSON.stringify({ op: 'gemm', lhs: 'A.npy', rhs: 'B.npy', out: 'C.npy', ...c.patch }));
  let err = '';
  const t0 = performance.now();
  let code: number;
  try {
    code = await main(['run', spec, '--backend', backend, ...(c.flags ?? [])], { out: () => undefined, err: (t) => void (err += t) });
  } catch (e) {
    return { clean: false, why: `main threw ${String(e).slice(0, 200)}` };
  }
  const ms = performance.now() - t0;
  const lines = err.split('\n');
  const after = statSync(out, { throwIfNoEntry: false });
  const temps = readdirSync(dir).filter((f) => f.includes('.tmp-'));
  const why =
    code !== 2
      ? `exit ${code}: ${err.slice(0, 200)}`
      : lines.length !== 2 || lines[1] !== ''
        ? `stderr is not one line: ${JSON.stringify(err.slice(0, 300))}`
        : !/^qgemm: error: \S+: \S/.test(lines[0]) || lines[0].length > 1100 || /^\s+at /m.test(err)
          ? `bad error line: ${JSON.stringify(lines[0].slice(0, 300))}`
          : c.expect && !namesField(/^qgemm: error: (\S+): /.exec(lines[0])![1], c.expect)
            ? `named the wrong field (want ${c.expect.join(' or ')}): ${JSON.stringify(lines[0].slice(0, 300))}`
            : !after || after.ino !== before.ino || after.mode !== before.mode || sha(readFileSync(out)) !== hash
              ? 'out was touched'
              : temps.length
                ? `temporary files left: ${temps.join(', ')}`
                : ms > timeBoundMs
                  ? `took ${ms.toFixed(0)} ms (bound ${timeBoundMs} ms)`
                  : undefined;
  rmSync(dir, { recursive: true, force: true });
  return why ? { clean: false, why } : { clean: true };
}

/** Library misuse: a bad problem or options through gemm/elementwise must reject with an InputError. */
const arbLibrary = fc.oneof(
  fc.anything().map((problem) => ({ entry: 'gemm' as const, problem, options: { backend: 'cpu' } as unknown })),
  fc.anything().map((problem) => ({ entry: 'elementwise' as const, problem, options: { backend: 'cpu' } as unknown })),
  fc
    .oneof(
      fc.string({ maxLength: 20 }).filter((b) => !['auto', 'cpu', 'webgpu'].includes(b)),
      fc.integer(),
      fc.constant(null),
    )
    .map((backend) => ({
      entry: 'gemm' as const,
      problem: { lhs: { data: new Uint8Array(2), rows: 1, cols: 2 }, rhs: { data: new Uint8Array(2), rows: 2, cols: 1 } } as unknown,
      options: { backend } as unknown,
    })),
  // null is an absent zero point to the library (as undefined), unlike in a JSON spec
  notInt32
    .filter((zp) => zp !== null)
    .map((zp) => ({
      entry: 'gemm' as const,
      problem: {
        lhs: { data: new Uint8Array(2), rows: 1, cols: 2 },
        rhs: { data: new Uint8Array(2), rows: 2, cols: 1 },
        lhsZeroPoint: zp,
      } as unknown,
      options: { backend: 'cpu' } as unknown,
    })),
);

export async function runLibraryCase(c: { entry: 'gemm' | 'elementwise'; problem: unknown; options: unknown }): Promise<Outcome> {
  let p: Promise<unknown>;
  try {
    p = c.entry === 'gemm' ? gemm(c.problem as never, c.options as never) : elementwise(c.problem as never, c.options as never);
  } catch (e) {
    return { clean: false, why: `threw synchronously: ${String(e).slice(0, 200)}` };
  }
  try {
    await p;
    return { clean: false, why: 'resolved' };
  } catch (e) {
    if (e instanceof InputError && e.field && e.message.length < 1100) return { clean: true };
    return { clean: false, why: `${(e as Error)?.name}: ${String((e as Error)?.message).slice(0, 200)}` };
  }
}

export interface FuzzReport {
  rows: { category: Category; backend: string; cases: number; clean: number; failures: string[] }[];
}

/** The generator of `category` on `backend`. */
function arbitrary(category: Category, backend: string): fc.Arbitrary<unknown> {
  const webgpu = backend !== 'cpu';
  if (category === 'library') return arbLibrary;
  if (category === 'layer') return arbLayerCase(true);
  if (category === 'layer-spec') return arbLayerCase(false).map(layerSpec);
  if (category === 'graph') return arbGraphCase(true, backend === 'webgpu');
  if (category === 'graph-spec') return arbGraphCase(false, webgpu).map(graphSpec);
  return arbCli[category];
}

/** Runs one case of `category` on `backend` ('no-adapter' runs as webgpu, the environment set by runFuzz). */
function runCase(root: string, n: number, category: Category, s: unknown, backend: string, timeBoundMs: number): Promise<Outcome> {
  if (category === 'library') return runLibraryCase(s as never);
  if (category === 'layer') return runLayerLibraryCase(s as LayerCase, backend);
  if (category === 'graph') return runGraphLibraryCase(s as GraphCase, backend);
  return runCliCase(root, n, s as CliCase, backend === 'no-adapter' ? 'webgpu' : backend, timeBoundMs);
}

/** Runs `perCategory` generated cases of every category on every backend (library misuse: once). */
export async function runFuzz(opts: { seed: number; perCategory: number; backends: string[]; timeBoundMs: number }): Promise<FuzzReport> {
  const root = mkdtempSync(join(tmpdir(), 'qgemm-fuzz-'));
  const rows: FuzzReport['rows'] = [];
  const order = ['cpu', 'no-adapter', 'webgpu'];
  const backends = [...opts.backends].sort((a, b) => order.indexOf(a) - order.indexOf(b));
  const savedDawn = process.env.QGEMM_DAWN_NODE;
  let n = 0;
  try {
    for (const backend of backends) {
      // No Dawn can load: any attempt at a device is a NoAdapterError.
      if (backend === 'no-adapter') process.env.QGEMM_DAWN_NODE = '/nonexistent/dawn.node';
      else if (savedDawn === undefined) delete process.env.QGEMM_DAWN_NODE;
      else process.env.QGEMM_DAWN_NODE = savedDawn;
      for (const category of CATEGORIES) {
        if (category === 'library' && backend !== backends[0]) continue;
        const row = { category, backend: category === 'library' ? 'library' : backend, cases: 0, clean: 0, failures: [] as string[] };
        const arb = arbitrary(category, backend);
        const seed = opts.seed + CATEGORIES.indexOf(category);
        const samples = fc.sample(arb, { seed, numRuns: opts.perCategory });
        for (const s of samples) {
          const o = await runCase(root, n++, category, s, backend, opts.timeBoundMs);
          row.cases++;
          if (o.clean) row.clean++;
          else if (row.failures.length < 5) row.failures.push(`${o.why} <- ${safeJson(s)}`);
        }
        if (row.clean !== row.cases && !LAYER_CATEGORIES.has(category)) {
          // Shrink: fast-check's own run over the same seed reports the smallest failing input it finds
          // (a layer or graph case is one spoiled parameter already).
          const property = fc.asyncProperty(arb, async (s) => (await runCase(root, n++, category, s, backend, opts.timeBoundMs)).clean);
          const shrunk = await fc.check(property, { seed, numRuns: opts.perCategory });
          if (shrunk.failed) row.failures.push(`shrunk: ${safeJson(shrunk.counterexample?.[0])}`);
        }
        rows.push(row);
      }
    }
  } finally {
    if (savedDawn === undefined) delete process.env.QGEMM_DAWN_NODE;
    else process.env.QGEMM_DAWN_NODE = savedDawn;
    await releaseLayerFuzz();
    rmSync(root, { recursive: true, force: true });
  }
  return { rows };
}

function safeJson(v: unknown): string {
  try {
    return JSON.stringify(v, (_, x) => (typeof x === 'bigint' ? `${x}n` : ArrayBuffer.isView(x) ? `<${x.constructor.name}>` : x)).slice(
      0,
      300,
    );
  } catch {
    return String(v).slice(0, 300);
  }
}

/** The table of the closing note: category | backend | cases | clean. */
export function formatReport(r: FuzzReport): string {
  const lines = ['category | backend | cases | clean', '--- | --- | --- | ---'];
  for (const row of r.rows) lines.push(`${row.category} | ${row.backend} | ${row.cases} | ${row.clean}`);
  for (const row of r.rows) for (const f of row.failures) lines.push(`UNCLEAN ${row.category}/${row.backend}: ${f}`);
  return lines.join('\n');
}
