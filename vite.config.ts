// Build and test configuration.
// `vite build` makes the Node bundle (dist/node: the library, the CLI and the benchmark entry, with every
// dependency inlined except Dawn's `webgpu`, so dist/ runs without node_modules);
// `vite build --mode browser` makes the browser bundle (dist/browser/qgemm.js) that Chromium loads.
// Shaders are imported as text (`?raw`) in both, so they stay real .wgsl files in the tree.
import { defineConfig } from 'vitest/config';

export default defineConfig(({ mode }) => {
  const test = {
    include: ['test/**/*.test.ts'],
    pool: 'forks' as const,
    testTimeout: 120_000,
    hookTimeout: 120_000,
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
    return {
      build: {
        outDir: 'dist/browser',
        emptyOutDir: true,
        target: 'es2022',
        lib: { entry: 'src/index.ts', formats: ['es' as const], fileName: () => 'qgemm.js' },
        rollupOptions: { external: ['webgpu'] },
      },
      test,
    };
  }
  return {
    build: {
      ssr: true,
      outDir: 'dist/node',
      emptyOutDir: true,
      target: 'node20',
      rollupOptions: {
        input: { index: 'src/index.ts', cli: 'src/cli/main.ts', bench: 'bench/main.ts' },
        external: ['webgpu'],
        output: { format: 'es' as const, entryFileNames: '[name].js' },
      },
    },
    ssr: { noExternal: true, external: ['webgpu'] },
    test,
  };
});
