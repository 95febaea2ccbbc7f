// Reproductions of attacks on the CLI, each as a test of the CLI's bad-input contract: exit 2 (1 for a machine
// fault), one stderr line naming the field, no output or temporary file written, an old output file
// untouched. Reads (devices, FIFOs, folders, sizes from the .npy header), writes (links, FIFOs,
// folders, write-protected files, an input as the output, the spec-folder rule), strict JSON, the
// memory cap, validation before any device, and the command line itself (negative values, --help,
// --version, bare `qgemm`, bad numbers). Runs in-process through `main`; the quiet-stderr checks of the
// real binary are in cli-bin.test.ts.

import { execFileSync } from 'node:child_process';
import {
  chmodSync,
  copyFileSync,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  symlinkSync,
  truncateSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import { afterAll, afterEach, beforeEach, describe, expect, it } from 'vitest';
import { A, B, K, N, cleanup, expectNothingWritten, expectOneLine, freshDir, npy, runMain, writeSpecIn } from './support.ts';

afterAll(cleanup);

const OLD = 'previous result, must survive\n';

/** A version 1.0 .npy file with this header dict, padded as numpy pads it, then `data`. */
function rawNpy(dict: string, data: Uint8Array): Uint8Array {
  const pad = (64 - ((10 + dict.length + 1) % 64)) % 64;
  const header = `${dict}${' '.repeat(pad)}\n`;
  return Uint8Array.from([
    0x93,
    0x4e,
    0x55,
    0x4d,
    0x50,
    0x59,
    1,
    0,
    header.length & 0xff,
    header.length >> 8,
    ...Buffer.from(header, 'latin1'),
    ...data,
  ]);
}

async function run(dir: string, patch: Record<string, unknown> = {}, extra: string[] = []) {
  return runMain(['run', writeSpecIn(dir, patch), '--backend', 'cpu', ...extra]);
}

describe('reads: regular files only, sized before reading', () => {
  it('an operand that is /dev/zero is refused without reading it', async () => {
    const dir = freshDir();
    expect(expectOneLine(await run(dir, { lhs: '/dev/zero' }), 2, 'lhs')).toMatch(/device/);
    expectNothingWritten(dir);
  });
  it('an operand that is a FIFO is refused without blocking', async () => {
    const dir = freshDir();
    execFileSync('mkfifo', [join(dir, 'f.npy')]);
    expect(expectOneLine(await run(dir, { rhs: 'f.npy' }), 2, 'rhs')).toMatch(/FIFO/);
    expectNothingWritten(dir);
  });
  it('an operand that is a folder', async () => {
    const dir = freshDir();
    mkdirSync(join(dir, 'd.npy'));
    expect(expectOneLine(await run(dir, { lhs: 'd.npy' }), 2, 'lhs')).toMatch(/folder/);
  });
  it('a zero-point file that is a FIFO', async () => {
    const dir = freshDir();
    execFileSync('mkfifo', [join(dir, 'z.npy')]);
    expectOneLine(await run(dir, { rhsZeroPoint: 'z.npy' }), 2, 'rhsZeroPoint');
  });
  it('a spec that is /dev/zero, a FIFO or a folder', async () => {
    const dir = freshDir();
    execFileSync('mkfifo', [join(dir, 'fifo.json')]);
    for (const spec of ['/dev/zero', join(dir, 'fifo.json'), dir]) {
      expectOneLine(await runMain(['run', spec]), 2, 'SPEC');
    }
    expectNothingWritten(dir);
  });
  it('a spec over the 64 MiB cap is refused before it is read (a sparse file)', async () => {
    const dir = freshDir();
    const spec = writeSpecIn(dir);
    truncateSync(spec, 65 * 2 ** 20);
    expect(expectOneLine(await runMain(['run', spec]), 2, 'SPEC')).toMatch(/at most 67108864/);
  });
  it('a header promising more data than the file holds is refused before the data is read', async () => {
    const dir = freshDir({ 'big.npy': rawNpy("{'descr': '|u1', 'fortran_order': False, 'shape': (60000, 60000), }", new Uint8Array(6)) });
    expect(expectOneLine(await run(dir, { lhs: 'big.npy' }), 2, 'lhs')).toMatch(/data is truncated: expected 3600000000 bytes, got 6/);
    expectNothingWritten(dir);
  });
  it('a header length beyond the file is refused', async () => {
    const bytes = rawNpy("{'descr': '|u1', 'fortran_order': False, 'shape': (2, 3), }", new Uint8Array(6));
    bytes[8] = 0xff;
    bytes[9] = 0xff;
    expectOneLine(await run(freshDir({ 'bad.npy': bytes }), { rhs: 'bad.npy' }), 2, 'rhs');
  });
  it('an operand over --max-memory names the field and the sizes', async () => {
    const dir = freshDir({ 'A.npy': npy('uint8', [64, K], new Uint8Array(64 * K)) });
    const line = expectOneLine(await run(dir, {}, ['--max-memory', '100']), 2, 'lhs');
    expect(line).toMatch(/192 bytes.*memory cap.*--max-memory/);
  });
});

describe('strict JSON and bounded messages', () => {
  it('nesting 100,000 deep is exit 2 on SPEC, not a stack overflow', async () => {
    const dir = freshDir();
    const r = await runMain(['run', writeSpecIn(dir, {}, `{"op": "gemm", "pipeline": ${'['.repeat(100_000)}${']'.repeat(100_000)}}`)]);
    expect(expectOneLine(r, 2, 'SPEC')).toMatch(/nested deeper than 32/);
  });
  it('an 8 MiB string is echoed cut, not whole', async () => {
    const dir = freshDir();
    const line = expectOneLine(await run(dir, { pipeline: [{ type: 'x'.repeat(8 * 2 ** 20) }] }), 2, 'pipeline[0].type');
    expect(line.length).toBeLessThan(400);
    const r = await run(freshDir(), { pipeline: [{ type: 'clamp', min: 'y'.repeat(8 * 2 ** 20), max: 3 }] });
    expect(expectOneLine(r, 2, 'pipeline[0].min')).toMatch(/\(8388608 characters\)/);
  });
  it('an unknown key of 8 MiB is named cut, not whole', async () => {
    const key = 'k'.repeat(8 * 2 ** 20);
    const line = expectOneLine(
      await run(freshDir(), { bitDepth: { lhs: 4, rhs: 4, [key]: 1 } }),
      2,
      `bitDepth["${'k'.repeat(200)}"... (8388608 characters)]`,
    );
    expect(line.length).toBeLessThan(500);
  });
  it('a duplicate key names its path', async () => {
    const dir = freshDir();
    expectOneLine(
      await runMain(['run', writeSpecIn(dir, {}, '{"op": "gemm", "lhs": "A.npy", "lhs": "B.npy", "rhs": "B.npy", "out": "C.npy"}')]),
      2,
      'lhs',
    );
    const stage = '{"type": "quantizeDownInt32ByFixedPoint", "multiplier": 5, "shift": 1, "shift": 2, "offsetAfterShift": 0}';
    const r = await runMain([
      'run',
      writeSpecIn(dir, {}, `{"op": "gemm", "lhs": "A.npy", "rhs": "B.npy", "out": "C.npy", "pipeline": [${stage}]}`),
    ]);
    expect(expectOneLine(r, 2, 'pipeline[0].shift')).toMatch(/duplicate key \(line 1 column \d+\)/);
    expectNothingWritten(dir);
  });
  const cases: [string, Record<string, unknown>, string][] = [
    [
      '"axis": "diag" with a scalar',
      { pipeline: [{ type: 'quantizeDownInt32ToUint8Scale', offset: 0, multiplier: 1, shift: 0, axis: 'diag' }] },
      'pipeline[0].axis',
    ],
    ['"pipeline": null', { pipeline: null }, 'pipeline'],
    [
      'an unknown rounding',
      { pipeline: [{ type: 'scaleInt32ByFixedPointAndExponent', multiplier: 1, exponent: 0, offsetAfterShift: 0, rounding: 'up' }] },
      'pipeline[0].rounding',
    ],
    ['an unknown bitDepth rounding', { bitDepth: { lhs: 4, rhs: 4, rounding: 'sometimes' } }, 'bitDepth.rounding'],
    ['a stray bitDepth field', { bitDepth: { lhs: 4, rhs: 4, junk: 1 } }, 'bitDepth.junk'],
    ['a string where a number belongs', { pipeline: [{ type: 'clamp', min: '0', max: 3 }] }, 'pipeline[0].min'],
    ['a cast to an unknown type', { pipeline: [{ type: 'saturatingCast', to: 'uint4' }] }, 'pipeline[0].to'],
    ['a "__proto__" key', { ['__proto__']: 1 }, '__proto__'],
    ['out that is not a string', { out: 3 }, 'out'],
  ];
  for (const [name, patch, field] of cases) {
    it(name, async () => {
      const dir = freshDir();
      const text = name.includes('__proto__')
        ? '{"op": "gemm", "lhs": "A.npy", "rhs": "B.npy", "out": "C.npy", "__proto__": 1}'
        : undefined;
      expectOneLine(await runMain(['run', writeSpecIn(dir, patch, text), '--backend', 'cpu']), 2, field);
      expectNothingWritten(dir);
    });
  }
});

describe('writes: what out may replace', () => {
  const refused: [string, (dir: string) => string, RegExp][] = [
    [
      'a symlink (its target untouched)',
      (dir) => {
        writeFileSync(join(dir, 'target.npy'), OLD);
        symlinkSync('target.npy', join(dir, 'C.npy'));
        return 'C.npy';
      },
      /symbolic link/,
    ],
    [
      'a FIFO',
      (dir) => {
        execFileSync('mkfifo', [join(dir, 'C.npy')]);
        return 'C.npy';
      },
      /FIFO/,
    ],
    ['a folder ("." )', () => '.', /folder/],
    [
      'a write-protected file',
      (dir) => {
        writeFileSync(join(dir, 'C.npy'), OLD);
        chmodSync(join(dir, 'C.npy'), 0o444);
        return 'C.npy';
      },
      /write-protected/,
    ],
    ['the lhs itself', () => 'A.npy', /same file as lhs/],
    ['a path with a NUL', () => 'C\0.npy', /NUL/],
    [
      'a name with a lone surrogate, which no UTF-8 name holds (written, it would name C\uFFFD.npy)',
      (dir) => {
        writeFileSync(join(dir, 'target.npy'), OLD);
        symlinkSync('target.npy', join(dir, 'C\uFFFD.npy'));
        return 'C\uD800.npy';
      },
      /holds a lone surrogate/,
    ],
    ['a 300-character name', () => `${'x'.repeat(300)}.npy`, /too long/],
    ['a name of 132 characters and 260 bytes', () => `${'\u00e9'.repeat(128)}.npy`, /too long/],
    ['a missing folder', () => 'nowhere/C.npy', /no such file/],
    ['a path that leaves the spec folder', () => '../escaped.npy', /leaves the spec's folder.*--allow-outside/],
  ];
  for (const [name, setup, why] of refused) {
    it(`refuses ${name}`, async () => {
      const dir = freshDir();
      const out = setup(dir);
      const before = existsSync(join(dir, 'target.npy')) ? readFileSync(join(dir, 'target.npy'), 'utf8') : null;
      const aBefore = readFileSync(join(dir, 'A.npy'));
      expect(expectOneLine(await run(dir, { out }), 2, 'out')).toMatch(why);
      expect(readFileSync(join(dir, 'A.npy'))).toEqual(aBefore);
      if (before !== null) expect(readFileSync(join(dir, 'target.npy'), 'utf8')).toBe(before);
      if (name.includes('write-protected')) expect(readFileSync(join(dir, 'C.npy'), 'utf8')).toBe(OLD);
      expect(existsSync(join(dir, '..', 'escaped.npy'))).toBe(false);
    });
  }
  it('an input named with a lone surrogate is refused, not read as the file it would encode to; U+FFFD itself is a name', async () => {
    const dir = freshDir();
    copyFileSync(join(dir, 'A.npy'), join(dir, 'A\uFFFD.npy'));
    expect(expectOneLine(await run(dir, { lhs: 'A\uDC00.npy' }), 2, 'lhs')).toMatch(/holds a lone surrogate/);
    expect(existsSync(join(dir, 'C.npy'))).toBe(false);
    // In a spec (strict UTF-8), U+FFFD is a character like any other: the file of that name is read.
    expect((await run(dir, { lhs: 'A\uFFFD.npy' })).code).toBe(0);
    expect(existsSync(join(dir, 'C.npy'))).toBe(true);
  });
  it('an input path that leaves the spec folder is refused too', async () => {
    const dir = freshDir();
    expect(expectOneLine(await run(dir, { lhs: '../c0/A.npy' }), 2, 'lhs')).toMatch(/--allow-outside/);
  });
  it('--allow-outside and absolute paths may leave the folder', async () => {
    const dir = freshDir();
    mkdirSync(join(dir, 'sub'));
    const spec = join(dir, 'sub', 'spec.json');
    writeFileSync(spec, JSON.stringify({ op: 'gemm', lhs: '../A.npy', rhs: join(dir, 'B.npy'), out: '../C.npy' }));
    expectOneLine(await runMain(['run', spec]), 2, 'out');
    expect(await runMain(['run', spec, '--allow-outside'])).toEqual({ code: 0, out: '', err: '' });
    expect(existsSync(join(dir, 'C.npy'))).toBe(true);
  });
  it('a name of 244 bytes in 124 characters is written (the temporary beside it is cut at a character, in bytes)', async () => {
    const dir = freshDir();
    const name = `${'\u00e9'.repeat(120)}.npy`;
    expect(await run(dir, { out: name })).toEqual({ code: 0, out: '', err: '' });
    expect(readdirSync(dir).filter((f) => f.includes('\u00e9'))).toEqual([name]);
  });
  it('an ordinary writable old file is replaced', async () => {
    const dir = freshDir({ 'C.npy': OLD });
    expect((await run(dir)).code).toBe(0);
    expect(readFileSync(join(dir, 'C.npy')).subarray(1, 6).toString()).toBe('NUMPY');
  });
});

describe('validation before any device, and the memory cap', () => {
  // A Dawn that cannot load: any attempt to acquire a device fails with NoAdapterError (exit 1).
  let saved: string | undefined;
  beforeEach(() => {
    saved = process.env.QGEMM_DAWN_NODE;
    process.env.QGEMM_DAWN_NODE = '/nonexistent/dawn.node';
  });
  afterEach(() => {
    if (saved === undefined) delete process.env.QGEMM_DAWN_NODE;
    else process.env.QGEMM_DAWN_NODE = saved;
  });
  const bad: [string, Record<string, unknown>, string][] = [
    ['a bad pipeline', { pipeline: [{ type: 'clamp', min: 5, max: 1 }] }, 'pipeline[0].min'],
    ['a zero-point vector of the wrong length', { rhsZeroPoint: 'z.npy' }, 'rhsZeroPoint'],
    ['a bad bitDepth', { bitDepth: { lhs: 9, rhs: 4 } }, 'bitDepth.lhs'],
    ['an out folder that does not exist', { out: 'nowhere/C.npy' }, 'out'],
  ];
  for (const backend of ['webgpu', 'auto']) {
    for (const [name, patch, field] of bad) {
      it(`${name} is exit 2 with --backend ${backend} and no adapter`, async () => {
        const dir = freshDir({ 'z.npy': npy('int32', [N + 1], new Int32Array(N + 1)) });
        expectOneLine(await runMain(['run', writeSpecIn(dir, patch), '--backend', backend]), 2, field);
        expectNothingWritten(dir);
      });
    }
  }
  it('(control: a valid spec with --backend webgpu and no adapter is NoAdapterError, exit 1)', async () => {
    const dir = freshDir();
    expectOneLine(await runMain(['run', writeSpecIn(dir), '--backend', 'webgpu']), 1, 'NoAdapterError');
    expectNothingWritten(dir);
  });
  it('an output too large for the cap is exit 2 with its size, before allocating', async () => {
    const dir = freshDir({
      'A.npy': npy('uint8', [100_000, 1], new Uint8Array(100_000)),
      'B.npy': npy('int8', [1, 100_000], new Int8Array(100_000)),
    });
    const line = expectOneLine(await run(dir), 2, 'out');
    expect(line).toMatch(/\[100000, 100000\] int32 result .* about 111\.8 GiB.*--max-memory/);
    expectNothingWritten(dir);
  });
  it('an elementwise output too large for the cap', async () => {
    const dir = freshDir({
      'a.npy': npy('uint8', [100_000, 1], new Uint8Array(100_000)),
      'b.npy': npy('uint8', [1, 100_000], new Uint8Array(100_000)),
    });
    const spec = {
      op: 'add',
      a: { data: 'a.npy', scale: 1, zeroPoint: 0 },
      b: { data: 'b.npy', scale: 1, zeroPoint: 0 },
      output: { scale: 1, zeroPoint: 0 },
      out: 'C.npy',
    };
    expectOneLine(await runMain(['run', writeSpecIn(dir, {}, JSON.stringify(spec))]), 2, 'out');
  });
});

describe('the command line', () => {
  it('negative zero points are values: --rhs-zero-point -7', async () => {
    const dir = freshDir();
    const r = await runMain([
      'gemm',
      '--lhs',
      join(dir, 'A.npy'),
      '--rhs',
      join(dir, 'B.npy'),
      '--out',
      join(dir, 'C.npy'),
      '--rhs-zero-point',
      '-7',
      '--lhs-zero-point',
      '-3',
    ]);
    expect(r).toEqual({ code: 0, out: '', err: '' });
    expect(existsSync(join(dir, 'C.npy'))).toBe(true);
  });
  it('a flag given twice is exit 2 naming it, with nothing written; a value that looks like a flag is a value, unless it is one of the flags', async () => {
    const dir = freshDir();
    const [a, b, c] = ['A.npy', 'B.npy', 'C.npy'].map((f) => join(dir, f));
    for (const [argv, flag] of [
      [['gemm', '--lhs', a, '--rhs', b, '--out', c, '--lhs', b], '--lhs'],
      [['gemm', '--lhs', a, '--rhs', b, '--out', c, '--out=D.npy'], '--out'],
      [['gemm', '--lhs', a, '--rhs', b, '--out', c, '-v', '--verbose'], '--verbose'],
      [['gemm', '--lhs', a, '--rhs', b, '--out', c, '-vv'], '--verbose'], // -vv is -v -v, as commander reads it
      [['run', writeSpecIn(dir), '--backend', 'cpu', '--backend', 'cpu'], '--backend'],
      [['tune', '--budget', '1s', '--budget', '2s'], '--budget'],
    ] as const) {
      expectOneLine(await runMain([...argv]), 2, flag);
      expectNothingWritten(dir);
    }
    // A flag of the command where a value belongs names the flag that lacks it: commander would take
    // `--lhs` as --out's path (writing a file named --lhs) or as --pipeline's JSON; verify's --kernel is variadic.
    for (const [argv, flag] of [
      [['gemm', '--lhs', a, '--rhs', b, '--out', c, '--pipeline', '--lhs'], '--pipeline'],
      [['gemm', '--lhs', a, '--rhs', b, '--out', '--lhs'], '--out'],
      [['gemm', '--lhs', '--rhs', b, '--out', c], '--lhs'],
      [['gemm', '--lhs', a, '--rhs', b, '--out', c, '--backend', '-v'], '--backend'],
    ] as const) {
      expect(expectOneLine(await runMain([...argv]), 2, flag)).toMatch(/expected a value, got the flag /);
      expectNothingWritten(dir);
      expect(existsSync('--lhs')).toBe(false);
    }
    expectOneLine(await runMain(['verify', '--backend', 'cpu', '--kernel', 'nope', '--kernel', 'nope2']), 2, '--kernel');
  });
  it('a control character in a name the error line quotes (a graph input "a\\rb") does not break the line', async () => {
    const dir = freshDir();
    const spec = {
      op: 'sequential',
      input: { data: 'A.npy', scale: 0.5, zeroPoint: 0 },
      inputs: { 'a\rb': { data: 'B.npy', scale: 0.5, zeroPoint: 999 } }, // a zero point out of range: named by the library
      layers: [{ op: 'add', inputs: ['input', 'a\rb'], output: { scale: 0.5, zeroPoint: 0 } }],
      out: 'C.npy',
    };
    const r = await runMain(['run', writeSpecIn(dir, {}, JSON.stringify(spec))]);
    expect(r.code).toBe(2);
    expect(r.err).toMatch(/^qgemm: error: inputs\["a\\rb"\]\.zeroPoint: /); // the name as a JSON string
    expect(r.err.split('\n')).toHaveLength(2);
  });
  it('help for an unknown command is one error line naming command, as the unknown command itself', async () => {
    expect(expectOneLine(await runMain(['help', 'frob']), 2, 'command')).toMatch(/unknown command "frob"/);
    expect(expectOneLine(await runMain(['help', '-x']), 2, 'command')).toMatch(/unknown command "-x"/);
    expect(expectOneLine(await runMain(['help', 'help', 'frob']), 2, 'command')).toMatch(/unknown command "frob"/);
    expectOneLine(await runMain(['frob']), 2, 'command');
    expect((await runMain(['help', 'gemm'])).code).toBe(0);
    expect(expectOneLine(await runMain(['help', 'gemm', 'extra']), 2, 'help')).toMatch(/takes one command/);
    // help's own help, as `qgemm --help` lists `help [command]`; a request for help among short flags
    for (const argv of [
      ['help', 'help'],
      ['help', '--help'],
      ['gemm', '-hv'],
      ['gemm', '-vh'],
    ]) {
      const r = await runMain(argv);
      expect(r.code, argv.join(' ')).toBe(0);
      expect(r.out, argv.join(' ')).toMatch(/^Usage: qgemm/);
    }
  });
  it('bare qgemm prints usage on stderr with exit 2', async () => {
    const r = await runMain([]);
    expect(r.code).toBe(2);
    expect(r.out).toBe('');
    expect(r.err).toMatch(/^Usage: qgemm/);
  });
  it('--help prints usage on stdout with exit 0; each command has its own', async () => {
    const top = await runMain(['--help']);
    expect(top).toMatchObject({ code: 0, err: '' });
    expect(top.out).toMatch(/Commands:[\s\S]*run[\s\S]*gemm[\s\S]*info/);
    const gemm = await runMain(['gemm', '--help']);
    expect(gemm).toMatchObject({ code: 0, err: '' });
    expect(gemm.out).toMatch(/--rhs-zero-point <int\|path>/);
    expect((await runMain(['run', '--help'])).out).toMatch(/--allow-outside/);
    for (const cmd of ['run', 'gemm', 'info', 'tune']) expect((await runMain([cmd, '--help'])).out, cmd).toMatch(/Exit codes: 0 ok/);
  });
  it('--version prints the package version', async () => {
    const { version } = JSON.parse(readFileSync(join(import.meta.dirname, '../../package.json'), 'utf8'));
    expect(await runMain(['--version'])).toEqual({ code: 0, out: `${version}\n`, err: '' });
    expect(await runMain(['-V'])).toEqual({ code: 0, out: `${version}\n`, err: '' });
  });
  it('-V beside anything else is refused (it would print the version and skip the rest), and is no flag value', async () => {
    for (const argv of [
      ['-V', 'extra'],
      ['--version', 'run', 'spec.json'],
      ['run', 'spec.json', '-V'],
      ['gemm', '--out', 'x', '--version'],
    ]) {
      const r = await runMain(argv);
      expect(r, argv.join(' ')).toMatchObject({ code: 2, out: '' });
      expect(r.err, argv.join(' ')).toMatch(/^qgemm: error: --version: prints the version only/);
    }
    expect((await runMain(['gemm', '--out', '-V'])).err).toMatch(/^qgemm: error: --out: expected a value, got the flag -V/);
  });
  const flags: [string, string[], string, RegExp][] = [
    ['--lhs-zero-point 3.5', ['--lhs-zero-point', '3.5'], '--lhs-zero-point', /expected an int32 or a path/],
    ['--rhs-zero-point 1e3', ['--rhs-zero-point', '1e3'], '--rhs-zero-point', /expected an int32/],
    ['--rhs-zero-point beyond int32', ['--rhs-zero-point', '-2147483649'], '--rhs-zero-point', /expected an int32/],
    ['--bit-depth 4', ['--bit-depth', '4'], '--bit-depth', /expected L,R\[,ROUNDING\]/],
    ['--bit-depth 4,4,nearest,junk', ['--bit-depth', '4,4,nearest,junk'], '--bit-depth', /expected L,R/],
    ['--bit-depth 4,x', ['--bit-depth', '4,x'], '--bit-depth', /expected L,R/],
    ['--bit-depth 9,4', ['--bit-depth', '9,4'], '--bit-depth.lhs', /1\.\.8/],
    ['--max-memory lots', ['--max-memory', 'lots'], '--max-memory', /expected a size/],
    // bytes that are not UTF-8 reach Node as U+FFFD: as a file name it would name another file
    ['a flag value that is not UTF-8', ['--lhs-zero-point', 'Z\uFFFD.npy'], '--lhs-zero-point', /is not valid UTF-8/],
    ['an inline flag value that is not UTF-8', ['--lhs-zero-point=Z\uFFFD.npy'], '--lhs-zero-point', /is not valid UTF-8/],
    ['--max-memory 99999T (a size, too large)', ['--max-memory', '99999T'], '--max-memory', /"99999T" is too large: at most 8192\.0 TiB/],
    ['--backend gpu', ['--backend', 'gpu'], '--backend', /cpu, webgpu, auto/],
    ['an unknown option', ['--frobnicate'], '--frobnicate', /unknown option/],
    [
      '--pipeline with a duplicate key',
      ['--pipeline', '[{"type": "clamp", "min": 1, "min": 2, "max": 3}]'],
      '--pipeline[0].min',
      /duplicate/,
    ],
    ['--pipeline with an unknown stage', ['--pipeline', '[{"type": "relu"}]'], '--pipeline[0].type', /unknown stage/],
  ];
  for (const [name, extra, field, why] of flags) {
    it(name, async () => {
      const dir = freshDir({ 'C.npy': OLD });
      const r = await runMain(['gemm', '--lhs', join(dir, 'A.npy'), '--rhs', join(dir, 'B.npy'), '--out', join(dir, 'C.npy'), ...extra]);
      expect(expectOneLine(r, 2, field)).toMatch(why);
      expect(readFileSync(join(dir, 'C.npy'), 'utf8')).toBe(OLD);
    });
  }
  it('gemm --out that is the lhs names --out, and leaves the lhs untouched', async () => {
    const dir = freshDir();
    const r = await runMain(['gemm', '--lhs', join(dir, 'A.npy'), '--rhs', join(dir, 'B.npy'), '--out', join(dir, 'A.npy')]);
    expect(expectOneLine(r, 2, '--out')).toMatch(/same file as --lhs;/);
    expect(readFileSync(join(dir, 'A.npy'))).toEqual(Buffer.from(A()));
    expect(readFileSync(join(dir, 'B.npy'))).toEqual(Buffer.from(B()));
    // A zero-point vector's file is named by its flag too.
    writeFileSync(join(dir, 'Z.npy'), npy('int32', [2], Int32Array.of(1, 2)));
    const z = join(dir, 'Z.npy');
    const zr = await runMain(['gemm', '--lhs', join(dir, 'A.npy'), '--rhs', join(dir, 'B.npy'), '--lhs-zero-point', z, '--out', z]);
    expect(expectOneLine(zr, 2, '--out')).toMatch(/same file as --lhs-zero-point;/);
  });
});
