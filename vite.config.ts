// Build and test configuration. `npm run build` runs every mode below, then tools/build-types.mjs.
// `vite build` makes the Node bundle (dist/node: the library's two entries index.js and cpu.js, and the
// CLI, with every dependency inlined except Dawn's `webgpu`, so dist/ runs without node_modules);
// `--mode bench` adds the benchmark (dist/node/bench.js and dist/node/bench-chunks/, never published);
// `--mode browser` makes the browser bundle (dist/browser/qgemm.js, and cpu.js, the CPU-only entry without
// the GPU code; the code both use in dist/browser/chunks, which they import by relative URL);
// `--mode studies` builds the accuracy studies (studies/*.ts, importing the library from src/) into dist/studies.
// Shaders are imported as text (`?raw`), so they stay real .wgsl files in the tree.
import { readdirSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { defineConfig } from 'vitest/config';

export default defineConfig(({ mode }) => {
  const test = {
    include: ['test/**/*.test.ts'],
    // test/lavapipe/ runs on Mesa's lavapipe only, through tools/test-lavapipe.sh (which sets QGEMM_LAVAPIPE).
    exclude: process.env.QGEMM_LAVAPIPE ? ['**/node_modules/**'] : ['**/node_modules/**', 'test/lavapipe/**'],
    pool: 'forks' as const,
    // Two test files at once at least: vitest's default (cores - 1) runs one at a time on a 2-core
    // machine, where SwiftShader's threads and the single-threaded tests then leave a core idle; two at
    // once took npm test's vitest run from 19.5 to 12.8 minutes on the 2-core CI machine kind.
    maxWorkers: Math.max(2, availableParallelism() - 1),
    // Hang guards, not timing checks: under two files at once the longest test took 79 s there.
    testTimeout: 240_000,
    hookTimeout: 240_000,
    reporters: ['default', './test/support/summary-reporter.ts'],
  };
  if (mode === 'demo') {
    // The demo page (demo/index.html + demo/main.ts, importing the library from src/): `npm run demo`
    // serves it, `npm run demo:build` writes dist/demo with relative asset paths (base './').
    return {
      root: 'demo',
      base: './',
      build: { outDir: '../dist/demo', emptyOutDir: true, target: 'es2022' },
    };
  }
  if (mode === 'browser') {
    // Both entries in one build: the code they share (the CPU path, the errors) is one chunk, so an error
    // thrown through one entry is an instance of the other's classes, and a page that loads both loads it once.
    return {
      build: {
        outDir: 'dist/browser',
        emptyOutDir: true,
        target: 'es2022',
        lib: { entry: { qgemm: 'src/index.ts', cpu: 'src/cpu.ts' }, formats: ['es' as const], fileName: (_, name) => `${name}.js` },
        rollupOptions: { external: ['webgpu'], output: { chunkFileNames: 'chunks/[name]-[hash].js' } },
      },
      test,
    };
  }
  if (mode === 'studies') {
    // One entry per studies/*.ts (e.g. dist/studies/lowbit-accuracy.js), run with node: `npm run study:lowbit`.
    const input = Object.fromEntries(
      readdirSync('studies')
        .filter((f) => f.endsWith('.ts'))
        .map((f) => [f.slice(0, -3), `studies/${f}`]),
    );
    return {
      build: {
        ssr: true,
        outDir: 'dist/studies',
        emptyOutDir: true,
        target: 'node20',
        rollupOptions: {
          input,
          external: ['webgpu'],
          output: { format: 'es' as const, entryFileNames: '[name].js', chunkFileNames: 'chunks/[name]-[hash].js' },
        },
      },
      ssr: { noExternal: true, external: ['webgpu'] },
    };
  }
  const bench = mode === 'bench';
  return {
    build: {
      ssr: true,
      outDir: 'dist/node',
      emptyOutDir: !bench, // the bench build runs second and adds bench.js
      target: 'node20',
      rollupOptions: {
        input: (bench
          ? { bench: 'bench/main.ts', token: 'bench/token.ts' }
          : { index: 'src/index.ts', cpu: 'src/cpu.ts', cli: 'src/cli/main.ts', launch: 'src/cli/launch.ts' }) as Record<string, string>,
        external: ['webgpu'],
        output: {
          format: 'es' as const,
          entryFileNames: '[name].js',
          chunkFileNames: bench ? 'bench-chunks/[name]-[hash].js' : 'chunks/[name]-[hash].js',
        },
      },
    },
    ssr: { noExternal: true, external: ['webgpu'] },
    test,
  };
});
