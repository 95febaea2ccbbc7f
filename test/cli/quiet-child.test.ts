// The quiet child of src/cli/quiet.ts, with a stand-in for the CLI: whatever a native library prints on
// the child's fds 1 and 2 is dropped (Dawn prints shader compilation warnings on fd 1, which on an NVIDIA
// GPU would break `qgemm verify --json`), while qgemm's own results (fd 4) reach stdout and its messages
// (fd 3) and console lines (fd 6) reach stderr, with the child's exit code; console lines alone do not
// count as the child having said why it failed.

import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it, vi } from 'vitest';
import { runQuietChild } from '../../src/cli/quiet.ts';
import { cleanup, freshDir } from './support.ts';

afterAll(cleanup);
afterEach(() => vi.restoreAllMocks());

const STAND_IN = `
import { writeSync } from 'node:fs';
writeSync(1, 'warning:\\nCompilation log for [ShaderModule]: use of deprecated builtin\\n');
writeSync(2, 'Warning: vkCreateInstance: Found no drivers!\\n');
writeSync(Number(process.env.QGEMM_OUTPUT_FD), '{"ok":true}\\n');
writeSync(Number(process.env.QGEMM_CONSOLE_FD), 'qgemm trace: a console line\\n');
if (process.argv[3] !== 'silent') writeSync(Number(process.env.QGEMM_MESSAGES_FD), 'qgemm: one line\\n');
process.exit(Number(process.argv[2]));
`;

/** Runs the stand-in as the quiet child; returns its exit code and what reached stdout and stderr. */
async function quietRun(code: number, silent = false) {
  const bin = join(freshDir(), 'stand-in.mjs');
  writeFileSync(bin, STAND_IN);
  let out = '';
  let err = '';
  vi.spyOn(process.stdout, 'write').mockImplementation((chunk: string | Uint8Array) => {
    out += chunk.toString();
    return true;
  });
  vi.spyOn(process.stderr, 'write').mockImplementation((chunk: string | Uint8Array) => {
    err += chunk.toString();
    return true;
  });
  const exit = await runQuietChild(bin, [String(code), ...(silent ? ['silent'] : [])]);
  vi.restoreAllMocks();
  return { exit, out, err };
}

describe('the quiet child', () => {
  it("passes qgemm's results and messages, drops native output on fds 1 and 2", async () => {
    const r = await quietRun(0);
    expect({ ...r, err: r.err.split('\n').sort() }).toEqual({
      exit: 0,
      out: '{"ok":true}\n',
      err: ['', 'qgemm trace: a console line', 'qgemm: one line'], // two pipes: in either order
    });
  });
  it("keeps the child's exit code when it said why", async () => {
    expect((await quietRun(2)).exit).toBe(2);
  });
  it('a child that printed only console lines (a trace) and failed did not say why: the parent does', async () => {
    const r = await quietRun(1, true);
    expect(r.exit).toBe(1);
    expect(r.err).toMatch(/^qgemm trace: a console line\nqgemm: internal error: the process running the GPU ended with exit code 1/);
    // (the console line comes first: the parent's own line is written once the child has closed its pipes)
  });
});
