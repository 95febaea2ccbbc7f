#!/usr/bin/env node
// The `qgemm` command: a thin launcher for the CLI bundle (dist/node/cli.js, made by `npm run build`).
// `cli` runs the command, in a child process of this same launcher when it may open a GPU (see
// src/cli/quiet.ts), and resolves to the exit code.
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const entry = new URL('../dist/node/cli.js', import.meta.url);
if (!existsSync(fileURLToPath(entry))) {
  process.stderr.write('qgemm: dist/node/cli.js is missing; run `npm run build` in the qgemm-webgpu folder\n');
  process.exit(1);
}
const { cli } = await import(entry.href);
process.exitCode = await cli(process.argv.slice(2), fileURLToPath(import.meta.url));
