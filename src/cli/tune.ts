// `qgemm tune` and the CLI's `--tuning FILE`: the command line around the tuner (src/tune.ts) and the
// tuning tables it writes (src/kernels/tuning.ts). `qgemm tune --budget 30s --out table.json` sweeps the
// kernel configurations on the WebGPU adapter, prints one line per measured configuration on stderr and a
// summary table on stdout (with how far each winner was verified, and what the budget left out), and writes
// the table atomically (nothing is written when the run fails);
// `--tuning FILE` (gemm, run, info) reads a table back for the context. Bad input is an InputError naming
// the flag: a budget below 1 s or one that does not parse, an unknown shape class, a file that is not a
// tuning table, a table of another adapter.

import { InputError } from '../errors.ts';
import { parseTuningTable, SHAPE_CLASSES, type TuningTable } from '../kernels/tuning.ts';
import { checkBudget, tune } from '../tune.ts';
import { MemoryBudget } from './budget.ts';
import { checkOut, InputFiles, type ReadRecord, resolveField, writeAtomic } from './files.ts';
import { parseStrictJson } from './json.ts';

const UNITS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 };

/** '30s', '5m', '1.5m', '90' (seconds), '1h' -> milliseconds; above 0, or an InputError naming `field`. */
export function parseBudget(field: string, text: string): number {
  const m = /^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h)?\s*$/.exec(text);
  if (!m) throw new InputError(field, `expected a time such as 30s, 5m or 90 (seconds), got ${JSON.stringify(text.slice(0, 40))}`);
  const ms = Number(m[1]) * UNITS[m[2] ?? 's'];
  if (!(ms > 0) || !Number.isFinite(ms)) {
    throw new InputError(field, `expected a finite time above 0, got ${JSON.stringify(text.slice(0, 40))}`);
  }
  return ms;
}

/** --classes square,decode -> the list; an unknown class is an InputError naming --classes. */
export function parseClasses(field: string, text: string): string[] {
  const list = text
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  for (const c of list) {
    if (!SHAPE_CLASSES.includes(c as (typeof SHAPE_CLASSES)[number])) {
      throw new InputError(field, `unknown shape class ${JSON.stringify(c.slice(0, 40))}; known: ${SHAPE_CLASSES.join(', ')}`);
    }
  }
  if (!list.length) throw new InputError(field, `expected one or more of ${SHAPE_CLASSES.join(', ')}`);
  const twice = list.find((c, i) => list.indexOf(c) !== i);
  if (twice !== undefined) throw new InputError(field, `${JSON.stringify(twice)} given twice: its shapes would be measured twice`);
  return list;
}

/**
 * Reads and checks a tuning table file (--tuning FILE): malformed JSON or schema name the flag. `inputs`:
 * the file as read, which the command's outputs must not replace (CommonOptions' two fields).
 */
export function readTuningFile(field: string, path: string): { gpu: { tuning: TuningTable; tuningName: string }; inputs: ReadRecord[] } {
  const files = new InputFiles(new MemoryBudget(64 * 2 ** 20));
  const text = files.readText(field, resolveField(field, path, HERE()), 16 * 2 ** 20);
  return { gpu: { tuning: parseTuningTable(parseStrictJson(text, field, field), field), tuningName: path }, inputs: files.read };
}

/** A flag's path: relative to the working folder, anywhere. */
const HERE = () => ({ baseDir: process.cwd(), confine: false });

export interface TuneCliOptions {
  backend: string;
  budget?: string;
  classes?: string;
  out: string;
  seed?: string;
  json?: boolean;
}

/** `qgemm tune`. */
export async function cmdTune(o: TuneCliOptions, io: { out(t: string): void; err(t: string): void }): Promise<void> {
  if (o.backend !== 'webgpu') throw new InputError('--backend', 'tune measures GPU kernels: use --backend webgpu');
  const budgetMs = o.budget === undefined ? undefined : parseBudget('--budget', o.budget);
  if (budgetMs !== undefined) checkBudget(budgetMs, '--budget');
  const classes = o.classes === undefined ? undefined : parseClasses('--classes', o.classes);
  const files = new InputFiles(new MemoryBudget(1));
  const seed = o.seed === undefined ? undefined : o.seed === 'none' ? null : readTuningFile('--seed', o.seed);
  for (const r of seed?.inputs ?? []) files.read.push(r); // the table written never replaces its seed
  const out = checkOut('--out', resolveField('--out', o.out, HERE()), files); // before the sweep: a bad path fails in a second
  const report = await tune({
    budgetMs,
    classes,
    ...(seed === undefined ? {} : { seed: seed?.gpu.tuning ?? null }),
    onProgress: (line) => io.err(`qgemm tune: ${line}\n`),
  });
  // A table with no entry would replace a tuned one with the rules: a budget too short measures nothing.
  // (Winners measured but refused by verification are written and listed as such, as before.)
  if (!report.table.entries.length && !report.refused.length) {
    throw new InputError(
      '--budget',
      `${o.budget ?? 'the default budget'} measured no shape on ${report.device}: give it more time (minutes on a GPU)`,
    );
  }
  writeAtomic('--out', out, new TextEncoder().encode(`${JSON.stringify(report.table, null, 2)}\n`), files);
  if (o.json) {
    io.out(`${JSON.stringify(report, null, 2)}\n`);
    return;
  }
  const lines = [`tuned on ${report.device}: ${report.table.entries.length} entries -> ${o.out}`];
  lines.push(
    'class     | M x N x K        | winner                         | GPU ms    | cv    | rules                  | rules ms  | seed                           | seed ms   | verified',
  );
  for (const e of report.table.entries) {
    const shape = `${e.shape.M}x${e.shape.N}x${e.shape.K}`;
    const v = report.verified.find((x) => x.id === e.id);
    const verified = !v ? '-' : v.problems === v.of ? `all ${v.of}` : `${v.problems} of ${v.of}`;
    lines.push(
      [
        e.class.padEnd(9), // 'decode-u4'
        shape.padEnd(16),
        (e.id ?? '').padEnd(30),
        (e.gpuMs ?? 0).toFixed(4).padStart(9),
        `${(100 * (e.cv ?? 0)).toFixed(1)}%`.padStart(5),
        (e.rulesId ?? '').padEnd(22),
        (e.rulesMs === undefined ? '-' : e.rulesMs.toFixed(4)).padEnd(9),
        (e.seedId ?? '-').padEnd(30),
        (e.seedMs === undefined ? '-' : e.seedMs.toFixed(4)).padEnd(9),
        verified,
      ].join(' | '),
    );
  }
  for (const r of report.refused) lines.push(`refused ${r.id} (failed verification: ${r.detail}); the rules serve its shapes`);
  const partly = report.verified.filter((v) => v.problems < v.of && !report.refused.some((r) => r.id === v.id));
  if (partly.length) {
    lines.push(
      `verified: ${partly.map((v) => v.id).join(', ')} on the verify suite's problems of their shape class (and more as time allowed), ` +
        'not the whole suite: the budget ran out (qgemm verify checks every kernel fully)',
    );
  }
  if (report.skipped.length) {
    const shapes = new Set(report.skipped.map((x) => `${x.class} ${x.shape}`));
    lines.push(
      `skipped ${report.skipped.length} configurations at ${shapes.size} shape${shapes.size === 1 ? '' : 's'}: they would not fit the budget (--json lists them)`,
    );
  }
  lines.push(`sweep ${(report.sweepMs / 1000).toFixed(1)} s, verification ${(report.verifyMs / 1000).toFixed(1)} s`);
  io.out(`${lines.join('\n')}\n`);
}
