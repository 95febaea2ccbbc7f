// The `qgemm` launcher and its quiet child under signals (src/cli/quiet.ts, bin/qgemm.mjs), with the real
// binary: SIGINT, SIGTERM and SIGHUP sent to the launcher alone (as `child_process.kill()` or a service
// manager does, not to the process group) while `qgemm verify` runs in the child are passed on; the
// launcher ends with 128 + the signal's number and leaves no child behind. After a SIGKILL of the launcher
// (a caller's timeout), the child notices that its parent is gone and exits on its own. The waits are
// generous bounds against a hang on a loaded machine, not measures of speed.

import { type ChildProcess, spawn } from 'node:child_process';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { constants } from 'node:os';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { serializeNpy } from '../../src/io/npy.ts';
import { BIN, cleanup, ensureBuilt, freshDir } from './support.ts';

beforeAll(ensureBuilt, 300_000);
afterAll(cleanup);

// Whatever a failing test leaves running is killed: the launchers, then the children they started.
const started: ChildProcess[] = [];
const children: number[] = [];
afterAll(() => {
  for (const p of started) if (p.exitCode === null && p.signalCode === null) p.kill('SIGKILL');
  for (const pid of children) if (!ended(pid)) process.kill(pid, 'SIGKILL');
});

/** The process's state letter from /proc (R, S, Z...), or null once it is gone. */
function state(pid: number): string | null {
  try {
    return readFileSync(`/proc/${pid}/stat`, 'utf8').replace(/^.*\) /s, '')[0];
  } catch {
    return null;
  }
}
/** Gone, or a zombie that whoever adopted it has not reaped yet: it runs no more either way. */
const ended = (pid: number) => {
  const s = state(pid);
  return s === null || s === 'Z' || s === 'X';
};

/** The pids whose parent is `pid`. */
function childrenOf(pid: number): number[] {
  const out: number[] = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8')
        .replace(/^.*\) /s, '')
        .split(' ');
      if (Number(stat[1]) === pid) out.push(Number(name));
    } catch {
      // ended meanwhile
    }
  }
  return out;
}

async function until(what: string, ok: () => boolean, boundMs: number): Promise<void> {
  const t0 = Date.now();
  while (!ok()) {
    if (Date.now() - t0 > boundMs) throw new Error(`${what}: not within ${boundMs / 1000} s`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/**
 * Starts `qgemm verify` (WebGPU, in the quiet child) and waits for its header line, which the child
 * prints once it holds the adapter. Returns null where there is no adapter (the command ends first).
 */
async function startVerify(): Promise<{ launcher: ChildProcess; child: number; exit: Promise<{ code: number | null }> } | null> {
  const launcher = spawn(process.execPath, [BIN, 'verify'], { cwd: freshDir(), stdio: ['ignore', 'pipe', 'pipe'] });
  started.push(launcher);
  let err = '';
  launcher.stderr!.on('data', (d: Buffer) => void (err += d.toString()));
  launcher.stdout!.resume();
  const exit = new Promise<{ code: number | null }>((r) => launcher.on('close', (code) => r({ code })));
  let exited = false;
  void exit.then(() => void (exited = true));
  await until('the header line of qgemm verify', () => exited || err.includes('qgemm verify: webgpu on '), 120_000);
  if (exited) {
    expect(err, 'verify ended before it began: only a missing adapter may do that').toMatch(/NoAdapterError/);
    return null;
  }
  const kids = childrenOf(launcher.pid!);
  children.push(...kids);
  expect(kids, 'the launcher runs verify in one child').toHaveLength(1);
  return { launcher, child: kids[0], exit };
}

describe('qgemm under signals', () => {
  for (const signal of ['SIGTERM', 'SIGINT', 'SIGHUP'] as const) {
    it(`${signal} to the launcher alone ends verify, with exit code ${128 + constants.signals[signal]}, and no child left`, async (ctx) => {
      const run = await startVerify();
      if (!run) return ctx.skip();
      run.launcher.kill(signal);
      await until('the launcher ends', () => run.launcher.exitCode !== null || run.launcher.signalCode !== null, 60_000);
      expect(await run.exit).toEqual({ code: 128 + constants.signals[signal] });
      expect(ended(run.child), 'the child has ended too').toBe(true);
    }, 300_000);
  }
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    it(`${signal} while the result is written waits for the write: the old file or the whole new one, no temporary left`, async () => {
      // A 256 MiB int32 result (8192 x 1 times 1 x 8192), on the CPU: the write takes long enough to be caught.
      const n = 8192;
      const dir = freshDir({
        'A.npy': serializeNpy({ dtype: 'uint8', shape: [n, 1], fortranOrder: false, data: new Uint8Array(n).fill(200) }),
        'B.npy': serializeNpy({ dtype: 'uint8', shape: [1, n], fortranOrder: false, data: new Uint8Array(n).fill(100) }),
        'C.npy': 'old result\n',
      });
      const p = spawn(process.execPath, [BIN, 'gemm', '--lhs', 'A.npy', '--rhs', 'B.npy', '--out', 'C.npy', '--max-memory', '2G'], {
        cwd: dir,
        stdio: 'ignore',
      });
      started.push(p);
      const exit = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((r) =>
        p.on('close', (code, sig) => r({ code, signal: sig })),
      );
      let sent = false;
      const poll = setInterval(() => {
        const tmp = readdirSync(dir).find((f) => f.includes('.tmp-'));
        if (tmp && !sent && (statSync(join(dir, tmp), { throwIfNoEntry: false })?.size ?? 0) > 0) {
          sent = true;
          p.kill(signal);
        }
      }, 1);
      const end = await exit;
      clearInterval(poll);
      expect(sent, 'the signal was sent while the temporary was being written').toBe(true);
      expect(end, 'ended by the signal, as a shell reports it (128 + its number)').toEqual({ code: null, signal });
      expect(readdirSync(dir).filter((f) => f.includes('.tmp-'))).toEqual([]);
      expect(statSync(join(dir, 'C.npy')).size).toBe(128 + n * n * 4);
    }, 300_000);
  }
  it('SIGTERM to the quiet child alone while it writes: the write ends, then the signal ends the command (143)', async (ctx) => {
    // A 64 MiB int32 result on WebGPU (the quiet child runs the command); the signal goes to the child only.
    const n = 4096;
    const dir = freshDir({
      'A.npy': serializeNpy({ dtype: 'uint8', shape: [n, 1], fortranOrder: false, data: new Uint8Array(n).fill(200) }),
      'B.npy': serializeNpy({ dtype: 'uint8', shape: [1, n], fortranOrder: false, data: new Uint8Array(n).fill(100) }),
    });
    const argv = ['gemm', '--lhs', 'A.npy', '--rhs', 'B.npy', '--out', 'C.npy', '--backend', 'webgpu'];
    const p = spawn(process.execPath, [BIN, ...argv], { cwd: dir, stdio: ['ignore', 'ignore', 'pipe'] });
    started.push(p);
    let err = '';
    p.stderr!.on('data', (d: Buffer) => void (err += d.toString()));
    const exit = new Promise<number | null>((r) => p.on('close', (code) => r(code)));
    let sent = false;
    const poll = setInterval(() => {
      const tmp = readdirSync(dir).find((f) => f.includes('.tmp-'));
      if (!tmp || sent || (statSync(join(dir, tmp), { throwIfNoEntry: false })?.size ?? 0) === 0) return;
      const kids = childrenOf(p.pid!);
      if (kids.length !== 1) return;
      sent = true;
      children.push(kids[0]);
      process.kill(kids[0], 'SIGTERM');
    }, 1);
    const code = await exit;
    clearInterval(poll);
    if (/NoAdapterError/.test(err)) return ctx.skip();
    expect(sent, 'the signal was sent while the temporary was being written').toBe(true);
    expect(code, err).toBe(128 + constants.signals.SIGTERM);
    expect(readdirSync(dir).filter((f) => f.includes('.tmp-'))).toEqual([]);
    expect(statSync(join(dir, 'C.npy')).size).toBe(128 + n * n * 4);
  }, 300_000);
  it('after a SIGKILL of the launcher, the child exits on its own', async (ctx) => {
    const run = await startVerify();
    if (!run) return ctx.skip();
    run.launcher.kill('SIGKILL');
    await run.exit;
    await until('the orphaned child exits', () => ended(run.child), 30_000);
  }, 300_000);
});
