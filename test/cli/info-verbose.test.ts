// `qgemm info` for people (a short summary; --json the full data) and -v/--verbose on `gemm` and `run`
// (one line on stderr naming backend, kernel and time; silent without it). Through `main` in this
// process, on the CPU backend and on SwiftShader for info. Lines that are not why a command failed (-v,
// warnings, the progress of verify) go to the `note` stream, which the quiet child sends through its
// console pipe (fd 6), so that they never count as its error message; `cli()` wires that pipe.

import { afterAll, describe, expect, it } from 'vitest';
import { closeSync, openSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { cli, main } from '../../src/cli/main.ts';
import { cleanup, freshDir, M, N, K, runMain, writeSpecIn } from './support.ts';

afterAll(cleanup);

describe('qgemm info', () => {
  it('prints a summary that fits one screen, naming the adapter, kernels and CPU threads', async () => {
    const r = await runMain(['info']);
    expect(r.code).toBe(0);
    const lines = r.out.trimEnd().split('\n');
    expect(lines.length).toBeLessThanOrEqual(20);
    expect(Math.max(...lines.map((l) => l.length))).toBeLessThanOrEqual(120);
    expect(r.out).toMatch(/^WebGPU adapter: /);
    expect(r.out).toMatch(/software|hardware|none/);
    expect(r.out).toMatch(/CPU: kernel [\w-]+, \d+ threads?/);
    expect(r.out).toContain('--json');
  });
  it('--json prints the full data', async () => {
    const r = await runMain(['info', '--json']);
    expect(r.code).toBe(0);
    const d = JSON.parse(r.out);
    expect(d.cpu.threads).toBeGreaterThanOrEqual(1);
    expect('adapter' in d).toBe(true);
  });
});

describe('-v / --verbose', () => {
  const gemmArgs = (dir: string) => ['gemm', '--lhs', `${dir}/A.npy`, '--rhs', `${dir}/B.npy`, '--out', `${dir}/C.npy`, '--backend', 'cpu'];
  it('gemm is silent on success without it', async () => {
    const dir = freshDir();
    expect(await runMain(gemmArgs(dir))).toEqual({ code: 0, out: '', err: '' });
  });
  it('gemm -v prints backend, kernel and time on stderr, one line', async () => {
    const dir = freshDir();
    for (const flag of ['-v', '--verbose']) {
      const r = await runMain([...gemmArgs(dir), flag]);
      expect(r.code).toBe(0);
      expect(r.out).toBe('');
      expect(r.err).toMatch(new RegExp(`^qgemm: gemm ${M}x${N}x${K} ran on cpu, kernel cpu-[\\w-]+, [\\d.]+ m?s\\n$`));
    }
  });
  it('run -v prints the same line for a gemm spec', async () => {
    const dir = freshDir();
    const r = await runMain(['run', writeSpecIn(dir), '--backend', 'cpu', '-v']);
    expect(r.code).toBe(0);
    expect(r.err).toMatch(/^qgemm: gemm \d+x\d+x\d+ ran on cpu, kernel cpu-[\w-]+, [\d.]+ m?s\n$/);
  });
});

describe("lines that are not a command's failure (the quiet child's fd 6)", () => {
  /** main() with a `note` stream, as the quiet child runs it (src/cli/main.ts cli). */
  async function withNote(argv: string[]) {
    const io = { out: '', err: '', note: '' };
    const code = await main(argv, { out: (t) => void (io.out += t), err: (t) => void (io.err += t), note: (t) => void (io.note += t) });
    return { code, ...io };
  }
  it('-v and the progress of verify go to `note`, not to the messages that say why a command failed', async () => {
    const dir = freshDir();
    const gemm = await withNote([
      'gemm',
      '--lhs',
      `${dir}/A.npy`,
      '--rhs',
      `${dir}/B.npy`,
      '--out',
      `${dir}/C.npy`,
      '--backend',
      'cpu',
      '-v',
    ]);
    expect(gemm.code).toBe(0);
    expect(gemm.err).toBe('');
    expect(gemm.note).toMatch(/^qgemm: gemm \d+x\d+x\d+ ran on cpu, kernel cpu-[\w-]+, [\d.]+ m?s\n$/);
    const verify = await withNote(['verify', '--backend', 'cpu', '--kernel', 'cpu-js']);
    expect(verify.code).toBe(0);
    expect(verify.err).toBe('');
    expect(verify.note).toMatch(/^qgemm verify: cpu on /);
    expect(verify.out).toContain('cpu-js');
    // A failure is still a message: on `err`, with nothing on `note`.
    const bad = await withNote([
      'gemm',
      '--lhs',
      `${dir}/absent.npy`,
      '--rhs',
      `${dir}/B.npy`,
      '--out',
      `${dir}/D.npy`,
      '--backend',
      'cpu',
      '-v',
    ]);
    expect(bad.code).toBe(2);
    expect(bad.err).toMatch(/^qgemm: error: --lhs: /);
    expect(bad.note).toBe('');
  });

  it("cli() in the quiet child: -v through its console fd, a failure's line through its messages fd", async () => {
    const dir = freshDir();
    const paths = ['messages', 'output', 'console'].map((n) => join(dir, n));
    const fds = paths.map((p) => openSync(p, 'w'));
    const vars = ['QGEMM_MESSAGES_FD', 'QGEMM_OUTPUT_FD', 'QGEMM_CONSOLE_FD'] as const;
    const saved = { env: vars.map((v) => process.env[v]), error: console.error, warn: console.warn };
    const read = () => paths.map((p) => readFileSync(p, 'utf8'));
    const args = ['gemm', '--lhs', `${dir}/A.npy`, '--rhs', `${dir}/B.npy`, '--backend', 'cpu', '-v'];
    try {
      for (const [i, v] of vars.entries()) process.env[v] = String(fds[i]);
      expect(await cli([...args, '--out', `${dir}/C.npy`])).toBe(0);
      const [messages, , consoleLines] = read();
      expect(messages).toBe('');
      expect(consoleLines).toMatch(/^qgemm: gemm \d+x\d+x\d+ ran on cpu/);
      expect(await cli([...args, '--out', `${dir}/no/such/folder/C.npy`])).toBe(2);
      expect(read()[0]).toMatch(/^qgemm: error: --out: /);
    } finally {
      for (const [i, v] of vars.entries()) {
        if (saved.env[i] === undefined) delete process.env[v];
        else process.env[v] = saved.env[i];
      }
      console.error = saved.error;
      console.warn = saved.warn;
      for (const fd of fds) closeSync(fd);
    }
  });
});
