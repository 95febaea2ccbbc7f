// `qgemm tune` and tune(): the kernel tuner. On the user's adapter it sweeps kernel configurations
// (src/kernels/kernel-configs.ts: the registry's kernels as they are, the subgroup-matrix tilings, the dot4
// tilings) over the shapes of each shape class (squares; decode at M = 1, 16, 128; the benchmark suite's
// convolution layers, run as conv2d runs them; decode at 4-bit weights over the kernels that read them
// two per byte) within a time budget, in the order searchPick chooses (after the rules' kernel, a seed
// table's choice, then the configurations nearest the fastest so far, turn about with the families'
// order), measures each pack -> gemm -> output call's GPU time, checks every winner bit for bit on the fixed suite of `qgemm verify` (src/verify.ts), and returns a
// tuning table keyed by the adapter (src/kernels/tuning.ts) that GpuContext.create({ tuning }) and
// `--tuning FILE` take.
//
// Measurement (./tune-measure.ts): per configuration and shape, the `resident` inference call with rhs
// prepacked, rotating operand sets, a warm-up, then batches of GPU time: their median and coefficient of
// variation. On a hardware adapter a heater (./gpu/heater.ts) keeps the GPU busy through each
// configuration's set-up, so that its clocks are up when the warm-up starts. The rules' own kernel is
// measured first at every shape, so each entry carries the comparison.
// The budget holds (./tune-budget.ts): the sweep takes SWEEP_SHARE of it and starts a configuration only
// where its predicted cost (set-up and compilation as measured in its family, warm-up, shortest batches)
// fits; a shape's winner runs the verify suite's problems of its shape class (the conv class: with the
// suite's convolution layers, their lhs read from the input as conv2d does) at once, whatever the time
// (inside the sweep's share, so later shapes get less), and the winners run the rest of the suite at the
// end while each problem fits the budget. The report says what was skipped and which winners were fully
// verified; a winner that fails is dropped (the rules serve its shapes).

import { InputError } from './errors.ts';
import { acquireDevice } from './gpu/acquire.ts';
import {
  type Clock,
  performanceClock,
  problemClass,
  TuneBudget,
  type VerifyItem,
  type WinnerVerification,
  WinnerVerifier,
} from './tune-budget.ts';
import { describeAdapter } from './gpu/adapter.ts';
import { Heater } from './gpu/heater.ts';
import { describeToggles } from './gpu/toggles.ts';
import type { AdapterCaps } from './gpu/caps.ts';
import type { GemmShape } from './gpu/plan.ts';
import { candidateConfigs, configDistance, type KernelConfig, kernelOf } from './kernels/kernel-configs.ts';
import { GPU_KERNELS, selectGemmKernel } from './kernels/registry.ts';
import {
  classRhsBits,
  parseTuningTable,
  SHAPE_CLASSES,
  type ShapeClass,
  TUNING_FORMAT,
  type TuningEntry,
  type TuningTable,
  tableMatches,
  tunedEntry,
  tuningAdapter,
} from './kernels/tuning.ts';
import { PACK_FORMATS, prepackFormat } from './pack/formats.ts';
import { type GpuGemmKernel, kernelFormats } from './kernels/types.ts';
import { checkContextOptions, GpuContext } from './scheduler/context.ts';
import { brief } from './problem/echo.ts';
import { checkFunction } from './problem/check.ts';
import type { GemmProblem } from './types.ts';
import {
  BATCH_MS,
  classBitDepth,
  HARDWARE_SHAPES,
  MAX_BATCHES,
  MAX_WARMUP_MS,
  MIN_BATCHES,
  type Mnk,
  measure,
  MAX_OPERAND_SETS,
  MIN_OPERAND_SETS,
  ROTATION_BYTES,
  SOFTWARE_SHAPES,
  NEXT_WARMUP_MS,
  WARMUP_MS,
} from './tune-measure.ts';
import { verifyGpuKernel, verifyProblems } from './verify.ts';
import { type ConvVerifyProblem, verifyConvProblems } from './verify-problems.ts';

export const DEFAULT_BUDGET_MS = 5 * 60_000;
const SWEEP_SHARE = 0.8;

export interface TuneOptions {
  /** Time budget in milliseconds (default 5 minutes); more than 0. */
  budgetMs?: number | undefined;
  /** Shape classes to sweep (default all: square, decode, conv, decode-u4). */
  classes?: readonly string[] | undefined;
  /** Run on this device instead of acquiring one. */
  device?: GPUDevice | undefined;
  /** Progress lines (one per measured configuration, one per verified winner). */
  onProgress?: ((line: string) => void) | undefined;
  /** At most this many configurations per shape, the rules' kernel included (default: as the budget allows). */
  maxCandidates?: number | undefined;
  /** The clock the budget is kept by (default: performance.now). */
  clock?: Clock | undefined;
  /**
   * A table of this adapter to search around: at each shape its entry's kernel is measured right after
   * the rules' kernel, then the configurations nearest the fastest so far. Default: the table that serves
   * the adapter (a committed one, src/kernels/tuned/), so a re-tune starts from the last one; null: none.
   */
  seed?: TuningTable | null | undefined;
  /**
   * Keep the GPU busy through each configuration's set-up (src/gpu/heater.ts), so that its clocks have
   * not fallen when the warm-up starts. Default: on a hardware adapter; on a CPU emulation it only
   * takes cores from the set-up.
   */
  heater?: boolean | undefined;
}

export interface TuneReport {
  table: TuningTable;
  /** The adapter, in one line. */
  device: string;
  /** Winners that failed verification (their shapes are left to the rules). */
  refused: { id: string; detail: string }[];
  /** Per winner: the verify problems of its own class, all it ran, and how many of the suite it can run. */
  verified: WinnerVerification[];
  /** Configurations not measured: they would not have fit the budget (or threw), per shape. */
  skipped: { class: ShapeClass; shape: string; id: string; why: string }[];
  /** Wall time of the sweep (the device's acquisition included) and of the verification (its problems, wherever they ran). */
  sweepMs: number;
  verifyMs: number;
}

/** The options tune() takes: another key (a misspelt `budget`) is an InputError, not a 5-minute default. */
const TUNE_OPTIONS = ['budgetMs', 'classes', 'device', 'onProgress', 'maxCandidates', 'clock', 'seed', 'heater'];

/**
 * The least budget that can measure a configuration: the sweep's share of it must hold the first
 * configuration's warm-up and its shortest batches (1 s).
 */
export const MIN_BUDGET_MS = Math.ceil((WARMUP_MS + MIN_BATCHES * BATCH_MS) / SWEEP_SHARE / 1000) * 1000;

/** A budget below MIN_BUDGET_MS: an InputError naming `field`, before any work. */
export function checkBudget(budgetMs: number, field: string): void {
  if (budgetMs < MIN_BUDGET_MS) {
    throw new InputError(
      field,
      `at least ${MIN_BUDGET_MS / 1000} s: the first configuration's warm-up alone takes ${WARMUP_MS} ms (minutes on a GPU are usual)`,
    );
  }
}

/** Checks the options; an InputError names the field as the caller wrote it. */
function checkOptions(o: TuneOptions): { budgetMs: number; classes: ShapeClass[]; seed: TuningTable | null | undefined } {
  if (!o || typeof o !== 'object' || Array.isArray(o)) throw new InputError('options', `expected an object, got ${brief(o)}`);
  for (const key of Object.keys(o)) {
    if (!TUNE_OPTIONS.includes(key)) throw new InputError(key, `unknown option; known: ${TUNE_OPTIONS.join(', ')}`);
  }
  if (o.device !== undefined) checkContextOptions({ device: o.device });
  checkFunction('onProgress', o.onProgress);
  if (o.classes !== undefined && !Array.isArray(o.classes)) {
    throw new InputError('classes', `expected an array of shape classes (${SHAPE_CLASSES.join(', ')}), got ${brief(o.classes)}`);
  }
  const budgetMs = o.budgetMs ?? DEFAULT_BUDGET_MS;
  if (typeof budgetMs !== 'number' || !Number.isFinite(budgetMs) || budgetMs <= 0) {
    throw new InputError('budgetMs', `expected a time in milliseconds above 0, got ${brief(budgetMs)}`);
  }
  checkBudget(budgetMs, 'budgetMs');
  const classes = [...(o.classes ?? SHAPE_CLASSES)];
  for (const c of classes) {
    if (!SHAPE_CLASSES.includes(c as ShapeClass)) {
      throw new InputError('classes', `unknown shape class ${brief(c)}; known: ${SHAPE_CLASSES.join(', ')}`);
    }
  }
  if (!classes.length) throw new InputError('classes', 'expected at least one shape class');
  const twice = classes.find((c, i) => classes.indexOf(c) !== i);
  if (twice !== undefined) throw new InputError('classes', `${brief(twice)} given twice: its shapes would be measured twice`);
  if (o.clock !== undefined) {
    const now = (o.clock as { now?: unknown } | null)?.now;
    let t: unknown;
    try {
      t = typeof now === 'function' ? (now as () => unknown).call(o.clock) : undefined;
    } catch {
      t = undefined; // a now() that throws is no clock either
    }
    if (typeof t !== 'number' || !Number.isFinite(t)) {
      throw new InputError('clock', `expected an object whose now() returns a time in milliseconds, got ${brief(o.clock)}`);
    }
  }
  if (o.heater !== undefined && typeof o.heater !== 'boolean')
    throw new InputError('heater', `expected true or false, got ${brief(o.heater)}`);
  const m = o.maxCandidates;
  if (m !== undefined && (typeof m !== 'number' || !Number.isInteger(m) || m < 1)) {
    throw new InputError('maxCandidates', `expected an integer of at least 1 (the rules' kernel is one), got ${brief(m)}`);
  }
  const seed = o.seed === undefined || o.seed === null ? o.seed : parseTuningTable(o.seed, 'seed');
  return { budgetMs, classes: classes as ShapeClass[], seed };
}

/** The shape a class measures: its rhs bits asked for where they are 4 (the '-u4' classes). */
const shapeOf = ([M, N, K]: Mnk, rhsBits: 4 | 8 = 8): GemmShape => {
  const bitDepth = classBitDepth(rhsBits);
  return { M, N, K, dstType: 'uint8', dstOrder: 'row-major', ...(bitDepth ? { bitDepth } : {}) };
};
/** The shape the registry's supports() sees for a verify problem. */
/** A problem of the winners' verification: a GEMM, or a convolution layer (its lhs given as the input). */
type VerifyCase = Pick<ConvVerifyProblem, 'gemm'> & Partial<Pick<ConvVerifyProblem, 'patches'>>;

const problemShape = (p: GemmProblem): GemmShape => ({
  M: p.lhs.rows,
  N: p.rhs.cols,
  K: p.lhs.cols,
  dstType: 'int32',
  dstOrder: p.dstOrder ?? 'row-major',
  bitDepth: p.bitDepth,
});

/**
 * The configurations to try at a shape, best bets first after the rules' own kernel (and after `seed`, a
 * previous table's choice for the shape, where given and runnable): configurations are
 * taken from each family in turn (registry, sgmat, dot4-wide, dot4-tiled), so a short budget still
 * compares families; within the subgroup-matrix family, split-K first at M <= 128 (last above), larger
 * tiles first where the shape fills them; at M <= 128, the registry's skinny kernels (gemv, split-K)
 * first. Only kernels that read rhs values of the width it is prepacked in: a 4-bit rhs (the '-u4'
 * classes) two per byte where the adapter reads nibbles (gemv-u4, split-K u4, the sgmat '-u4' tilings).
 */
export function candidates(caps: AdapterCaps, shape: GemmShape, rules: GpuGemmKernel, seed?: KernelConfig): GpuGemmKernel[] {
  const width = PACK_FORMATS[prepackFormat(caps, 'rhs', shape.bitDepth?.rhs ?? 8)].valueBits;
  const readsRhs = (k: GpuGemmKernel) => PACK_FORMATS[kernelFormats(k).rhs].valueBits === width;
  const byFamily = new Map<string, KernelConfig[]>();
  for (const c of candidateConfigs(caps)) {
    const list = byFamily.get(c.family) ?? [];
    list.push(c);
    byFamily.set(c.family, list);
  }
  const big = shape.M >= 1024 && shape.N >= 1024;
  // Few rows: the registry's skinny kernels (gemv, split-K) before its tiles.
  const skinny = (c: KernelConfig) => (c.family === 'registry' && /^(gemv|splitk)/.test(c.id) ? 0 : 1);
  if (shape.M <= 128) byFamily.get('registry')?.sort((a, b) => skinny(a) - skinny(b));
  byFamily.get('sgmat')?.sort((a, b) => {
    if (a.family !== 'sgmat' || b.family !== 'sgmat') return 0;
    const area = (x: typeof a) => x.tileM * x.tileN;
    // Split-K tilings first at M <= 128 (few tiles), last above.
    const split = (x: typeof a) => Number((x.splitK ?? 1) !== 1) ^ Number(shape.M <= 128);
    return (
      split(a) - split(b) ||
      (big ? area(b) - area(a) : area(a) - area(b)) ||
      b.buffers - a.buffers ||
      Math.abs(a.kStep - 64) - Math.abs(b.kStep - 64)
    );
  });
  const lists = [...byFamily.values()];
  const out: GpuGemmKernel[] = [rules];
  const seen = new Set([rules.id]);
  if (seed) lists.unshift([seed]);
  for (let i = 0; lists.some((l) => i < l.length); i++) {
    for (const l of lists) {
      if (i >= l.length) continue;
      // Measured without the self-test of a table's kernels: every winner is verified on the full suite after.
      const k = { ...kernelOf(l[i]), needsSelfTest: false };
      if (!seen.has(k.id) && k.supports(caps, shape) && readsRhs(k)) {
        seen.add(k.id);
        out.push(k);
      }
    }
  }
  return out;
}

/**
 * The tuner's search at one shape (TuneBudget.sweepShape's `pick`): after the rules' kernel, the seed's
 * (where there is one); then, turn about, the untried configuration nearest the fastest measured so far
 * (configDistance at most 2, the nearest first, in the candidates' order among equals) and the next in
 * the candidates' order (every family keeps its turn); with a seed, two nearest for each next, since the
 * seed's neighbourhood is where a re-tune looks first.
 */
export function searchPick(
  configOf: (id: string) => KernelConfig,
  seedId: string | undefined,
): (left: readonly { id: string }[], measured: readonly { candidate: { id: string }; m: { ms: number } }[]) => number {
  let turn = 0;
  return (left, measured) => {
    const seedAt = seedId === undefined ? -1 : left.findIndex((c) => c.id === seedId);
    if (seedAt >= 0) return seedAt;
    turn++;
    if (!measured.length || turn % (seedId === undefined ? 2 : 3) === 0) return 0;
    const best = configOf(measured.reduce((a, b) => (b.m.ms < a.m.ms ? b : a)).candidate.id);
    let at = 0;
    let nearest = 3;
    for (const [i, c] of left.entries()) {
      const d = configDistance(best, configOf(c.id));
      if (d < nearest) [at, nearest] = [i, d];
      if (d <= 1) break; // an untried configuration is never 0 away: the first at 1 is the nearest
    }
    return at;
  };
}

/** Sweeps, verifies, and returns the tuning table of this adapter. */
export async function tune(opts: TuneOptions = {}): Promise<TuneReport> {
  const { budgetMs, classes, seed: seedOption } = checkOptions(opts);
  const log = opts.onProgress ?? (() => {});
  const clock = opts.clock ?? performanceClock;
  const t0 = clock.now();
  const acquired = await acquireDevice({ allowSoftware: true, device: opts.device });
  const device = acquired.device;
  let heater: Heater | null = null;
  try {
    const probe = await GpuContext.create({ device });
    const caps = probe.caps;
    const toggles = describeToggles(acquired.toggles);
    const seed = seedOption === undefined ? probe.tuning.table : seedOption;
    probe.destroy();
    if (seed && !tableMatches(seed, tuningAdapter(acquired.summary))) {
      throw new InputError('seed.adapter', `the seed table was measured on another adapter (${describeAdapter(acquired.summary)} here)`);
    }
    const configById = new Map([...(seed?.entries.map((e) => e.kernel) ?? []), ...candidateConfigs(caps)].map((c) => [kernelOf(c).id, c]));
    const configOf = (id: string): KernelConfig => {
      let c = configById.get(id);
      if (!c) configById.set(id, (c = { family: 'registry', id })); // one object per id: configDistance caches by it
      return c;
    };
    const shapes = classes.flatMap((c) => (caps.isSoftware ? SOFTWARE_SHAPES : HARDWARE_SHAPES)[c].map((s) => [c, s] as const));
    // A GPU's clocks kept up through each configuration's set-up (by default not on a CPU emulation, whose
    // "GPU" is these cores; there, where asked for, with few rounds a dispatch).
    heater = !(opts.heater ?? !caps.isSoftware)
      ? null
      : await Heater.create(device, caps.isSoftware ? 16 : undefined).catch((e) => {
          log(`no heater (${(e as Error).message.split('\n')[0]}): the warm-ups alone raise the clocks`);
          return null;
        });
    const budget = new TuneBudget(clock, budgetMs - (clock.now() - t0), SWEEP_SHARE, {
      warmupMs: WARMUP_MS,
      nextWarmupMs: NEXT_WARMUP_MS,
      batchMs: BATCH_MS,
      minBatches: MIN_BATCHES,
    });
    const entries: (TuningEntry & { winner: GpuGemmKernel })[] = [];
    // Every winner bit for bit against the reference, one verify problem at a time: those of its shape
    // class as soon as it wins (inside the sweep's time), the rest of the suite as the budget allows at the
    // end; a failure drops its entries.
    // The suite's convolution layers are of the conv class, their lhs read from the input as conv2d runs them.
    const macs = (p: GemmProblem) => p.lhs.rows * p.rhs.cols * p.lhs.cols;
    const suite: VerifyItem<VerifyCase>[] = [
      ...verifyProblems().map((p) => ({
        problem: { gemm: p },
        class: problemClass(p.lhs.rows, p.rhs.cols, p.lhs.cols, p.bitDepth?.rhs),
        macs: macs(p),
      })),
      ...verifyConvProblems().map((c) => ({ problem: c, class: 'conv' as const, macs: macs(c.gemm) })),
    ];
    const kernelsById = new Map<string, GpuGemmKernel>();
    const verifier = new WinnerVerifier(
      budget,
      suite,
      (id, p) => (kernelsById.get(id) as GpuGemmKernel).supports(caps, problemShape(p.gemm)),
      async (id, p) => {
        const k = kernelsById.get(id) as GpuGemmKernel;
        const row = await verifyGpuKernel(device, k, p.patches ? [] : [p.gemm], {
          kernels: [k, ...GPU_KERNELS],
          conv: p.patches ? [p as ConvVerifyProblem] : [],
        });
        return row.mismatches === 0 && row.problems === 1 ? '' : row.detail || 'did not run';
      },
    );
    const skipped: TuneReport['skipped'] = [];
    for (const [i, [cls, mnk]] of shapes.entries()) {
      const bits = classRhsBits(cls);
      const shape = shapeOf(mnk, bits);
      // The rules' kernel for the rhs as it is prepacked (4-bit classes: nibbles where the adapter reads them).
      const rules = selectGemmKernel(caps, shape, { force: '', rhsPackFormat: prepackFormat(caps, 'rhs', bits) });
      const seedEntry = seed ? tunedEntry(seed, shape) : null;
      const all = candidates(caps, shape, rules, seedEntry?.kernel);
      const list = all.slice(0, opts.maxCandidates ?? Infinity);
      const byId = new Map(list.map((k) => [k.id, k]));
      const seedId = seedEntry && byId.has(kernelOf(seedEntry.kernel).id) ? kernelOf(seedEntry.kernel).id : undefined;
      const where = `${cls} ${mnk.join('x')}`;
      if (seedEntry && !seedId) {
        const id = kernelOf(seedEntry.kernel).id;
        const why = all.some((k) => k.id === id) ? `is past maxCandidates (${opts.maxCandidates})` : 'does not run this shape here';
        log(`${where}: the seed's ${id} ${why}: not measured`);
      }
      const family = (k: GpuGemmKernel) => configOf(k.id).family;
      const result = await budget.sweepShape(
        i,
        shapes.length,
        list.map((k) => ({ id: k.id, family: family(k) })),
        async (c, deadline, warmupMs) => {
          const m = await measure(device, byId.get(c.id) as GpuGemmKernel, mnk, deadline, clock, {
            rhsBits: bits,
            warmupMs,
            heater: heater ?? undefined,
          });
          const warm = `warm-up ${(m.warmupMs / 1000).toFixed(1)} s${m.steady ? '' : ', not steady'}`;
          log(`${where}: ${c.id} ${m.ms.toFixed(4)} ms (cv ${(100 * m.cv).toFixed(1)}%, ${m.batches} batches, ${warm})`);
          return m;
        },
        (id) => verifier.predictOwn(cls, id),
        searchPick(configOf, seedId),
      );
      for (const x of result.skipped) {
        skipped.push({ class: cls, shape: mnk.join('x'), ...x });
        log(`${where}: ${x.id} skipped (${x.why})`);
      }
      const rulesMs = result.measured.find((x) => x.candidate.id === rules.id)?.m.ms;
      const seedMs = result.measured.find((x) => x.candidate.id === seedId)?.m.ms;
      let best: (typeof result.measured)[number] | null = null;
      for (const x of result.measured) if (!best || x.m.ms < best.m.ms) best = x;
      if (!best) continue;
      const winner = byId.get(best.candidate.id) as GpuGemmKernel;
      const config = configOf(winner.id);
      entries.push({
        class: cls,
        shape: { M: mnk[0], N: mnk[1], K: mnk[2] },
        ...(bits === 4 ? { rhsBits: 4 as const } : {}),
        kernel: config,
        id: winner.id,
        gpuMs: best.m.ms,
        cv: best.m.cv,
        rulesId: rules.id,
        ...(rulesMs === undefined ? {} : { rulesMs }),
        ...(seedId === undefined ? {} : { seedId, ...(seedMs === undefined ? {} : { seedMs }) }),
        tried: result.measured.length,
        winner,
      });
      kernelsById.set(winner.id, winner);
      const v = await verifier.own(winner.id, cls);
      log(
        `${where}: verify ${winner.id} on the ${cls} problems of the suite: ${v.detail ? `MISMATCH (${v.detail})` : `exact (${v.problems} in all)`}`,
      );
    }
    await verifier.rest();
    const verified = verifier.results();
    const verifyMs = verified.reduce((a, v) => a + v.ms, 0);
    const sweepMs = clock.now() - t0 - verifyMs;
    const refused: TuneReport['refused'] = [];
    for (const v of verified) {
      const full = v.problems === v.of ? 'all' : `${v.problems} (${v.classProblems} of its classes first)`;
      log(`verify ${v.id}: ${full} of ${v.of} problems, ${v.detail ? 'MISMATCH' : 'exact'}, ${(v.ms / 1000).toFixed(1)} s`);
      if (v.detail || v.problems === 0) refused.push({ id: v.id, detail: v.detail || 'no problem of the suite ran' });
    }
    const ok = new Set(verified.filter((v) => !refused.some((r) => r.id === v.id)).map((v) => v.id));
    const fully = verified.filter((v) => ok.has(v.id) && v.problems === v.of).length;
    const table: TuningTable = {
      format: TUNING_FORMAT,
      adapter: tuningAdapter(acquired.summary),
      created: new Date().toISOString(),
      method:
        `rhs prepacked, operand sets in rotation (${acquired.summary.isSoftware ? MIN_OPERAND_SETS : `as many as hold ${ROTATION_BYTES >> 20} MiB, ${MIN_OPERAND_SETS} to ${MAX_OPERAND_SETS}`}), warm-up >= ${WARMUP_MS} ms per shape and ${NEXT_WARMUP_MS} ms per later configuration, ` +
        `then until the calls are steady (at most ${MAX_WARMUP_MS} ms), batches >= ${BATCH_MS} ms ` +
        `(${MIN_BATCHES}-${MAX_BATCHES}), median and coefficient of variation of the batches; ` +
        `${caps.timestamps ? 'GPU time (timestamp queries)' : 'wall time (no timestamp queries)'}; budget ${Math.round(budgetMs / 1000)} s; Dawn toggles: ${toggles}; ` +
        `winners verified bit for bit: ${fully} of ${ok.size} on the whole verify suite, the others on its problems of their shape class and as many more as the budget allowed`,
      entries: entries.filter((e) => ok.has(e.winner.id)).map(({ winner: _, ...e }) => e),
    };
    return { table, device: describeAdapter(acquired.summary), refused, verified, skipped, sweepMs, verifyMs };
  } finally {
    await heater?.destroy();
    if (!opts.device) device.destroy();
  }
}
