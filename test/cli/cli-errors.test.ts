// The CLI's bad-input contract (README "The CLI"): every bad input exits with code 2, prints
// exactly one line on stderr of the form `qgemm: error: FIELD: ...` naming the offending field, shows no
// stack trace, and leaves no output file behind (neither the out path nor a `*.tmp-*` file next to it);
// an output file that already existed is left untouched. Most cases call `main` in-process with
// process.stderr.write captured; three go through the real `bin/qgemm.mjs` (building dist/ if needed).

import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { main } from '../../src/cli/main.ts';
import { serializeNpy, type NpyArray, type NpyData, type NpyDtype } from '../../src/io/npy.ts';

const REPO = resolve(import.meta.dirname, '../..');
const root = mkdtempSync(join(tmpdir(), 'qgemm-cli-errors-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

// ------------------------------------------------------------------ fixtures

function npy(dtype: NpyDtype, shape: number[], data: NpyData, fortranOrder = false): Uint8Array {
  return serializeNpy({ dtype, shape, fortranOrder, data } as NpyArray);
}

const M = 2;
const K = 3;
const N = 4;
/** Valid operands: A uint8 [M,K], B uint8 [K,N]. */
const A = () =>
  npy(
    'uint8',
    [M, K],
    Uint8Array.from({ length: M * K }, (_, i) => i + 1),
  );
const B = () =>
  npy(
    'uint8',
    [K, N],
    Uint8Array.from({ length: K * N }, (_, i) => 2 * i + 1),
  );

let caseNo = 0;
/** A fresh folder holding A.npy, B.npy and any extra files. */
function freshDir(files: Record<string, Uint8Array | string | null> = {}): string {
  const dir = join(root, `c${caseNo++}`);
  mkdirSync(dir, { recursive: true });
  const all: Record<string, Uint8Array | string | null> = { 'A.npy': A(), 'B.npy': B(), ...files };
  for (const [name, content] of Object.entries(all)) {
    if (content !== null) writeFileSync(join(dir, name), content);
  }
  return dir;
}

type Spec = Record<string, unknown>;
const baseSpec = (): Spec => ({ op: 'gemm', lhs: 'A.npy', rhs: 'B.npy', out: 'C.npy' });

/** Writes spec.json (base spec + `patch`; a key patched to undefined is removed) and the files. */
function writeSpec(patch: Spec, files: Record<string, Uint8Array | string | null> = {}): { dir: string; specPath: string; out: string } {
  const dir = freshDir(files);
  const spec = { ...baseSpec(), ...patch };
  const specPath = join(dir, 'spec.json');
  writeFileSync(specPath, JSON.stringify(spec, null, 2));
  return { dir, specPath, out: join(dir, 'C.npy') };
}

// ------------------------------------------------------------------ stderr capture

let stderr: string[] = [];
let stdout: string[] = [];
beforeEach(() => {
  stderr = [];
  stdout = [];
  const capture = (sink: string[]) =>
    ((chunk: string | Uint8Array) => {
      sink.push(typeof chunk === 'string' ? chunk : Buffer.from(chunk).toString('utf8'));
      return true;
    }) as typeof process.stderr.write;
  vi.spyOn(process.stderr, 'write').mockImplementation(capture(stderr));
  vi.spyOn(process.stdout, 'write').mockImplementation(capture(stdout));
});
afterEach(() => {
  vi.restoreAllMocks();
});

const escapeRe = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/**
 * Asserts the contract on one captured run: exit 2, one stderr line `qgemm: error: FIELD...: message`
 * (FIELD may be followed by an index such as `[3]`), no stack trace, no output file, no temp file.
 */
function expectBadInput(code: number, text: string, field: string, dir: string, out: string): void {
  const lines = text.split('\n');
  expect(lines.at(-1), `stderr must end with a newline: ${JSON.stringify(text)}`).toBe('');
  lines.pop();
  expect(lines, `stderr must be exactly one line, got ${JSON.stringify(text)}`).toHaveLength(1);
  const line = lines[0];
  expect(line).toMatch(new RegExp(`^qgemm: error: ${escapeRe(field)}(\\[\\d+\\])?: \\S`));
  expect(text).not.toMatch(/^\s+at /m);
  expect(code, `exit code (stderr: ${line})`).toBe(2);
  expect(existsSync(out), `output file ${out} must not exist`).toBe(false);
  expect(readdirSync(dir).filter((f) => f.includes('.tmp-'))).toEqual([]);
}

async function runSpec(patch: Spec, field: string, files: Record<string, Uint8Array | string | null> = {}): Promise<void> {
  const { dir, specPath, out } = writeSpec(patch, files);
  const code = await main(['run', specPath, '--backend', 'cpu']);
  expectBadInput(code, stderr.join(''), field, dir, out);
}

const stage = (s: Spec) => ({ pipeline: [s] });
const fixedPoint = (patch: Spec = {}) => ({
  type: 'quantizeDownInt32ByFixedPoint',
  multiplier: 1 << 30,
  shift: 3,
  offsetAfterShift: 10,
  ...patch,
});
const legacy = (patch: Spec = {}) => ({ type: 'quantizeDownInt32ToUint8Scale', offset: 5, multiplier: 3, shift: 4, ...patch });
const scale = (patch: Spec = {}) => ({
  type: 'scaleInt32ByFixedPointAndExponent',
  multiplier: 1 << 30,
  exponent: -2,
  offsetAfterShift: 0,
  rounding: 'double',
  ...patch,
});

// A sanity check that the fixtures are valid, so the failures below come from the one thing each changes.
describe('fixtures', () => {
  it('the base spec runs and writes C.npy with no temp file', async () => {
    const { dir, specPath, out } = writeSpec({
      pipeline: [
        { type: 'bias', axis: 'col', values: [1, 2, 3, 4] },
        legacy(),
        fixedPoint(),
        scale(),
        scale({ rounding: 'single', exponent: 30 }),
        { type: 'clamp', min: -5, max: 1000 },
        { type: 'tanh', realZeroAsInt32: 0, realAmplitudeAsInt32: 100 },
        { type: 'saturatingCast', to: 'uint8' },
      ],
    });
    const code = await main(['run', specPath, '--backend', 'cpu']);
    expect(stderr.join('')).toBe('');
    expect(code).toBe(0);
    expect(existsSync(out)).toBe(true);
    expect(readdirSync(dir).filter((f) => f.includes('.tmp-'))).toEqual([]);
  });
});

// ------------------------------------------------------------------ operands

describe('bad operands', () => {
  it('shape mismatch (lhs cols != rhs rows) names rhs', async () => {
    await runSpec({}, 'rhs', { 'B.npy': npy('uint8', [K + 1, N], new Uint8Array((K + 1) * N)) });
  });
  it('float32 lhs names lhs', async () => {
    await runSpec({}, 'lhs', { 'A.npy': npy('float32', [M, K], new Float32Array(M * K)) });
  });
  it('int16 rhs names rhs', async () => {
    await runSpec({}, 'rhs', { 'B.npy': npy('int16', [K, N], new Int16Array(K * N)) });
  });
  it('int32 lhs names lhs', async () => {
    await runSpec({}, 'lhs', { 'A.npy': npy('int32', [M, K], new Int32Array(M * K)) });
  });
  it('1-D lhs names lhs', async () => {
    await runSpec({}, 'lhs', { 'A.npy': npy('uint8', [K], new Uint8Array(K)) });
  });
  it('3-D rhs names rhs', async () => {
    await runSpec({}, 'rhs', { 'B.npy': npy('int8', [1, K, N], new Int8Array(K * N)) });
  });
  it('a missing lhs field names lhs', async () => {
    await runSpec({ lhs: undefined }, 'lhs');
  });
});

describe('bad .npy files', () => {
  it('a missing file names the field', async () => {
    await runSpec({ lhs: 'nope.npy' }, 'lhs');
  });
  it('an unreadable file (a directory) names the field', async () => {
    const { dir, specPath, out } = writeSpec({ rhs: 'adir.npy' });
    mkdirSync(join(dir, 'adir.npy'));
    const code = await main(['run', specPath, '--backend', 'cpu']);
    expectBadInput(code, stderr.join(''), 'rhs', dir, out);
  });
  it('a corrupt file (bad magic) names the field', async () => {
    const bytes = A();
    bytes[1] = 0x58; // "\x93XUMPY"
    await runSpec({}, 'lhs', { 'A.npy': bytes });
  });
  it('a corrupt file (truncated data) names the field', async () => {
    const bytes = B();
    await runSpec({}, 'rhs', { 'B.npy': bytes.subarray(0, bytes.length - 1) });
  });
  it('a corrupt file (truncated header) names the field', async () => {
    await runSpec({}, 'lhs', { 'A.npy': A().subarray(0, 20) });
  });
  it('a corrupt file (garbage header dict) names the field', async () => {
    const bytes = A();
    bytes.set(Buffer.from("{'descr': ?"), 10);
    await runSpec({}, 'lhs', { 'A.npy': bytes });
  });
  it('an empty file names the field', async () => {
    await runSpec({}, 'rhs', { 'B.npy': new Uint8Array(0) });
  });
  it('a missing zero-point .npy names the field', async () => {
    await runSpec({ rhsZeroPoint: 'zb.npy' }, 'rhsZeroPoint');
  });
});

// ------------------------------------------------------------------ zero points

describe('bad zero points', () => {
  it('lhs zero-point vector of the wrong length (M+1)', async () => {
    await runSpec({ lhsZeroPoint: 'za.npy' }, 'lhsZeroPoint', { 'za.npy': npy('int32', [M + 1], new Int32Array(M + 1)) });
  });
  it('rhs zero-point vector of the wrong length (N-1)', async () => {
    await runSpec({ rhsZeroPoint: 'zb.npy' }, 'rhsZeroPoint', { 'zb.npy': npy('int32', [N - 1], new Int32Array(N - 1)) });
  });
  it('rhs zero-point vector of length M instead of N', async () => {
    await runSpec({ rhsZeroPoint: 'zb.npy' }, 'rhsZeroPoint', { 'zb.npy': npy('int32', [M], new Int32Array(M)) });
  });
  it('zero-point .npy with a float dtype', async () => {
    await runSpec({ lhsZeroPoint: 'za.npy' }, 'lhsZeroPoint', { 'za.npy': npy('float64', [M], new Float64Array(M)) });
  });
  it('zero-point .npy that is 2-D', async () => {
    await runSpec({ lhsZeroPoint: 'za.npy' }, 'lhsZeroPoint', { 'za.npy': npy('int32', [M, 1], new Int32Array(M)) });
  });
  it('zero-point value out of int32 range (int64 npy)', async () => {
    const z = BigInt64Array.from([0n, 2n ** 31n, 0n, 0n]);
    await runSpec({ rhsZeroPoint: 'zb.npy' }, 'rhsZeroPoint', { 'zb.npy': npy('int64', [N], z) });
  });
  it('zero-point value below int32 range (int64 npy)', async () => {
    const z = BigInt64Array.from([-(2n ** 31n) - 1n, 0n]);
    await runSpec({ lhsZeroPoint: 'za.npy' }, 'lhsZeroPoint', { 'za.npy': npy('int64', [M], z) });
  });
  it('scalar zero point out of int32 range', async () => {
    await runSpec({ lhsZeroPoint: 2 ** 31 }, 'lhsZeroPoint');
  });
  it('scalar zero point not an integer', async () => {
    await runSpec({ rhsZeroPoint: 1.5 }, 'rhsZeroPoint');
  });
});

// ------------------------------------------------------------------ stages

describe('bad stages', () => {
  it('bias vector of the wrong length (axis col)', async () => {
    await runSpec(stage({ type: 'bias', axis: 'col', values: [1, 2, 3] }), 'pipeline[0].values');
  });
  it('bias vector of the wrong length (axis row)', async () => {
    await runSpec(stage({ type: 'bias', axis: 'row', values: [1, 2, 3, 4] }), 'pipeline[0].values');
  });
  it('bias with a bad axis', async () => {
    await runSpec(stage({ type: 'bias', axis: 'diagonal', values: [1, 2] }), 'pipeline[0].axis');
  });
  it('per-channel multiplier of the wrong length (quantizeDownInt32ToUint8Scale)', async () => {
    await runSpec(stage(legacy({ offset: [1, 2, 3, 4], multiplier: [1, 2, 3], axis: 'col' })), 'pipeline[0].multiplier');
  });
  it('per-channel multiplier of the wrong length (scaleInt32ByFixedPointAndExponent)', async () => {
    await runSpec(stage(scale({ multiplier: [1, 2, 3], exponent: [0, 0], axis: 'row' })), 'pipeline[0].multiplier');
  });
  it('per-channel exponent of the wrong length', async () => {
    await runSpec(stage(scale({ multiplier: [1, 2], exponent: [0, 0, 0], axis: 'row' })), 'pipeline[0].exponent');
  });
  it('missing axis for a per-channel array (quantizeDownInt32ToUint8Scale)', async () => {
    await runSpec(stage(legacy({ multiplier: [1, 2, 3, 4] })), 'pipeline[0].axis');
  });
  it('missing axis for a per-channel array (scaleInt32ByFixedPointAndExponent)', async () => {
    await runSpec(stage(scale({ exponent: [0, 1] })), 'pipeline[0].axis');
  });
  it('a requantizeFloat32 scale that no float32 holds: it would round to 0', async () => {
    await runSpec(stage({ type: 'requantizeFloat32', scale: 1e-50, zeroPoint: 0 }), 'pipeline[0].scale');
  });
  it('a requantizeFloat32 scale that no float32 holds: it would round to an infinity', async () => {
    await runSpec(stage({ type: 'requantizeFloat32', scale: [0.5, -1e40], zeroPoint: 0, axis: 'row' }), 'pipeline[0].scale[1]');
  });
  for (const shift of [-1, 32]) {
    it(`quantizeDownInt32ToUint8Scale shift ${shift}`, async () => {
      await runSpec(stage(legacy({ shift })), 'pipeline[0].shift');
    });
    it(`quantizeDownInt32ByFixedPoint shift ${shift}`, async () => {
      await runSpec({ pipeline: [{ type: 'clamp', min: 0, max: 9 }, fixedPoint({ shift })] }, 'pipeline[1].shift');
    });
  }
  it('shift not an integer', async () => {
    await runSpec(stage(fixedPoint({ shift: 2.5 })), 'pipeline[0].shift');
  });
  for (const exponent of [-32, 32]) {
    it(`double rounding exponent ${exponent}`, async () => {
      await runSpec(stage(scale({ rounding: 'double', exponent })), 'pipeline[0].exponent');
    });
  }
  for (const exponent of [-32, 31]) {
    it(`single rounding exponent ${exponent}`, async () => {
      await runSpec(stage(scale({ rounding: 'single', exponent })), 'pipeline[0].exponent');
    });
  }
  it('per-channel exponent out of range names the element', async () => {
    await runSpec(stage(scale({ rounding: 'single', multiplier: [1, 1], exponent: [0, 31], axis: 'row' })), 'pipeline[0].exponent');
  });
  it('unknown rounding', async () => {
    await runSpec(stage(scale({ rounding: 'triple' })), 'pipeline[0].rounding');
  });
  it('multiplier out of int32 range', async () => {
    await runSpec(stage(fixedPoint({ multiplier: 2 ** 31 })), 'pipeline[0].multiplier');
  });
  it('unknown stage type', async () => {
    await runSpec(stage({ type: 'relu' }), 'pipeline[0].type');
  });
  it('a stage with no type, or a field missing, is said to be missing (not "undefined")', async () => {
    await runSpec(stage({ min: 0, max: 9 }), 'pipeline[0].type');
    expect(stderr.join('')).toMatch(/pipeline\[0\]\.type: missing \(expected one of: bias,/);
    stderr.length = 0;
    await runSpec(stage({ type: 'bias', values: [1, 2, 3, 4] }), 'pipeline[0].axis');
    expect(stderr.join('')).not.toMatch(/undefined/);
  });
  it('a stage that is not an object', async () => {
    await runSpec({ pipeline: [42] }, 'pipeline[0]');
  });
  it('pipeline that is not an array', async () => {
    await runSpec({ pipeline: { type: 'clamp', min: 0, max: 1 } }, 'pipeline');
  });
  it('a misspelt stage field (offsetAfterShfit)', async () => {
    const s = fixedPoint();
    delete (s as Spec).offsetAfterShift;
    await runSpec(stage({ ...s, offsetAfterShfit: 3 }), 'pipeline[0].offsetAfterShfit');
  });
  it('a missing stage field', async () => {
    await runSpec(stage({ type: 'clamp', min: 0 }), 'pipeline[0].max');
  });
  it('a cast followed by another stage', async () => {
    await runSpec(
      {
        pipeline: [
          { type: 'saturatingCast', to: 'int8' },
          { type: 'clamp', min: 0, max: 1 },
        ],
      },
      'pipeline[1]',
    );
  });
  it('a cast to an unsupported type', async () => {
    await runSpec(stage({ type: 'truncatingCast', to: 'int8' }), 'pipeline[0].to');
  });
  it('clamp min > max', async () => {
    await runSpec(stage({ type: 'clamp', min: 10, max: 9 }), 'pipeline[0].min');
  });
  it('tanh amplitude 0', async () => {
    await runSpec(stage({ type: 'tanh', realZeroAsInt32: 0, realAmplitudeAsInt32: 0 }), 'pipeline[0].realAmplitudeAsInt32');
  });
  it('tanh |zero| + 8 * amplitude > INT32_MAX', async () => {
    // The CLI names the stage here (`pipeline[0]`), the two fields together being at fault.
    await runSpec(stage({ type: 'tanh', realZeroAsInt32: 2 ** 30, realAmplitudeAsInt32: 2 ** 27 }), 'pipeline[0]');
  });
});

// ------------------------------------------------------------------ the spec itself

describe('bad specs', () => {
  it('unknown op', async () => {
    await runSpec({ op: 'depthwiseConv2d' }, 'op');
  });
  it('missing op', async () => {
    await runSpec({ op: undefined }, 'op');
  });
  it('an unknown top-level key', async () => {
    await runSpec({ colour: 'blue' }, 'colour');
  });
  it('a misspelt top-level key (lhsZeroPiont)', async () => {
    await runSpec({ lhsZeroPiont: 3 }, 'lhsZeroPiont');
  });
  it('an empty key, named in brackets (it had named an empty field)', async () => {
    await runSpec({ '': 3 }, '[""]');
  });
  it('a key that is not an identifier, named whole in brackets, not as another field', async () => {
    await runSpec({ 'lhs.rows': 3 }, '["lhs.rows"]');
  });
  it('a missing out field', async () => {
    await runSpec({ out: undefined }, 'out');
  });
  it('a spec that is not valid JSON (one line)', async () => {
    const dir = freshDir({ 'spec.json': '{"op": "gemm", "lhs": "A.npy",' });
    const code = await main(['run', join(dir, 'spec.json'), '--backend', 'cpu']);
    expectBadInput(code, stderr.join(''), 'SPEC', dir, join(dir, 'C.npy'));
  });
  it('a spec that is not valid JSON (several lines; the message must still be one line)', async () => {
    const dir = freshDir({ 'spec.json': '{\n  "op": "gemm",\n  "lhs": A.npy,\n  "rhs": "B.npy",\n  "out": "C.npy"\n}\n' });
    const code = await main(['run', join(dir, 'spec.json'), '--backend', 'cpu']);
    expectBadInput(code, stderr.join(''), 'SPEC', dir, join(dir, 'C.npy'));
  });
  it('an empty spec file', async () => {
    const dir = freshDir({ 'spec.json': '' });
    const code = await main(['run', join(dir, 'spec.json'), '--backend', 'cpu']);
    expectBadInput(code, stderr.join(''), 'SPEC', dir, join(dir, 'C.npy'));
  });
  it('a spec that is a JSON array', async () => {
    const dir = freshDir({ 'spec.json': '[]' });
    const code = await main(['run', join(dir, 'spec.json'), '--backend', 'cpu']);
    expectBadInput(code, stderr.join(''), 'SPEC', dir, join(dir, 'C.npy'));
  });
  it('a spec file that does not exist', async () => {
    const dir = freshDir();
    const code = await main(['run', join(dir, 'missing.json'), '--backend', 'cpu']);
    expectBadInput(code, stderr.join(''), 'SPEC', dir, join(dir, 'C.npy'));
  });
});

// ------------------------------------------------------------------ command line

describe('bad command lines', () => {
  it('an extra argument: SPEC for run (one), arguments for the commands that take none', async () => {
    const dir = freshDir();
    const code = await main(['run', join(dir, 'a.json'), join(dir, 'b.json'), '--backend', 'cpu']);
    expectBadInput(code, stderr.join(''), 'SPEC', dir, join(dir, 'C.npy'));
    for (const command of ['info', 'verify', 'tune']) {
      stderr.length = 0;
      expectBadInput(await main([command, 'extra']), stderr.join(''), 'arguments', dir, join(dir, 'C.npy'));
    }
  });
  it('a bad --backend value (run)', async () => {
    const { dir, specPath, out } = writeSpec({});
    const code = await main(['run', specPath, '--backend', 'tpu']);
    expectBadInput(code, stderr.join(''), '--backend', dir, out);
  });
  it('a bad --backend value (gemm)', async () => {
    const dir = freshDir();
    const out = join(dir, 'C.npy');
    const code = await main(['gemm', '--lhs', join(dir, 'A.npy'), '--rhs', join(dir, 'B.npy'), '--out', out, '--backend', 'gpu']);
    expectBadInput(code, stderr.join(''), '--backend', dir, out);
  });
  it('gemm with a missing --lhs', async () => {
    const dir = freshDir();
    const out = join(dir, 'C.npy');
    const code = await main(['gemm', '--rhs', join(dir, 'B.npy'), '--out', out]);
    expectBadInput(code, stderr.join(''), '--lhs', dir, out);
  });
  it('gemm with a missing --out', async () => {
    const dir = freshDir();
    const code = await main(['gemm', '--lhs', join(dir, 'A.npy'), '--rhs', join(dir, 'B.npy')]);
    expectBadInput(code, stderr.join(''), '--out', dir, join(dir, 'C.npy'));
  });
  it('gemm with a shape mismatch names --rhs (the flag, as gemm errors do)', async () => {
    const dir = freshDir();
    const out = join(dir, 'C.npy');
    const code = await main(['gemm', '--lhs', join(dir, 'B.npy'), '--rhs', join(dir, 'B.npy'), '--out', out]);
    expectBadInput(code, stderr.join(''), '--rhs', dir, out);
  });
  it('gemm with a --pipeline that is not valid JSON', async () => {
    const dir = freshDir();
    const out = join(dir, 'C.npy');
    const code = await main(['gemm', '--lhs', join(dir, 'A.npy'), '--rhs', join(dir, 'B.npy'), '--out', out, '--pipeline', '[{"type":']);
    expectBadInput(code, stderr.join(''), '--pipeline', dir, out);
  });
  it('gemm with a --pipeline @file that does not exist', async () => {
    const dir = freshDir();
    const out = join(dir, 'C.npy');
    const code = await main([
      'gemm',
      '--lhs',
      join(dir, 'A.npy'),
      '--rhs',
      join(dir, 'B.npy'),
      '--out',
      out,
      '--pipeline',
      `@${join(dir, 'stages.json')}`,
    ]);
    expectBadInput(code, stderr.join(''), '--pipeline', dir, out);
  });
  it('run with no spec file', async () => {
    const dir = freshDir();
    const code = await main(['run']);
    expectBadInput(code, stderr.join(''), 'SPEC', dir, join(dir, 'C.npy'));
  });
  it('an unknown command', async () => {
    const dir = freshDir();
    const code = await main(['frobnicate']);
    expectBadInput(code, stderr.join(''), 'command', dir, join(dir, 'C.npy'));
  });
});

// ------------------------------------------------------------------ an existing output file

describe('an output file that already exists', () => {
  const OLD = 'previous result, must survive a failed run\n';
  const cases: [string, Spec, Record<string, Uint8Array | string | null>, string][] = [
    ['a bad stage (found after the operands are read)', stage({ type: 'clamp', min: 2, max: 1 }), {}, 'pipeline[0].min'],
    ['a corrupt operand', {}, { 'B.npy': B().subarray(0, 30) }, 'rhs'],
    ['a shape mismatch', {}, { 'A.npy': npy('uint8', [M, K + 2], new Uint8Array(M * (K + 2))) }, 'rhs'],
  ];
  for (const [name, patch, files, field] of cases) {
    it(`is left untouched by ${name}`, async () => {
      const { dir, specPath, out } = writeSpec(patch, { ...files, 'C.npy': OLD });
      const code = await main(['run', specPath, '--backend', 'cpu']);
      expect(code).toBe(2);
      const lines = stderr
        .join('')
        .split('\n')
        .filter((l) => l !== '');
      expect(lines).toHaveLength(1);
      expect(lines[0]).toMatch(new RegExp(`^qgemm: error: ${escapeRe(field)}: `));
      expect(readFileSync(out, 'utf8')).toBe(OLD);
      expect(readdirSync(dir).filter((f) => f.includes('.tmp-'))).toEqual([]);
    });
  }
});

// ------------------------------------------------------------------ the real binary

describe('bin/qgemm.mjs', () => {
  const BIN = join(REPO, 'bin', 'qgemm.mjs');
  beforeAll(() => {
    if (!existsSync(join(REPO, 'dist', 'node', 'cli.js'))) {
      execFileSync('npx', ['vite', 'build'], { cwd: REPO, stdio: 'pipe' });
    }
  });

  function runBin(args: string[], cwd: string): { status: number | null; stderr: string } {
    const r = spawnSync(process.execPath, [BIN, ...args], { cwd, encoding: 'utf8', timeout: 60_000 });
    return { status: r.status, stderr: r.stderr };
  }

  function expectBinBadInput(r: { status: number | null; stderr: string }, field: string, dir: string, out: string): void {
    expect(r.status, r.stderr).toBe(2);
    const lines = r.stderr.split('\n');
    expect(lines.pop()).toBe('');
    expect(lines, r.stderr).toHaveLength(1);
    expect(lines[0]).toMatch(new RegExp(`^qgemm: error: ${escapeRe(field)}: \\S`));
    expect(r.stderr).not.toMatch(/^\s*at /m);
    expect(existsSync(out)).toBe(false);
    expect(readdirSync(dir).filter((f) => f.includes('.tmp-'))).toEqual([]);
  }

  it('run: shape mismatch', () => {
    const { dir, specPath, out } = writeSpec({}, { 'B.npy': npy('int8', [K + 1, N], new Int8Array((K + 1) * N)) });
    expectBinBadInput(runBin(['run', specPath, '--backend', 'cpu'], dir), 'rhs', dir, out);
  });
  it('run: a spec that is not valid JSON', () => {
    const dir = freshDir({ 'spec.json': '{"op": "gemm", ' });
    expectBinBadInput(runBin(['run', 'spec.json'], dir), 'SPEC', dir, join(dir, 'C.npy'));
  });
  it('gemm: a missing --lhs', () => {
    const dir = freshDir();
    expectBinBadInput(runBin(['gemm', '--rhs', 'B.npy', '--out', 'C.npy'], dir), '--lhs', dir, join(dir, 'C.npy'));
  });
});
