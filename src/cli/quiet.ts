// Keeps native noise off the user's stderr. Dawn (the `webgpu` package) writes driver-probe warnings
// from C++ straight to file descriptor 2 ("Warning: vkCreateInstance: Found no drivers!" and a source
// frame) while it looks for an adapter; no environment variable silences them and Node cannot
// redirect its own fd 2. Dawn also prints each shader's compilation warnings to fd 1 (where a device's
// compiler takes only the deprecated form of the subgroup-matrix builtins, "use of deprecated builtin"
// per call: src/kernels/sgmat/load-form.ts), which would corrupt `--json` output.
// So a command that may open a GPU runs in a child process: the child's fds 1 and 2 are pipes that the
// parent drains and drops, and the child writes qgemm's own results to fd 4, its messages (why a command
// failed) to fd 3, and its other lines for stderr to fd 6 (what its JavaScript prints on the console,
// QGEMM_TRACE=1's lines; warnings, -v and the progress of tune and verify), pipes that the parent
// copies to its stdout and stderr. If the child fails without a message of its own on fd 3 (a native
// crash, a broken install), the parent says so in one line with the last native line;
// QGEMM_DEBUG=1 runs everything in one process with the native output visible.
// Signals: the parent forwards SIGINT, SIGTERM and SIGHUP to the child and, once it has ended, exits with
// 128 + the signal's number (130, 143, 129), as a shell reports a command a signal ended. The child
// holds the read end of one more pipe (fd 5) whose write end only the parent has: when the parent is
// gone, even by SIGKILL, the child reads end-of-file and exits instead of running on as an orphan.

import { spawn } from 'node:child_process';
import { writeSync } from 'node:fs';
import { Socket } from 'node:net';
import { constants } from 'node:os';
import { format } from 'node:util';

const MESSAGES_FD_ENV = 'QGEMM_MESSAGES_FD';
const OUTPUT_FD_ENV = 'QGEMM_OUTPUT_FD';
const PARENT_FD_ENV = 'QGEMM_PARENT_FD';
const CONSOLE_FD_ENV = 'QGEMM_CONSOLE_FD';
/** The signals the parent passes on to the child. */
const FORWARDED = ['SIGINT', 'SIGTERM', 'SIGHUP'] as const;

const fdFrom = (name: string): number | null => {
  const v = process.env[name];
  return v && /^\d+$/.test(v) ? Number(v) : null;
};
/** In the quiet child: the fd for qgemm's own messages; otherwise null. */
export const messagesFd = (): number | null => fdFrom(MESSAGES_FD_ENV);
/** In the quiet child: the fd for qgemm's own results (what it would print on stdout); otherwise null. */
export const outputFd = (): number | null => fdFrom(OUTPUT_FD_ENV);
/** In the quiet child: the fd for lines on stderr that are not why a command failed (console, warnings, progress); otherwise null. */
export const consoleFd = (): number | null => fdFrom(CONSOLE_FD_ENV);

/**
 * In the quiet child: exits (code 129, as for a hangup) as soon as the parent is gone, which closes the
 * pipe of QGEMM_PARENT_FD. The watch keeps no event loop alive. Does nothing outside the child.
 */
export function exitWithParent(): void {
  const fd = fdFrom(PARENT_FD_ENV);
  if (fd === null) return;
  let pipe: Socket;
  try {
    pipe = new Socket({ fd, readable: true, writable: false });
  } catch {
    return; // not a pipe this process was given: nothing to watch
  }
  const gone = () => process.exit(128 + constants.signals.SIGHUP);
  pipe.on('end', gone);
  pipe.on('close', gone);
  pipe.on('error', gone);
  pipe.resume();
  pipe.unref();
}

/**
 * In the quiet child, whose fd 2 is dropped: what JavaScript prints with console.error or console.warn
 * (QGEMM_TRACE=1's lines, a default warning of the library) goes to stderr through a pipe of its own
 * (QGEMM_CONSOLE_FD), which the parent copies as it does qgemm's messages, but which does not count as
 * the child having said why it failed. Native output (Dawn's) stays dropped. Does nothing outside it.
 */
export function consoleToStderr(): void {
  const fd = consoleFd();
  if (fd === null) return;
  const write = (...args: unknown[]) => writeFd(fd, `${format(...args)}\n`);
  console.error = write;
  console.warn = write;
}

export function writeFd(fd: number, text: string): void {
  const bytes = Buffer.from(text, 'utf8');
  for (let done = 0; done < bytes.length; ) {
    try {
      done += writeSync(fd, bytes, done);
    } catch (e) {
      if ((e as { code?: string }).code !== 'EAGAIN') throw e; // the pipe may be non-blocking: retry
    }
  }
}

/** Whether these arguments may open a GPU: `info`, or a --backend other than cpu. */
export function needsDevice(argv: string[]): boolean {
  if (argv[0] === 'info' || argv[0] === 'tune') return !argv.includes('--help') && !argv.includes('-h');
  if (argv[0] === 'verify' && !argv.includes('--help') && !argv.includes('-h')) {
    return !argv.some((a, i) => (a === '--backend' && argv[i + 1] === 'cpu') || a === '--backend=cpu');
  }
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const value = a === '--backend' ? argv[i + 1] : a.startsWith('--backend=') ? a.slice(10) : undefined;
    if (value === 'webgpu' || value === 'auto') return true;
  }
  return false;
}

/** Runs `node binPath ...argv` as the quiet child; resolves to its exit code. */
export function runQuietChild(binPath: string, argv: string[]): Promise<number> {
  return new Promise((resolvePromise) => {
    const child = spawn(process.execPath, [...process.execArgv, binPath, ...argv], {
      stdio: ['inherit', 'pipe', 'pipe', 'pipe', 'pipe', 'pipe', 'pipe'],
      env: { ...process.env, [MESSAGES_FD_ENV]: '3', [OUTPUT_FD_ENV]: '4', [PARENT_FD_ENV]: '5', [CONSOLE_FD_ENV]: '6' },
    });
    let tail = '';
    let said = false;
    (child.stdio[3] as NodeJS.ReadableStream).on('data', (chunk: Buffer) => {
      said = true;
      process.stderr.write(chunk);
    });
    (child.stdio[4] as NodeJS.ReadableStream).pipe(process.stdout, { end: false });
    const keepTail = (chunk: Buffer) => {
      tail = (tail + chunk.toString('utf8')).slice(-4000);
    };
    child.stdout!.on('data', keepTail);
    child.stderr!.on('data', keepTail);
    const pipes = child.stdio as unknown as NodeJS.ReadableStream[];
    pipes[5].resume(); // the child's watch on this process: never written
    pipes[6].on('data', (chunk: Buffer) => process.stderr.write(chunk)); // its console output: not a reason
    // A signal to this process is passed on to the child (Ctrl-C reaches both, as one process group);
    // the parent waits for the child to end, then exits with 128 + the signal's number.
    let received: NodeJS.Signals | null = null;
    const forward = (signal: NodeJS.Signals) => {
      received ??= signal;
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill(signal);
      // A child stuck where the signal cannot end it (in native code that blocks it) is killed.
      setTimeout(() => child.exitCode === null && child.signalCode === null && child.kill('SIGKILL'), 10_000).unref();
    };
    for (const signal of FORWARDED) process.on(signal, forward);
    const done = (code: number) => {
      for (const signal of FORWARDED) process.off(signal, forward);
      resolvePromise(code);
    };
    child.on('error', (e) => {
      process.stderr.write(`qgemm: internal error: cannot start a child process (${e.message.split('\n')[0]})\n`);
      done(1);
    });
    child.on('close', (code, signal) => {
      const ended = received ?? ((FORWARDED as readonly string[]).includes(signal ?? '') ? signal : null);
      if (ended) return done(128 + constants.signals[ended]);
      if (code === 0 || ((code === 1 || code === 2) && said)) return done(code);
      const last = tail.trim().split('\n').at(-1)?.slice(0, 200) ?? '';
      process.stderr.write(
        `qgemm: internal error: the process running the GPU ended with ${signal ?? `exit code ${code}`}` +
          `${last ? ` (last native message: ${last})` : ''}; run with QGEMM_DEBUG=1 to see all of its output\n`,
      );
      done(1);
    });
  });
}
