// The real `qgemm` binary (bin/qgemm.mjs -> dist/node/cli.js) as a user runs it: stderr carries only
// qgemm's own lines. Commands that may open a GPU run in a quiet child (src/cli/quiet.ts) that drops
// Dawn's native driver-probe warnings; its messages and exit codes must still come through. `npx qgemm`
// in the clone must print no npm warning of the project's making (the user's own npm config is set
// aside, as it is not ours).

import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { closeSync, existsSync, openSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BIN, REPO, cleanup, ensureBuilt, expectNothingWritten, expectOneLine, freshDir, npy, runBin, writeSpecIn } from './support.ts';

beforeAll(ensureBuilt, 300_000);
afterAll(cleanup);

const GEMM = ['gemm', '--lhs', 'A.npy', '--rhs', 'B.npy', '--out', 'C.npy', '--rhs-zero-point', '-7'];

describe('stderr carries only qgemm', () => {
  it("the README's command with --backend auto: exit 0, nothing on stderr", () => {
    const dir = freshDir();
    expect(runBin([...GEMM, '--backend', 'auto'], dir)).toEqual({ code: 0, out: '', err: '' });
    expect(existsSync(join(dir, 'C.npy'))).toBe(true);
  });
  it('--backend webgpu: exit 0 and nothing on stderr, or (no adapter here) one NoAdapterError line', () => {
    const dir = freshDir();
    const r = runBin([...GEMM, '--backend', 'webgpu'], dir);
    if (r.code === 0) expect(r.err).toBe('');
    else expectOneLine(r, 1, 'NoAdapterError');
  });
  it("QGEMM_TRACE=1: the call's trace line comes through the quiet child (its fd 2 is dropped)", () => {
    const dir = freshDir();
    const r = runBin([...GEMM, '--backend', 'webgpu'], dir, { QGEMM_TRACE: '1' });
    if (r.code !== 0) return void expectOneLine(r, 1, 'NoAdapterError');
    expect(r.err).toMatch(/^qgemm trace: \S+ plan \w+: validate [\d.]+, .* ms; total [\d.]+ ms\n$/);
  });
  it("the child's bad-input line and exit code come through", () => {
    const dir = freshDir();
    const r = runBin(['run', writeSpecIn(dir, { pipeline: [{ type: 'clamp', min: 3, max: 1 }] }), '--backend', 'webgpu'], dir);
    expectOneLine(r, 2, 'pipeline[0].min');
    expectNothingWritten(dir);
  });
  it("the child's machine failure comes through as one line, exit 1", () => {
    const dir = freshDir();
    const r = runBin([...GEMM, '--backend', 'webgpu'], dir, { QGEMM_DAWN_NODE: '/nonexistent/dawn.node' });
    expect(expectOneLine(r, 1, 'NoAdapterError')).not.toMatch(/apt-get/);
    expectNothingWritten(dir);
  });
  it('bare qgemm: usage on stderr, exit 2; --version on stdout', () => {
    const dir = freshDir();
    const bare = runBin([], dir);
    expect(bare.code).toBe(2);
    expect(bare.out).toBe('');
    expect(bare.err).toMatch(/^Usage: qgemm/);
    const { version } = JSON.parse(readFileSync(join(REPO, 'package.json'), 'utf8'));
    expect(runBin(['--version'], dir)).toEqual({ code: 0, out: `${version}\n`, err: '' });
  });
});

describe('npx qgemm', () => {
  it('a reader that closes stdout early ends the command as SIGPIPE would (141), with nothing on stderr', async () => {
    // In this process (help), and through the quiet child (info may open a GPU).
    for (const argv of [
      ['help', 'gemm'],
      ['info', '--json'],
    ]) {
      const p = spawn(process.execPath, [BIN, ...argv], { cwd: freshDir(), stdio: ['ignore', 'pipe', 'pipe'] });
      p.stdout.destroy(); // the reader is gone before qgemm writes
      let err = '';
      p.stderr.on('data', (d: Buffer) => void (err += d.toString()));
      const code = await new Promise((r) => p.on('close', r));
      expect({ code, err }, argv.join(' ')).toEqual({ code: 141, err: '' });
    }
  }, 300_000);
  it.skipIf(!existsSync('/dev/full'))(
    'a stdout that cannot be written (/dev/full) is one IOError line and exit 1, not a stack',
    async () => {
      for (const argv of [['--help'], ['help', 'gemm'], ['info', '--json']]) {
        const full = openSync('/dev/full', 'w');
        const p = spawn(process.execPath, [BIN, ...argv], { cwd: freshDir(), stdio: ['ignore', full, 'pipe'] });
        closeSync(full);
        let err = '';
        p.stderr?.on('data', (d: Buffer) => void (err += d.toString()));
        const code = await new Promise((r) => p.on('close', r));
        expect({ code, err }, argv.join(' ')).toEqual({ code: 1, err: 'qgemm: IOError: cannot write stdout: ENOSPC\n' });
      }
    },
    300_000,
  );
  it.skipIf(!existsSync('/dev/full'))(
    'a stderr that cannot be written leaves the exit code as the command ended: 2 for bad input',
    async () => {
      for (const argv of [GEMM.map((a) => (a === 'A.npy' ? 'missing.npy' : a)), [...GEMM, '--backend', 'cpu', '--bit-depth', '9,4']]) {
        const full = openSync('/dev/full', 'w');
        const p = spawn(process.execPath, [BIN, ...argv], { cwd: freshDir(), stdio: ['ignore', 'ignore', full] });
        closeSync(full);
        expect(await new Promise((r) => p.on('close', r)), argv.join(' ')).toBe(2);
      }
    },
    300_000,
  );
  it('a command-line file name whose bytes are not UTF-8 is refused naming its flag, nothing read or written', () => {
    const dir = freshDir();
    writeFileSync(join(dir, 'Z\uFFFD.npy'), readFileSync(join(dir, 'A.npy'))); // what the bytes would decode to
    const r = spawnSync('sh', ['-c', `"${process.execPath}" "${BIN}" gemm --lhs "$(printf 'Z\\377.npy')" --rhs B.npy --out C.npy`], {
      cwd: dir,
      encoding: 'utf8',
    });
    expect(r.status, r.stderr).toBe(2);
    expect(r.stderr).toMatch(/^qgemm: error: --lhs: "Z\uFFFD\.npy" is not valid UTF-8/);
    expect(existsSync(join(dir, 'C.npy'))).toBe(false);
  });
  it('prints no npm warning (no unknown keys in the project .npmrc)', () => {
    const dir = freshDir();
    const userconfig = join(dir, 'empty-npmrc');
    writeFileSync(userconfig, '');
    // The env as a user's shell has it: without the npm_* variables of the npm that started vitest.
    const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !/^npm_/i.test(k)));
    env.NPM_CONFIG_USERCONFIG = userconfig;
    const out = execFileSync('npx', ['--no-install', 'qgemm', '--version'], {
      cwd: REPO,
      encoding: 'utf8',
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    expect(out.trim()).toMatch(/^\d+\.\d+\.\d+/);
    const r = execFileSync('sh', ['-c', `npx --no-install qgemm --version 2>&1 >/dev/null`], {
      cwd: REPO,
      encoding: 'utf8',
      env,
    });
    expect(r).toBe('');
  });
});

describe('the CPU path on worker threads', () => {
  // The pool's workers sleep in Atomics.wait between GEMMs; they must not keep the process alive.
  it('a GEMM on two threads ends its process by itself', () => {
    const n = 256;
    const dir = freshDir({
      'A.npy': npy('uint8', [n, n], new Uint8Array(n * n).fill(3)),
      'B.npy': npy('uint8', [n, n], new Uint8Array(n * n).fill(5)),
    });
    const r = runBin([...GEMM, '--backend', 'cpu'], dir, { QGEMM_THREADS: '2' }, { timeout: 60_000 });
    expect(r).toEqual({ code: 0, out: '', err: '' });
  });
});
