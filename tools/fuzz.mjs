#!/usr/bin/env node
// `npm run fuzz -- [--budget N] [--seed S] [--backends cpu,no-adapter,webgpu]`: the bad-input fuzz harness
// (test/fuzz/harness.ts) at full size, through vitest (which runs the TypeScript sources): N generated
// cases per category and backend (default 300), a random seed unless given; prints the table
// category | backend | cases | clean, and exits non-zero when any case is unclean.
import { spawnSync } from 'node:child_process';

const args = process.argv.slice(2);
const opt = (name, fallback) => {
  const i = args.indexOf(`--${name}`);
  return i >= 0 && i + 1 < args.length ? args[i + 1] : fallback;
};
const env = {
  ...process.env,
  QGEMM_FUZZ_BUDGET: opt('budget', '300'),
  QGEMM_FUZZ_SEED: opt('seed', String(Math.floor(Math.random() * 2 ** 31))),
  QGEMM_FUZZ_BACKENDS: opt('backends', 'cpu,no-adapter,webgpu'),
};
console.log(`qgemm fuzz: ${env.QGEMM_FUZZ_BUDGET} per category and backend (${env.QGEMM_FUZZ_BACKENDS}), seed ${env.QGEMM_FUZZ_SEED}`);
const r = spawnSync('npx', ['vitest', 'run', 'test/fuzz/fuzz.test.ts'], { stdio: 'inherit', env });
process.exit(r.status ?? 1);
