// `npm run bench`: the benchmark's entry, bundled by vite to dist/node/bench.js (every dependency
// inlined except Dawn's `webgpu`; onnxruntime-node is loaded from node_modules at run time). Flags and
// reports: bench/cli.ts; the harness: bench/harness.ts; how to run it anywhere: bench/README.md.
// process.exit() at the end: Dawn's binding otherwise takes a while to shut down.

import { runCli } from './cli.ts';

runCli(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (e) => {
    process.stderr.write(`bench: ${(e as Error).stack ?? e}\n`);
    process.exit(1);
  },
);
