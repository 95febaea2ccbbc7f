// Writing a result file whole or not at all, for the benchmark's reports (bench/cli.ts) and the token run
// (bench/token.ts): a temporary file beside it, then a rename, so that a run stopped mid-write leaves no
// half a file, and no temporary one either.

import { renameSync, rmSync, writeFileSync } from 'node:fs';

export function writeWhole(file: string, text: string): void {
  const tmp = `${file}.tmp-${process.pid}`;
  try {
    writeFileSync(tmp, text);
    renameSync(tmp, file);
  } finally {
    rmSync(tmp, { force: true });
  }
}
