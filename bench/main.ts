// `npm run bench`: the benchmark's entry, bundled by vite to dist/node/bench.js (every dependency
// inlined except Dawn's `webgpu`; onnxruntime-node is loaded from node_modules at run time). Flags and
// reports: bench/cli.ts; the harness: bench/harness.ts; how to run it anywhere: bench/README.md.
// process.exit() at the end: Dawn's binding otherwise takes a while to shut down.

import { runCli } from './cli.ts';

runCli(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (e) => {
    // One line (the stack with QGEMM_DEBUG=1, as for qgemm); bad flags and input are exit 2 in runCli.
    process.stderr.write(
      `bench: ${process.env.QGEMM_DEBUG ? ((e as Error).stack ?? e) : String((e as Error).message ?? e).split('\n')[0]}\n`,
    );
    process.exit(1);
  },
);
