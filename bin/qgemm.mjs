#!/usr/bin/env node
// The `qgemm` command: a thin launcher for the CLI bundle (dist/node/cli.js, made by `npm run build`).
// dist/node/launch.js (src/cli/launch.ts) runs a command that may open a GPU in a child process of this
// same launcher (see src/cli/quiet.ts) without loading the CLI here, and any other in this process;
// it resolves to the exit code.
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const entry = new URL('../dist/node/cli.js', import.meta.url);
const launcher = new URL('../dist/node/launch.js', import.meta.url);
if (!existsSync(fileURLToPath(entry)) || !existsSync(fileURLToPath(launcher))) {
  process.stderr.write('qgemm: dist/node/cli.js is missing; run `npm run build` in the qgemm-webgpu folder\n');
  process.exit(1);
}
const { launch } = await import(launcher.href);
process.exitCode = await launch(process.argv.slice(2), fileURLToPath(import.meta.url), () => import(entry.href));
