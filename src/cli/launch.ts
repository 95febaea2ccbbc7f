// The `qgemm` binary's first step (bin/qgemm.mjs), a bundle entry of its own so that it stays small: a
// command that may open a GPU goes straight to the quiet child (./quiet.ts) without this process loading
// the whole CLI, which only the child needs; every other command loads the CLI here and runs in-process.
// Saves a parse of the CLI bundle (about 60 ms) from every GPU command's first call, and the child exits
// without waiting for Dawn's teardown.

import { constants } from 'node:os';
import { exitWithParent, messagesFd, needsDevice, runQuietChild } from './quiet.ts';

/** Runs `argv` as `qgemm`; `loadCli` imports the CLI bundle (dist/node/cli.js). Resolves to the exit code. */
export async function launch(
  argv: string[],
  binPath: string,
  loadCli: () => Promise<{ cli(argv: string[]): Promise<number> }>,
): Promise<number> {
  // A reader that closes stdout early (`qgemm verify --json | head`) ends the command as SIGPIPE would
  // end a C program (128 + 13), where Node would throw an unhandled EPIPE with its stack. Any other write
  // error (a full disk, `> /dev/full`) is one line and exit 1, as every other I/O failure is.
  process.stdout.on('error', (e: NodeJS.ErrnoException) => {
    if (e.code === 'EPIPE') process.exit(128 + constants.signals.SIGPIPE);
    try {
      process.stderr.write(`qgemm: IOError: cannot write stdout: ${e.code ?? e.message}\n`);
    } finally {
      process.exit(1);
    }
  });
  // A stderr that cannot be written (`2> /dev/full`) leaves nowhere to say anything: the exit code still
  // says how the command ended, where Node would end it with 1 on the unhandled write error.
  process.stderr.on('error', () => undefined);
  const child = messagesFd() !== null;
  if (!child && needsDevice(argv) && !process.env.QGEMM_DEBUG) return runQuietChild(binPath, argv);
  if (child) exitWithParent();
  const { cli } = await loadCli();
  const code = await cli(argv);
  // The quiet child ends as soon as its command has: everything it says went out through synchronous
  // writes (./quiet.ts writeFd) and its files are complete; what is left is Dawn's teardown (up to 0.1 s).
  if (child) process.exit(code);
  return code;
}
