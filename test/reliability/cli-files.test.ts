// The CLI's file boundary (src/cli/files.ts) against what a fuzz and fault trial found: the spec-folder
// rule checked on real paths (a symlinked folder or file does not let `out` or an input leave the
// folder), a trailing slash in `out` refused, a replaced `out` keeping its mode (a new one gets the
// umask's), and reads and writes in chunks (the loop tested with a small injected chunk size; a
// single read of over 2 GiB fails in Node), anything over a real limit refused up front with its size.

import { chmodSync, existsSync, mkdirSync, readFileSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { InputFiles, MAX_NPY_DATA_BYTES, setIoChunkBytes, writeAtomic } from '../../src/cli/files.ts';
import { MemoryBudget } from '../../src/cli/budget.ts';
import { InputError } from '../../src/errors.ts';
import { checkNpyDataSize } from '../../src/cli/files.ts';
import { cleanup, expectNothingWritten, expectOneLine, freshDir, runMain, writeSpecIn } from '../cli/support.ts';

afterAll(cleanup);

async function run(dir: string, patch: Record<string, unknown> = {}, extra: string[] = []) {
  return runMain(['run', writeSpecIn(dir, patch), '--backend', 'cpu', ...extra]);
}

describe('the spec-folder rule on real paths (item 3)', () => {
  it('out through a symlinked folder that leaves the spec folder is refused', async () => {
    const outside = freshDir();
    const dir = freshDir();
    symlinkSync(outside, join(dir, 'link'));
    expect(expectOneLine(await run(dir, { out: 'link/C.npy' }), 2, 'out')).toMatch(/leaves the spec's folder/);
    expect(existsSync(join(outside, 'C.npy'))).toBe(false);
    expectNothingWritten(dir);
  });
  it('an input through a symlinked folder or file that leaves the folder is refused', async () => {
    const outside = freshDir();
    const dir = freshDir();
    symlinkSync(outside, join(dir, 'link'));
    symlinkSync(join(outside, 'A.npy'), join(dir, 'A2.npy'));
    expect(expectOneLine(await run(dir, { lhs: 'link/A.npy' }), 2, 'lhs')).toMatch(/leaves the spec's folder/);
    expect(expectOneLine(await run(dir, { lhs: 'A2.npy' }), 2, 'lhs')).toMatch(/leaves the spec's folder/);
    expectNothingWritten(dir);
  });
  it('links that stay inside the folder, and --allow-outside, still work', async () => {
    const outside = freshDir();
    const dir = freshDir();
    mkdirSync(join(dir, 'sub'));
    symlinkSync(join(dir, 'sub'), join(dir, 'inner'));
    symlinkSync('A.npy', join(dir, 'A2.npy'));
    symlinkSync(outside, join(dir, 'link'));
    expect(await run(dir, { lhs: 'A2.npy', out: 'inner/C.npy' })).toEqual({ code: 0, out: '', err: '' });
    expect(existsSync(join(dir, 'sub', 'C.npy'))).toBe(true);
    expect(await run(dir, { out: 'link/C.npy' }, ['--allow-outside'])).toEqual({ code: 0, out: '', err: '' });
    expect(existsSync(join(outside, 'C.npy'))).toBe(true);
  });
});

describe('out', () => {
  it('a trailing slash is refused, the file of that name untouched (item 10)', async () => {
    const dir = freshDir({ 'A2.npy': 'old\n' });
    for (const out of ['A2.npy/', 'C.npy/', 'A2.npy//']) {
      expect(expectOneLine(await run(dir, { out }), 2, 'out')).toMatch(/folder|slash/);
    }
    expect(readFileSync(join(dir, 'A2.npy'), 'utf8')).toBe('old\n');
    expectNothingWritten(dir);
  });
  it('a replaced file keeps its mode; a new file gets the umask (item 7)', async () => {
    const dir = freshDir({ 'C.npy': 'old\n' });
    chmodSync(join(dir, 'C.npy'), 0o600);
    expect((await run(dir)).code).toBe(0);
    expect(statSync(join(dir, 'C.npy')).mode & 0o777).toBe(0o600);
    chmodSync(join(dir, 'C.npy'), 0o640);
    expect((await run(dir)).code).toBe(0);
    expect(statSync(join(dir, 'C.npy')).mode & 0o777).toBe(0o640);
    expect((await run(dir, { out: 'D.npy' })).code).toBe(0);
    const umask = process.umask();
    expect(statSync(join(dir, 'D.npy')).mode & 0o777).toBe(0o666 & ~umask);
  });
});

describe('reads and writes in chunks (item 4)', () => {
  afterEach(() => setIoChunkBytes());
  it('an .npy file read and a result written 7 bytes a call are whole and exact', () => {
    setIoChunkBytes(7);
    const dir = freshDir();
    const files = new InputFiles(new MemoryBudget(2 ** 30));
    const a = files.readNpy('lhs', join(dir, 'A.npy'));
    expect(Array.from(a.data as Uint8Array)).toEqual([1, 2, 3, 4, 5, 6]);
    const bytes = Uint8Array.from({ length: 1000 }, (_, i) => i % 251);
    writeAtomic('out', join(dir, 'W.bin'), bytes, files);
    expect(new Uint8Array(readFileSync(join(dir, 'W.bin')))).toEqual(bytes);
    const words = new Uint16Array(bytes.buffer, 334, 333); // in parts, a part of any typed array
    writeAtomic('out', join(dir, 'P.bin'), [bytes.subarray(0, 334), words], files);
    expect(new Uint8Array(readFileSync(join(dir, 'P.bin')))).toEqual(bytes);
  });
  it('data over the largest typed array is refused up front with its size', () => {
    expect(() => checkNpyDataSize('lhs', 'A.npy', MAX_NPY_DATA_BYTES)).not.toThrow();
    let err: unknown;
    try {
      checkNpyDataSize('lhs', 'A.npy', MAX_NPY_DATA_BYTES + 1);
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(InputError);
    expect((err as InputError).message).toContain(String(MAX_NPY_DATA_BYTES + 1));
  });
  it('a header over the largest typed array is refused, exit 2, naming the size, before its data is read', async () => {
    const rows = Math.ceil((MAX_NPY_DATA_BYTES + 1) / 65536);
    const header = `{'descr': '|u1', 'fortran_order': False, 'shape': (${rows}, 65536), }`;
    const pad = (64 - ((10 + header.length + 1) % 64)) % 64;
    const h = `${header}${' '.repeat(pad)}\n`;
    const dir = freshDir();
    writeFileSync(
      join(dir, 'big.npy'),
      Uint8Array.from([0x93, 0x4e, 0x55, 0x4d, 0x50, 0x59, 1, 0, h.length & 0xff, h.length >> 8, ...Buffer.from(h, 'latin1')]),
    );
    const line = expectOneLine(await run(dir, { lhs: 'big.npy' }, ['--max-memory', '16G']), 2, 'lhs');
    // Where the largest typed array is 2^53 - 1 bytes (Node 22+), a larger shape already has more
    // elements than a double counts exactly, and the header check names that instead.
    expect(line).toMatch(
      Number.isSafeInteger(rows * 65536)
        ? new RegExp(`${rows * 65536} bytes.*at most ${MAX_NPY_DATA_BYTES}`)
        : new RegExp(`shape \\(${rows}, 65536\\) has too many elements`),
    );
  });
});
