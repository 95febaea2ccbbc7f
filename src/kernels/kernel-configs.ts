// Kernel configurations as data (the GEMM stage of pack -> gemm -> output): each tunable kernel family
// (the subgroup-matrix tilings of ./sgmat/config.ts, at 8-bit and 4-bit rhs, the dot4-tiled and dot4-wide
// tilings) and every kernel of the registry as it is, named by a small JSON object that a tuning table stores (./tuning.ts) and the
// tuner sweeps (src/tune.ts). `kernelOf` turns a configuration into the GPU kernel, with an id that names
// it ('sgmat-128x128-w4x2-k64-b2'; the registry's own id where the configuration is its default), and
// `candidateConfigs` lists what an adapter can run, the registry's defaults first. This module sits beside
// the registry (./registry.ts), which never imports it: the registry only receives a tuned choice.

import { InputError } from '../errors.ts';
import { checkKnownKeys } from '../problem/check.ts';
import { brief } from '../problem/echo.ts';
import type { AdapterCaps } from '../gpu/caps.ts';
import { THREAD_SIDES, type ThreadSide, VEC_WORDS, type VecWords } from './banded.ts';
import { type Dot4TiledConfig, dot4TiledKernel } from './dot4-tiled/kernel.ts';
import { DOT4_WIDE_DEFAULT, type Dot4WideConfig, dot4WideKernel, dot4WideProblem } from './dot4-wide/kernel.ts';
import { GPU_KERNELS } from './registry.ts';
import {
  BOTH_DIRECT_BASES,
  bestConfig,
  DEFAULT_TILING,
  isSplitK,
  SPLIT_KS,
  SPLITK_TILING,
  type SgmatTiling,
  sgmatTilings,
  TILE_SIDES,
  tilingId,
  tilingProblem,
} from './sgmat/config.ts';
import { sgmatTiledKernel, sgmatU4Kernel } from './sgmat/kernel.ts';
import type { GpuGemmKernel } from './types.ts';

/** A kernel of the registry as it is (gemv, split-K, or any other id of GPU_KERNELS). */
export interface RegistryKernelConfig {
  family: 'registry';
  id: string;
}
/**
 * The subgroup-matrix kernel at a tiling (the adapter's best fragment configuration; split-K where `splitK`
 * says); rhsBits 4: its '-u4' variant, a rhs of at most 4 bits read two values per byte (absent: 8-bit rhs).
 */
export interface SgmatKernelConfig extends SgmatTiling {
  family: 'sgmat';
  rhsBits?: 4;
}
/**
 * The dot4-tiled kernel: threadM x threadN per invocation (4 or 8 each; absent: 4), 32- or 64-tiles,
 * tileKW packed words per k step, vecWords packed words per global load (1, 2 or 4; absent: 4).
 */
export interface Dot4TiledKernelConfig extends Dot4TiledConfig {
  family: 'dot4-tiled';
  dot4: 'native' | 'emulated';
}
/**
 * The dot4-wide kernel: threadM x threadN per invocation (4 or 8 each; absent: 8), threadsY x threadsX
 * invocations, tileKW words per stage, vecWords per load.
 */
export interface Dot4WideKernelConfig extends Dot4WideConfig {
  family: 'dot4-wide';
  dot4: 'native' | 'emulated';
}
export type KernelConfig = RegistryKernelConfig | SgmatKernelConfig | Dot4TiledKernelConfig | Dot4WideKernelConfig;

export const KERNEL_FAMILIES = ['registry', 'sgmat', 'dot4-tiled', 'dot4-wide'] as const;

/** Families a test or an experiment adds (a kernel with a planted bug, to prove a table is refused). */
const extraFamilies = new Map<string, (config: Record<string, unknown>) => GpuGemmKernel>();
/** Adds a family `name` that tables may name; for tests and experiments (not part of the public API). */
export function defineKernelFamily(name: string, make: (config: Record<string, unknown>) => GpuGemmKernel): void {
  extraFamilies.set(name, make);
}

export const isObject = (x: unknown): x is Record<string, unknown> => typeof x === 'object' && x !== null && !Array.isArray(x);

/** The keys of each family's configuration (a misspelt one is refused: its default would serve unseen). */
const CONFIG_KEYS: Record<(typeof KERNEL_FAMILIES)[number], readonly string[]> = {
  registry: ['family', 'id'],
  sgmat: ['family', 'tileM', 'tileN', 'sgRows', 'sgCols', 'kStep', 'buffers', 'splitK', 'rhsDirect', 'lhsDirect', 'rhsBits'],
  'dot4-tiled': ['family', 'dot4', 'tileM', 'tileN', 'tileKW', 'threadM', 'threadN', 'vecWords'],
  'dot4-wide': ['family', 'dot4', 'threadsX', 'threadsY', 'tileKW', 'threadM', 'threadN', 'vecWords'],
};

/** Checks a configuration read from JSON; an InputError names `field` and what is wrong. */
export function parseKernelConfig(x: unknown, field: string): KernelConfig {
  if (!isObject(x)) throw new InputError(field, 'expected an object with a "family"');
  const one = (key: string, allowed: readonly unknown[]) => {
    if (!allowed.includes(x[key])) throw new InputError(`${field}.${key}`, `expected one of ${allowed.join(', ')}, got ${brief(x[key])}`);
  };
  if (extraFamilies.has(x.family as string)) return x as unknown as KernelConfig;
  one('family', KERNEL_FAMILIES);
  checkKnownKeys(field, x, CONFIG_KEYS[x.family as (typeof KERNEL_FAMILIES)[number]]);
  // The dot4 families' load width: optional, 4 words where absent (tables written before it existed).
  const vec = () => {
    if (x.vecWords === undefined) return {};
    one('vecWords', VEC_WORDS);
    return { vecWords: x.vecWords as VecWords };
  };
  // The thread tile: optional, 4 x 4 (dot4-tiled) or 8 x 8 (dot4-wide) where absent.
  const thread = () => {
    const out: { threadM?: ThreadSide; threadN?: ThreadSide } = {};
    for (const key of ['threadM', 'threadN'] as const)
      if (x[key] !== undefined) {
        one(key, THREAD_SIDES);
        out[key] = x[key] as ThreadSide;
      }
    return out;
  };
  switch (x.family) {
    case 'registry':
      if (!GPU_KERNELS.some((k) => k.id === x.id))
        one(
          'id',
          GPU_KERNELS.map((k) => k.id),
        );
      return { family: 'registry', id: x.id as string };
    case 'sgmat': {
      for (const [key, allowed] of [
        ['tileM', TILE_SIDES],
        ['tileN', TILE_SIDES],
        ['sgRows', [2, 4]],
        ['sgCols', [2, 4]],
        ['kStep', [32, 64, 128]],
        ['buffers', [1, 2]],
      ] as const)
        one(key, allowed);
      if (x.splitK !== undefined) one('splitK', SPLIT_KS);
      if (x.rhsDirect !== undefined) one('rhsDirect', [true, false]);
      if (x.lhsDirect !== undefined) one('lhsDirect', [true, false]);
      if (x.lhsDirect && !x.rhsDirect) throw new InputError(`${field}.lhsDirect`, 'lhsDirect needs rhsDirect: true');
      if (x.rhsBits !== undefined) one('rhsBits', [4, 8]);
      if (x.rhsDirect && x.rhsBits === 4)
        throw new InputError(`${field}.rhsDirect`, 'direct rhs loads read 8-bit rhs rows only (rhsBits 4 is staged)');
      const t = x as unknown as SgmatKernelConfig;
      const split = t.splitK !== undefined ? { splitK: t.splitK } : {};
      const direct = t.rhsDirect ? { rhsDirect: true, ...(t.lhsDirect ? { lhsDirect: true } : {}) } : {};
      const bits = x.rhsBits === 4 ? { rhsBits: 4 as const } : {};
      return {
        family: 'sgmat',
        tileM: t.tileM,
        tileN: t.tileN,
        sgRows: t.sgRows,
        sgCols: t.sgCols,
        kStep: t.kStep,
        buffers: t.buffers,
        ...split,
        ...direct,
        ...bits,
      };
    }
    case 'dot4-tiled':
      one('dot4', ['native', 'emulated']);
      one('tileM', [32, 64]);
      one('tileN', [32, 64]);
      one('tileKW', [4, 8, 16]);
      return {
        family: 'dot4-tiled',
        dot4: x.dot4,
        tileM: x.tileM,
        tileN: x.tileN,
        tileKW: x.tileKW,
        ...thread(),
        ...vec(),
      } as Dot4TiledKernelConfig;
    default: {
      one('dot4', ['native', 'emulated']);
      one('threadsX', [8, 16]);
      one('threadsY', [8, 16]);
      one('tileKW', [4, 8, 16]);
      const c = {
        family: 'dot4-wide',
        dot4: x.dot4,
        threadsX: x.threadsX,
        threadsY: x.threadsY,
        tileKW: x.tileKW,
        ...thread(),
        ...vec(),
      } as Dot4WideKernelConfig;
      const problem = dot4WideProblem(c);
      if (problem) throw new InputError(`${field}.tileKW`, problem);
      return c;
    }
  }
}

const made = new Map<string, GpuGemmKernel>();

/**
 * The GPU kernel of a configuration (one object per configuration: its pipelines are cached by id). A
 * tuned kernel is self-tested on the device before its first use, like the registry's subgroup-matrix
 * kernel: one that fails is disabled there, with a warning, and the registry's rules choose instead.
 */
export function kernelOf(c: KernelConfig): GpuGemmKernel {
  const key = JSON.stringify(c);
  let k = made.get(key);
  if (k) return k;
  const extra = extraFamilies.get(c.family);
  if (extra) k = extra(c as unknown as Record<string, unknown>);
  else if (c.family === 'registry') {
    const found = GPU_KERNELS.find((x) => x.id === c.id);
    if (!found) throw new InputError('kernel.id', `unknown kernel ${c.id}`);
    k = found;
  } else if (c.family === 'sgmat') {
    const { family: _, rhsBits, ...t } = c;
    k = rhsBits === 4 ? sgmatU4Kernel(t) : sgmatTiledKernel(t);
  } else if (c.family === 'dot4-tiled') k = dot4TiledKernel(64, c.dot4, c);
  else k = dot4WideKernel(c.dot4, c);
  k = { ...k, needsSelfTest: true };
  made.set(key, k);
  return k;
}

/**
 * Every configuration this adapter can run, the registry's own kernels first (each as it is), then the
 * tunable families: subgroup-matrix tilings (where the adapter has them), dot4-wide, dot4-tiled.
 */
export function candidateConfigs(caps: AdapterCaps): KernelConfig[] {
  const dot4 = caps.dot4 ? 'native' : 'emulated';
  const out: KernelConfig[] = GPU_KERNELS.filter((k) => !k.id.endsWith('-emulated') || !caps.dot4).map((k) => ({
    family: 'registry' as const,
    id: k.id,
  }));
  const best = bestConfig(caps);
  if (best) {
    // Every tiling in one pass and split-K (slices that fill the GPU); fixed slice counts at the default tiling.
    const listed = new Set(GPU_KERNELS.map((k) => k.id)); // 'sgmat-64x64', 'sgmat-64x64-sk'
    // Each one-pass tiling is followed by its twin with right fragments from the packed rhs (u8 fragments
    // only), and the registry's 64x64 and the 128x128 w4x2 k64 b2 also by their '-dd' twin, so that the
    // tuner's order (src/tune.ts, a stable sort) measures the twins together.
    const tilings = [...sgmatTilings(best, caps.limits, [0]), ...[2, 4, 8, 16].map((splitK) => ({ ...DEFAULT_TILING, splitK }))];
    for (const t of tilings) {
      if (!tilingProblem(best, t, caps.limits) && !listed.has(tilingId(t))) out.push({ family: 'sgmat', ...t });
      const twin = { ...t, rhsDirect: true };
      if (!isSplitK(t) && !tilingProblem(best, twin, caps.limits)) out.push({ family: 'sgmat', ...twin });
      // Both operands' fragments from the packed operands ('-dd'), at a few tilings only.
      const both = { ...twin, lhsDirect: true };
      if (BOTH_DIRECT_BASES.some((b) => tilingId(b) === tilingId(t)) && !tilingProblem(best, both, caps.limits))
        out.push({ family: 'sgmat', ...both });
    }
    // The same tilings reading a 4-bit rhs two values per byte ('-u4'; the registry lists 'sgmat-64x64-u4', '-sk-u4').
    if (caps.dot4)
      for (const t of tilings) {
        if (!tilingProblem(best, t, caps.limits) && !listed.has(`${tilingId(t)}-u4`)) out.push({ family: 'sgmat', ...t, rhsBits: 4 });
      }
  }
  for (const threadsX of [16, 8] as const)
    for (const threadsY of [16, 8] as const)
      for (const tileKW of [8, 16, 4] as const) {
        const c: Dot4WideKernelConfig = { family: 'dot4-wide', dot4, threadsX, threadsY, tileKW };
        const same =
          threadsX === DOT4_WIDE_DEFAULT.threadsX && threadsY === DOT4_WIDE_DEFAULT.threadsY && tileKW === DOT4_WIDE_DEFAULT.tileKW;
        if (!same && !dot4WideProblem(c)) out.push(c);
      }
  // Narrower global loads at the registry's tilings only (the width is independent of the tiling's shape).
  for (const vecWords of [2, 1] as const) out.push({ family: 'dot4-wide', dot4, ...DOT4_WIDE_DEFAULT, vecWords });
  // Smaller thread tiles of the double-buffered kernel, 16 x 16 invocations, 16 words per stage: 64 x 64,
  // 64 x 128 and 128 x 64 tiles (more workgroups in flight than the 128 x 128 one).
  for (const [threadM, threadN] of [
    [4, 4],
    [4, 8],
    [8, 4],
  ] as const)
    out.push({ family: 'dot4-wide', dot4, threadsX: 16, threadsY: 16, tileKW: 16, threadM, threadN });
  for (const tileM of [64, 32] as const)
    for (const tileN of [64, 32] as const)
      for (const tileKW of [16, 8, 4] as const) {
        if (tileM === tileN && tileKW === 16) continue; // the registry's dot4-64x64 and dot4-32x32
        out.push({ family: 'dot4-tiled', dot4, tileM, tileN, tileKW });
      }
  for (const tile of [64, 32] as const)
    for (const vecWords of [2, 1] as const) out.push({ family: 'dot4-tiled', dot4, tileM: tile, tileN: tile, tileKW: 16, vecWords });
  // Larger thread tiles at the 64-tile (more dot4 per staged word; 128, 128 and 64 invocations).
  for (const [threadM, threadN] of [
    [8, 4],
    [4, 8],
    [8, 8],
  ] as const)
    out.push({ family: 'dot4-tiled', dot4, tileM: 64, tileN: 64, tileKW: 16, threadM, threadN });
  return out;
}

/**
 * A configuration as its tunable family names it: the registry's subgroup-matrix and dot4 kernels are
 * their families' defaults ('sgmat-64x64' is the default tiling, 'dot4-64x64' the 64-tile of dot4-tiled),
 * with every optional parameter spelt out at its default; any other registry kernel stays as it is.
 */
const speltCache = new WeakMap<KernelConfig, Record<string, unknown>>();
/** The registry's kernels that are a family's default configuration, by id (kernelOf names them alike). */
let registryTwins: Map<string, KernelConfig> | null = null;
function spelt(c: KernelConfig): Record<string, unknown> {
  const cached = speltCache.get(c);
  if (cached) return cached;
  registryTwins ??= new Map(
    [
      ...[DEFAULT_TILING, SPLITK_TILING].flatMap((x): KernelConfig[] => [
        { family: 'sgmat', ...x },
        { family: 'sgmat', ...x, rhsBits: 4 },
      ]),
      ...(['native', 'emulated'] as const).flatMap((dot4): KernelConfig[] => [
        { family: 'dot4-wide', dot4, ...DOT4_WIDE_DEFAULT },
        ...([64, 32] as const).map((tile): KernelConfig => ({ family: 'dot4-tiled', dot4, tileM: tile, tileN: tile, tileKW: 16 })),
      ]),
    ].map((x) => [kernelOf(x).id, x]),
  );
  const t = c.family === 'registry' ? (registryTwins.get(c.id) ?? c) : c;
  const defaults: Record<string, Record<string, unknown>> = {
    sgmat: { splitK: 1, rhsDirect: false, lhsDirect: false, rhsBits: 8 },
    'dot4-tiled': { threadM: 4, threadN: 4, vecWords: 4 },
    'dot4-wide': { threadM: 8, threadN: 8, vecWords: 4 },
  };
  const out = { ...defaults[t.family], ...Object.fromEntries(Object.entries(t).filter(([, v]) => v !== undefined)) };
  speltCache.set(c, out);
  return out;
}

/**
 * How many parameters two configurations differ in (the tuner's neighbourhood, src/tune.ts): 0 for the
 * same kernel (a registry id and its family's default alike), 1 for a tiling one parameter away;
 * Infinity across families, and between two registry kernels that are not one family's defaults.
 */
export function configDistance(a: KernelConfig, b: KernelConfig): number {
  const [x, y] = [spelt(a), spelt(b)];
  if (x.family !== y.family) return Infinity;
  if (x.family === 'registry') return x.id === y.id ? 0 : Infinity;
  let d = 0;
  for (const key of new Set([...Object.keys(x), ...Object.keys(y)])) if (x[key] !== y[key]) d++;
  return d;
}
