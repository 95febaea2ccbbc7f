// The fuzz harness of test/fuzz/harness.ts as a test: by default a short seeded smoke (6 cases per
// category and backend, cpu, no-adapter and webgpu: the CLI's bad specs and flags, library misuse, bad
// layer and graph parameters; bad input is refused before any device is asked for), part of `npm test`;
// `npm run fuzz` (tools/fuzz.mjs) sets QGEMM_FUZZ_* for a full run (e.g. 300 cases per category and
// backend, a random seed) and prints the category table.

import { expect, it } from 'vitest';
import { formatReport, runFuzz } from './harness.ts';

const env = process.env;
const perCategory = Number(env.QGEMM_FUZZ_BUDGET ?? 6);
const seed = Number(env.QGEMM_FUZZ_SEED ?? 20261125);
const backends = (env.QGEMM_FUZZ_BACKENDS ?? 'cpu,no-adapter,webgpu').split(',');

it(`bad inputs by category: ${perCategory} per category and backend (${backends.join(', ')}), seed ${seed}`, async () => {
  const report = await runFuzz({ seed, perCategory, backends, timeBoundMs: Number(env.QGEMM_FUZZ_TIME_BOUND_MS ?? 60_000) });
  const table = formatReport(report);
  if (env.QGEMM_FUZZ_BUDGET) console.log(`\n${table}\n`);
  const unclean = report.rows.filter((r) => r.clean !== r.cases);
  expect(unclean, table).toEqual([]);
}, 3_600_000);
