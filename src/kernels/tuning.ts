// Tuning tables (the GEMM stage of pack -> gemm -> output): which kernel configuration (./kernel-configs.ts)
// measured fastest on one adapter, per measured shape, written by the tuner (src/tune.ts, `qgemm tune`)
// and read here. A table is keyed by its adapter (vendor, architecture, device; the driver's description
// is recorded beside them). The registry (./registry.ts) takes a table's choice before its own rules,
// in this order: a table committed under ./tuned/ (one JSON per GPU) for a matching adapter, else a table
// the user passes (GpuContext.create({ tuning }), `--tuning FILE`), else no table (the rules); the bench's
// `--tuning` alone takes the table passed first, to measure it, and the committed one for the shapes one
// of its entries is nearer to (`passedFirst`). An entry
// serves the shapes within a factor of 2 of its measured M, N and K (the nearest entry wins) whose rhs
// has its `rhsBits`: an entry of the 4-bit class ('decode-u4', rhsBits 4) serves a rhs of at most 4 bits
// only, the other entries (rhsBits 8, or absent) an 8-bit rhs only; a rhs of 5 to 7 bits is left to the
// rules. Every tuned kernel is self-tested on the device before its first use; one that fails is disabled
// with a warning and the rules serve that shape.

import { InputError } from '../errors.ts';
import { checkKnownKeys } from '../problem/check.ts';
import { brief } from '../problem/echo.ts';
import type { AdapterSummary } from '../gpu/adapter.ts';
import type { GemmShape } from '../gpu/plan.ts';
import { isObject, type KernelConfig, kernelOf, parseKernelConfig } from './kernel-configs.ts';
import type { GpuGemmKernel } from './types.ts';

export const TUNING_FORMAT = 'qgemm-tuning-1';
/**
 * The shape classes a table's entries belong to (what `qgemm tune --classes` accepts): squares, decode and
 * short prefill (M = 1, 16, 128), the suite's conv layers, and decode with 4-bit weights ('decode-u4').
 */
export const SHAPE_CLASSES = ['square', 'decode', 'conv', 'decode-u4'] as const;
export type ShapeClass = (typeof SHAPE_CLASSES)[number];

/** The rhs bits a class is measured with: 4 for the '-u4' classes (weights requantized to 4 bits), else 8. */
export const classRhsBits = (c: ShapeClass): 4 | 8 => (c.endsWith('-u4') ? 4 : 8);

/** The adapter a table was measured on. */
export interface TuningAdapter {
  vendor: string;
  architecture: string;
  device: string;
  /** The driver's description (recorded; a table still serves the same GPU under another driver). */
  description: string;
}

/** One measured shape: the winning configuration, its GPU time, and the registry rules' for comparison. */
export interface TuningEntry {
  class: ShapeClass;
  shape: { M: number; N: number; K: number };
  /** The rhs bits it was measured with and serves: 4 (the '-u4' classes), or 8 (absent: 8). */
  rhsBits?: 4 | 8 | undefined;
  kernel: KernelConfig;
  /** The winner's kernel id (informative: `kernel` is what is read). */
  id?: string | undefined;
  /** Median GPU time per call (ms) and its coefficient of variation over the batches. */
  gpuMs?: number | undefined;
  cv?: number | undefined;
  /** The kernel the rules choose for this shape and its median GPU time, measured in the same sweep. */
  rulesId?: string | undefined;
  rulesMs?: number | undefined;
  /** Configurations measured for this shape. */
  tried?: number | undefined;
  /** The seed table's kernel for this shape (a re-tune, src/tune.ts) and its median GPU time in this sweep. */
  seedId?: string | undefined;
  seedMs?: number | undefined;
}

export interface TuningTable {
  format: typeof TUNING_FORMAT;
  adapter: TuningAdapter;
  /** ISO date of the sweep. */
  created?: string | undefined;
  /** How it was measured (free text: warm-up, batches, operand sets, timer). */
  method?: string | undefined;
  entries: TuningEntry[];
}

/** The keys of a table, its adapter and an entry (TuningTable, TuningAdapter, TuningEntry). */
const TABLE_KEYS = ['format', 'adapter', 'created', 'method', 'entries'];
const ADAPTER_KEYS = ['vendor', 'architecture', 'device', 'description'];
const ENTRY_KEYS = ['class', 'shape', 'rhsBits', 'kernel', 'id', 'gpuMs', 'cv', 'rulesId', 'rulesMs', 'tried', 'seedId', 'seedMs'];

/** Checks a table read from JSON; an InputError names the field (`${field}.entries[2].kernel.tileM`). */
export function parseTuningTable(x: unknown, field = 'tuning'): TuningTable {
  if (!isObject(x)) throw new InputError(field, `expected a tuning table (a JSON object), got ${brief(x)}`);
  if (x.format !== TUNING_FORMAT) throw new InputError(`${field}.format`, `expected "${TUNING_FORMAT}", got ${brief(x.format)}`);
  // A misspelt key (`entires`, `gpuMS`, a kernel's `vecwords`) is refused: its default would serve unseen.
  checkKnownKeys(field, x, TABLE_KEYS);
  const a = x.adapter;
  if (!isObject(a)) throw new InputError(`${field}.adapter`, `expected an object, got ${brief(a)}`);
  checkKnownKeys(`${field}.adapter`, a, ADAPTER_KEYS);
  for (const key of ADAPTER_KEYS) {
    if (typeof a[key] !== 'string') throw new InputError(`${field}.adapter.${key}`, `expected a string, got ${brief(a[key])}`);
  }
  for (const key of ['created', 'method']) {
    if (x[key] !== undefined && typeof x[key] !== 'string')
      throw new InputError(`${field}.${key}`, `expected a string, got ${brief(x[key])}`);
  }
  if (!Array.isArray(x.entries)) throw new InputError(`${field}.entries`, `expected an array, got ${brief(x.entries)}`);
  const entries = Array.from(x.entries, (e: unknown, i: number): TuningEntry => {
    const f = `${field}.entries[${i}]`;
    if (!isObject(e)) throw new InputError(f, `expected an object, got ${brief(e)}`);
    checkKnownKeys(f, e, ENTRY_KEYS);
    if (!SHAPE_CLASSES.includes(e.class as ShapeClass)) {
      throw new InputError(`${f}.class`, `unknown shape class ${brief(e.class)}; known: ${SHAPE_CLASSES.join(', ')}`);
    }
    const s = e.shape;
    if (!isObject(s)) throw new InputError(`${f}.shape`, `expected { M, N, K }, got ${brief(s)}`);
    checkKnownKeys(`${f}.shape`, s, ['M', 'N', 'K']);
    for (const d of ['M', 'N', 'K']) {
      if (!Number.isSafeInteger(s[d]) || (s[d] as number) < 1)
        throw new InputError(`${f}.shape.${d}`, `expected a positive integer, got ${brief(s[d])}`);
    }
    if (e.rhsBits !== undefined && e.rhsBits !== 4 && e.rhsBits !== 8) {
      throw new InputError(`${f}.rhsBits`, `expected 4 or 8, got ${brief(e.rhsBits)}`);
    }
    if ((e.rhsBits ?? 8) !== classRhsBits(e.class as ShapeClass)) {
      throw new InputError(
        `${f}.rhsBits`,
        `class ${e.class} is measured with ${classRhsBits(e.class as ShapeClass)}-bit rhs, got ${brief(e.rhsBits)}`,
      );
    }
    for (const key of ['gpuMs', 'cv', 'rulesMs', 'seedMs', 'tried']) {
      if (e[key] !== undefined && !(typeof e[key] === 'number' && Number.isFinite(e[key]) && (e[key] as number) >= 0)) {
        throw new InputError(`${f}.${key}`, `expected a non-negative number, got ${brief(e[key])}`);
      }
    }
    for (const key of ['id', 'rulesId', 'seedId']) {
      if (e[key] !== undefined && typeof e[key] !== 'string')
        throw new InputError(`${f}.${key}`, `expected a string, got ${brief(e[key])}`);
    }
    return { ...(e as unknown as TuningEntry), kernel: parseKernelConfig(e.kernel, `${f}.kernel`) };
  });
  return { ...(x as unknown as TuningTable), entries };
}

/** The adapter fields a table is keyed by. */
export function tuningAdapter(s: Pick<AdapterSummary, 'vendor' | 'architecture' | 'device' | 'description'>): TuningAdapter {
  return { vendor: s.vendor, architecture: s.architecture, device: s.device, description: s.description };
}

/** Whether table t was measured on adapter s (vendor, architecture and device; any driver). */
export function tableMatches(t: TuningTable, s: TuningAdapter): boolean {
  return t.adapter.vendor === s.vendor && t.adapter.architecture === s.architecture && t.adapter.device === s.device;
}

const adapterName = (a: TuningAdapter) => [a.vendor, a.architecture, a.device].filter(Boolean).join(' / ') || 'an unnamed adapter';

/** The tables committed with the library (./tuned/*.json), by file name; each is checked when loaded. */
const COMMITTED: Record<string, unknown> = import.meta.glob('./tuned/*.json', { eager: true, import: 'default' });

/** Which table serves a device: where it came from, its name, and the kernel choice it makes. */
export interface TuningChoice {
  source: 'committed' | 'user' | 'rules';
  /** The committed file's name, the user's label (a CLI path), or '' for the rules. */
  name: string;
  table: TuningTable | null;
  /** The table's kernel for a shape, or null where no entry serves it (the rules choose). */
  kernelFor(shape: GemmShape): GpuGemmKernel | null;
  /** Every kernel the table names (the self-test and `force` reach them by id). */
  readonly kernels: readonly GpuGemmKernel[];
  /** `passedFirst` only: the committed table, whose entry serves a shape where it is nearer than `table`'s. */
  under?: { name: string; table: TuningTable };
}

/** The kernel of table t's nearest entry of the shape's rhs bits within a factor of 2 in M, N and K, or null. */
export function tunedKernel(t: TuningTable, shape: GemmShape): GpuGemmKernel | null {
  const e = tunedEntry(t, shape);
  return e ? kernelOf(e.kernel) : null;
}

/** Table t's nearest entry of the shape's rhs bits within a factor of 2 in M, N and K, or null. */
export function tunedEntry(t: TuningTable, shape: GemmShape): TuningEntry | null {
  return nearestEntry(t, shape)?.entry ?? null;
}

/** tunedEntry's entry and its distance: the sum of |log2| of the M, N and K ratios. */
function nearestEntry(t: TuningTable, shape: GemmShape): { entry: TuningEntry; distance: number } | null {
  const bits = shape.bitDepth?.rhs ?? 8;
  if (bits > 4 && bits < 8) return null;
  let best: { entry: TuningEntry; distance: number } | null = null;
  for (const e of t.entries) {
    if ((e.rhsBits ?? 8) !== (bits <= 4 ? 4 : 8)) continue;
    const d = [e.shape.M / shape.M, e.shape.N / shape.N, e.shape.K / shape.K].map((r) => Math.abs(Math.log2(r)));
    if (d.some((x) => x > 1)) continue;
    const distance = d[0] + d[1] + d[2];
    if (!best || distance < best.distance) best = { entry: e, distance };
  }
  return best;
}

/**
 * The table for adapter s: a committed one that matches it, else `user` (checked: an InputError names the
 * field of a malformed table, or `tuning.adapter` for a table of another adapter), else none. With
 * `passedFirst`, `user` comes first, and a committed table serves the shapes one of its entries is nearer
 * to than any of `user`'s (ties: `user`): the bench measuring a fresh table, which a tune cut short by its
 * budget may have left without some shapes.
 */
export function resolveTuning(
  s: TuningAdapter,
  user?: { table: unknown; name?: string },
  opts: { committed?: Record<string, unknown>; warn?: (message: string) => void; passedFirst?: boolean } = {},
): TuningChoice {
  const parsedUser = user ? parseTuningTable(user.table, 'tuning') : null;
  if (parsedUser && !tableMatches(parsedUser, s)) {
    throw new InputError(
      'tuning.adapter',
      `the table was measured on ${adapterName(parsedUser.adapter)}, this adapter is ${adapterName(s)}`,
    );
  }
  let committed: { name: string; table: TuningTable } | undefined;
  for (const [path, json] of Object.entries(opts.committed ?? COMMITTED)) {
    const table = parseTuningTable(json, path);
    if (!tableMatches(table, s)) continue;
    committed = { name: path.replace(/^.*\//, ''), table };
    break;
  }
  const userName = user?.name ?? 'the table passed';
  if (parsedUser && opts.passedFirst) return choice('user', userName, parsedUser, committed);
  if (committed) {
    if (parsedUser) opts.warn?.(`qgemm: tuning: the committed table ${committed.name} serves this adapter; the table passed is not used`);
    return choice('committed', committed.name, committed.table);
  }
  return parsedUser ? choice('user', userName, parsedUser) : choice('rules', '', null);
}

function choice(source: TuningChoice['source'], name: string, table: TuningTable | null, under?: TuningChoice['under']): TuningChoice {
  const entries = [...(table?.entries ?? []), ...(under?.table.entries ?? [])];
  const kernels = [...new Map(entries.map((e) => kernelOf(e.kernel)).map((k) => [k.id, k])).values()];
  const kernelFor = (shape: GemmShape) => {
    const own = table ? nearestEntry(table, shape) : null;
    const below = under ? nearestEntry(under.table, shape) : null;
    const e = below && (!own || below.distance < own.distance) ? below.entry : own?.entry;
    return e ? kernelOf(e.kernel) : null;
  };
  return { source, name, table, kernels, kernelFor, ...(under ? { under } : {}) };
}

/** One line for `qgemm info` and logs: which table serves, or the rules. */
export function describeTuning(c: Pick<TuningChoice, 'source' | 'name' | 'table' | 'under'>): string {
  if (!c.table) return "none (the registry's rules)";
  const what = c.source === 'committed' ? `committed table ${c.name}` : `table ${c.name}`;
  const line = `${what}, ${c.table.entries.length} entries${c.table.created ? `, tuned ${c.table.created.slice(0, 10)}` : ''}`;
  return c.under ? `${line}; the committed table ${c.under.name} where its entry is nearer` : line;
}
