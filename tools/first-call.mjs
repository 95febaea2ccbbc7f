// First use, measured: how long a fresh process takes for its first WebGPU GEMM, against a bare
// `qgemm --version` (Node start and the CLI bundle alone), and, in one process, the first `ctx.gemm`
// per kernel (shader compilation included) against a warm call of the same problem. Nearly all of the
// difference is pipeline creation (the WGSL compile of the GEMM kernel and its epilogue). Runs the
// built bundle (`npx vite build` first): `node tools/first-call.mjs [--kernels id,id] [--reps 3]`.
// Prints a table; wall times on whatever machine runs it, so note its load (the script prints loadavg).

import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

const REPO = resolve(import.meta.dirname, '..');
const BIN = join(REPO, 'bin/qgemm.mjs');
const args = process.argv.slice(2);
const opt = (name, dflt) => {
  const i = args.indexOf(name);
  return i >= 0 ? args[i + 1] : dflt;
};
const reps = Number(opt('--reps', '1'));

if (args[0] === '--child') {
  // In-process: the first and the second ctx.gemm of one problem on one kernel, on a fresh device.
  const { GpuContext } = await import(join(REPO, 'dist/node/index.js'));
  const [kernel, m, n, k] = [args[1], Number(args[2]), Number(args[3]), Number(args[4])];
  const ctx = await GpuContext.create({ kernel });
  const problem = {
    lhs: { data: Uint8Array.from({ length: m * k }, (_, i) => i % 251), rows: m, cols: k },
    rhs: { data: Uint8Array.from({ length: k * n }, (_, i) => i % 239), rows: k, cols: n },
    lhsZeroPoint: 3,
    pipeline: [
      { type: 'scaleInt32ByFixedPointAndExponent', multiplier: 1518500250, exponent: -8, offsetAfterShift: 128, rounding: 'double' },
      { type: 'saturatingCast', to: 'uint8' },
    ],
  };
  const t0 = performance.now();
  await ctx.gemm(problem);
  const first = performance.now() - t0;
  const t1 = performance.now();
  await ctx.gemm(problem);
  const warm = performance.now() - t1;
  console.log(JSON.stringify({ kernel: ctx.lastRun.kernel, first, warm }));
  ctx.destroy();
  process.exit(0);
}

const timeIt = (argv, cwd) => {
  const t0 = performance.now();
  const r = spawnSync(process.execPath, argv, { cwd, encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`${argv.join(' ')}: exit ${r.status}: ${r.stderr}`);
  return { ms: performance.now() - t0, out: r.stdout };
};
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const fmt = (ms) => (ms >= 1000 ? `${(ms / 1000).toFixed(2)} s` : `${ms.toFixed(0)} ms`);

console.log(
  `node ${process.version}, ${execFileSync('nproc').toString().trim()} cores, loadavg ${loadavg()
    .map((x) => x.toFixed(2))
    .join(' ')}`,
);
const dir = mkdtempSync(join(tmpdir(), 'qgemm-first-'));
try {
  const { serializeNpy } = await import(join(REPO, 'dist/node/index.js'));
  const npy = (rows, cols) =>
    serializeNpy({
      dtype: 'uint8',
      shape: [rows, cols],
      fortranOrder: false,
      data: Uint8Array.from({ length: rows * cols }, (_, i) => i % 200),
    });
  writeFileSync(join(dir, 'A.npy'), npy(7, 3));
  writeFileSync(join(dir, 'B.npy'), npy(3, 5));
  const version = [];
  const gemm = [];
  for (let i = 0; i < reps; i++) {
    version.push(timeIt([BIN, '--version'], dir).ms);
    gemm.push(timeIt([BIN, 'gemm', '--lhs', 'A.npy', '--rhs', 'B.npy', '--out', 'C.npy', '--backend', 'webgpu'], dir).ms);
  }
  const v = median(version);
  const g = median(gemm);
  console.log('\nCLI, fresh process each (median of', reps, ')');
  console.log(`  qgemm --version                        ${fmt(v)}`);
  console.log(`  qgemm gemm --backend webgpu, 7x5x3     ${fmt(g)}  (${(g / v).toFixed(1)}x --version)`);

  const kernels = opt('--kernels', 'dot4-32x32,dot4-64x64,dot4-128x128,gemv,splitk-32x32').split(',');
  const shapes = { gemv: [1, 64, 32], 'splitk-32x32': [16, 64, 4096] };
  console.log('\nLibrary, fresh process per kernel: first ctx.gemm vs the second (same problem)');
  console.log('  kernel            M x N x K        first      warm');
  for (const kernel of kernels) {
    const [m, n, k] = shapes[kernel] ?? [16, 64, 32];
    const r = spawnSync(process.execPath, [import.meta.filename, '--child', kernel, String(m), String(n), String(k)], { encoding: 'utf8' });
    const line = r.stdout.trim().split('\n').at(-1) ?? '';
    if (r.status !== 0 || !line.startsWith('{')) {
      console.log(
        `  ${kernel.padEnd(17)} failed: ${(
          r.stderr
            .trim()
            .split('\n')
            .find((l) => /Error/.test(l)) ?? r.stderr.trim()
        ).slice(0, 150)}`,
      );
      continue;
    }
    const x = JSON.parse(line);
    console.log(`  ${x.kernel.padEnd(17)} ${`${m}x${n}x${k}`.padEnd(16)} ${fmt(x.first).padStart(8)}  ${fmt(x.warm).padStart(8)}`);
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}
