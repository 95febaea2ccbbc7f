// The configuration of the subgroup-matrix kernel (./sgmat.wgsl), in the GEMM stage of
// pack -> gemm -> output: which of the adapter's subgroup-matrix configurations (Dawn's
// adapter.info.subgroupMatrixConfigs) the kernel uses, how it tiles the work (SgmatTiling: the family
// the tuner sweeps, src/kernels/tuning.ts), and the WGSL constants generated from both. WGSL takes a
// subgroup-matrix type's dimensions only as const-expressions (not overrides), and function-scope arrays
// only with const sizes, so the fragment shape, the component type, the subgroup size and the tiling reach
// the one kernel source as a few generated `const` and `alias` lines in front of it; everything else
// (workgroup size, fragments per subgroup, loads per invocation) the kernel derives from them.
//
// What the kernel needs of a configuration, checked here and by its `supports`:
//   - u8 -> u32 or i8 -> i32 components (u8 first: the operands are packed in the uint8 domain);
//   - FRAG_M and FRAG_N dividing 32 (the default tiling's 32 x 32 block per subgroup), FRAG_K dividing
//     the k step and a multiple of 4 (a fragment's k starts on a whole word: ./load-form.ts);
//   - one subgroup size: the adapter's subgroupMinSize == subgroupMaxSize. The kernel's workgroup is
//     sgRows * sgCols * SUBGROUP_SIZE invocations and subgroup `subgroup_id` owns block
//     (id / sgCols, id % sgCols): that holds only if the workgroup really is that many subgroups, which an
//     adapter with a range of sizes (Intel: 8 to 32) does not guarantee. Such adapters do not run the
//     kernel. Which invocations form a subgroup does not matter: the kernel uses subgroup_id only to pick
//     a block.
//   - SUBGROUP_SIZE a power of two of at most 64.
// The best configuration is the largest fragment (M x N x K), then u8 before i8: NVIDIA's 16x16x32 before
// its 16x8x32, lavapipe's 8x8x8 where that is all there is.

import { type AdapterCaps, fitsWorkgroup, type SubgroupMatrixConfig } from '../../gpu/caps.ts';

/** One configuration the kernel can be built for. */
export interface SgmatConfig {
  componentType: 'u8' | 'i8';
  M: number;
  N: number;
  K: number;
  subgroupSize: number;
}

/**
 * How the kernel tiles the work (the tunable part, src/kernels/tuning.ts): a workgroup of
 * `sgRows` x `sgCols` subgroups (4, 8 or 16: 2 x 2, 4 x 2, 2 x 4 or 4 x 4; 16 subgroups of 32 are 512
 * invocations, where the adapter allows them) computes a `tileM` x `tileN` dst tile (64, 128 or 256 each), each
 * subgroup a (tileM / sgRows) x (tileN / sgCols) block of 1 to 4 fragments per side; `kStep` bytes of k
 * (32, 64 or 128) are staged per step in workgroup memory, rows padded by 16 bytes, with `buffers` (1 or 2)
 * staging buffers fed by a register prefetch of the next step. `splitK` cuts K into slices computed by
 * separate workgroups (./split-k.ts): absent or 1, none (one pass, the epilogue in the kernel); 0, as many
 * as fill the GPU (../splitk/partition.ts); n >= 2, n (fewer where K has fewer k steps).
 */
export interface SgmatTiling {
  tileM: number;
  tileN: number;
  sgRows: number;
  sgCols: number;
  kStep: number;
  buffers: 1 | 2;
  splitK?: number;
  /**
   * Right fragments loaded by subgroupMatrixLoad straight from the packed rhs in global memory
   * (./sgmat-rhs-direct.wgsl): no rhs staging, the workgroup memory holds the lhs tile only. u8 fragment
   * configurations only. Absent: staged, as the registry's kernels are.
   */
  rhsDirect?: boolean;
  /**
   * Left fragments loaded straight from the packed lhs too (./sgmat-lhs-direct.wgsl; only with rhsDirect):
   * the k loop stages nothing, prefetches nothing and has no barrier; workgroup memory serves the result
   * pass only. Id suffix '-dd' in place of '-dr'.
   */
  lhsDirect?: boolean;
}

/** The tile sides, subgroup grids, k steps and slice counts of the family (the tuner's sweep). */
export const TILE_SIDES = [64, 128, 256] as const;
export const SUBGROUP_GRIDS = [
  [2, 2],
  [4, 2],
  [2, 4],
  [4, 4],
] as const;
export const K_STEPS = [32, 64, 128] as const;
export const SPLIT_KS = [1, 0, 2, 4, 8, 16] as const;

/** The tiling of the registry's 'sgmat-64x64': 4 subgroups as 2 x 2, 64-byte k steps, double buffered. */
export const DEFAULT_TILING: SgmatTiling = { tileM: 64, tileN: 64, sgRows: 2, sgCols: 2, kStep: 64, buffers: 2 };

/** The tiling of the registry's split-K kernel 'sgmat-64x64-sk': the default, as many K slices as fill the GPU. */
export const SPLITK_TILING: SgmatTiling = { ...DEFAULT_TILING, splitK: 0 };

/** Bytes of workgroup memory the default tiling declares: two staging buffers of two 64 x 80-byte tiles. */
export const SGMAT_WORKGROUP_BYTES = 2 * 2 * 64 * 80;

/** The sizes derived from a tiling: padded row, staging words, and the result's passes through `stage`. */
export function tilingLayout(t: SgmatTiling): { rowBytes: number; stageWords: number; outBands: number; workgroupBytes: number } {
  const rowBytes = t.kStep + 16;
  const buffered = (t.buffers * ((t.lhsDirect ? 0 : t.tileM) + (t.rhsDirect ? 0 : t.tileN)) * rowBytes) / 4;
  const subM = t.tileM / t.sgRows;
  // The result leaves through `stage` in passes of outBands subgroup rows: as many as the staging holds.
  let outBands = 1;
  for (let b = t.sgRows; b >= 1; b--) {
    if (t.sgRows % b === 0 && b * subM * t.tileN <= buffered) {
      outBands = b;
      break;
    }
  }
  const stageWords = Math.max(buffered, outBands * subM * t.tileN);
  return { rowBytes, stageWords, outBands, workgroupBytes: stageWords * 4 };
}

/** Why tiling t cannot run fragment configuration c ('' where it can): sizes, fragments per subgroup, workgroup. */
export function tilingProblem(c: SgmatConfig, t: SgmatTiling, limits?: AdapterCaps['limits']): string {
  const subgroups = t.sgRows * t.sgCols;
  if (!(TILE_SIDES as readonly number[]).includes(t.tileM) || !(TILE_SIDES as readonly number[]).includes(t.tileN)) {
    return 'tileM and tileN are 64, 128 or 256';
  }
  if (subgroups !== 4 && subgroups !== 8 && subgroups !== 16) return 'sgRows x sgCols is 4, 8 or 16 subgroups';
  if (![32, 64, 128].includes(t.kStep) || t.kStep % c.K !== 0) return 'kStep is 32, 64 or 128 and a multiple of the fragment K';
  if (c.K % 4 !== 0) return 'the fragment K is a multiple of 4 (fragments start on whole words)';
  if (t.buffers !== 1 && t.buffers !== 2) return 'buffers is 1 or 2';
  if (!(SPLIT_KS as readonly number[]).includes(t.splitK ?? 1)) return `splitK is one of ${SPLIT_KS.join(', ')}`;
  if (t.lhsDirect && !t.rhsDirect) return 'lhsDirect needs rhsDirect (direct left fragments with staged right ones are not built)';
  if (t.rhsDirect && c.componentType !== 'u8') return 'direct rhs loads need u8 fragments (i8 ones read bytes XORed with 0x80)';
  const fm = t.tileM / t.sgRows / c.M;
  const fn = t.tileN / t.sgCols / c.N;
  if (!Number.isInteger(fm) || !Number.isInteger(fn) || fm < 1 || fn < 1 || fm > 4 || fn > 4) {
    return `1 to 4 fragments per subgroup and side (got ${fm} x ${fn})`;
  }
  if (limits) {
    if (!fitsWorkgroup(limits, subgroups * c.subgroupSize)) return 'too many invocations per workgroup';
    if (tilingLayout(t).workgroupBytes > limits.maxComputeWorkgroupStorageSize) return 'too much workgroup memory';
  }
  return '';
}

/**
 * The kernel id of a tiling: 'sgmat-64x64' for the default, else its every parameter; split-K adds
 * '-sk' (slices that fill the GPU: 'sgmat-64x64-sk', the registry's) or '-s4' (four slices); right
 * fragments loaded from the packed rhs add '-dr' before that ('sgmat-64x64-dr'), left and right fragments
 * both loaded from the packed operands '-dd' ('sgmat-64x64-dd').
 */
export function tilingId(t: SgmatTiling): string {
  const base = `sgmat-${t.tileM}x${t.tileN}`;
  const same = (Object.keys(DEFAULT_TILING) as (keyof SgmatTiling)[]).every((k) => t[k] === DEFAULT_TILING[k]);
  const split = t.splitK === 0 ? '-sk' : t.splitK && t.splitK > 1 ? `-s${t.splitK}` : '';
  return `${same ? base : `${base}-w${t.sgRows}x${t.sgCols}-k${t.kStep}-b${t.buffers}`}${t.rhsDirect ? (t.lhsDirect ? '-dd' : '-dr') : ''}${split}`;
}

/** Whether a tiling cuts K into slices (a split-K kernel: partial sums, then ../splitk/reduce.wgsl). */
export const isSplitK = (t: SgmatTiling) => t.splitK !== undefined && t.splitK !== 1;

const pow2 = (x: number) => x > 0 && (x & (x - 1)) === 0;

/** Whether the kernel takes this fragment shape and type (any subgroup size). */
function fragmentUsable(c: SubgroupMatrixConfig): boolean {
  const types =
    (c.componentType === 'u8' && c.resultComponentType === 'u32') || (c.componentType === 'i8' && c.resultComponentType === 'i32');
  return types && 32 % c.M === 0 && 32 % c.N === 0 && 64 % c.K === 0 && c.K % 4 === 0 && c.M >= 1 && c.N >= 1 && c.K >= 1;
}

/** The adapter's one subgroup size, or 0 where it has none the kernel can rely on. */
function fixedSubgroupSize(caps: AdapterCaps): number {
  const s = caps.subgroupMaxSize;
  if (!caps.subgroups || s === 0 || caps.subgroupMinSize !== s || !pow2(s) || s > 64) return 0;
  return fitsWorkgroup(caps.limits, 4 * s) ? s : 0;
}

/** The configuration to use on an adapter (largest fragment, u8 before i8), or null where none fits. */
export function bestConfig(caps: AdapterCaps): SgmatConfig | null {
  const subgroupSize = fixedSubgroupSize(caps);
  if (!subgroupSize || caps.limits.maxComputeWorkgroupStorageSize < SGMAT_WORKGROUP_BYTES) return null;
  const usable = caps.subgroupMatrix.filter(fragmentUsable);
  usable.sort((a, b) => b.M * b.N * b.K - a.M * a.N * a.K || (a.componentType === 'u8' ? -1 : 1) - (b.componentType === 'u8' ? -1 : 1));
  const c = usable[0];
  return c ? { componentType: c.componentType as 'u8' | 'i8', M: c.M, N: c.N, K: c.K, subgroupSize } : null;
}

/** 'u8->u32 16x16x32 sg32': a configuration in one short label. */
export function configLabel(c: SgmatConfig): string {
  return `${c.componentType}->${c.componentType === 'u8' ? 'u32' : 'i32'} ${c.M}x${c.N}x${c.K} sg${c.subgroupSize}`;
}

/** The generated constants in front of the kernel: fragment shape, types and subgroup size. */
export function configConstants(c: SgmatConfig, t: SgmatTiling = DEFAULT_TILING): string {
  const signed = c.componentType === 'i8';
  const result = signed ? 'i32' : 'u32';
  return [
    `// Generated from the configuration ${configLabel(c)}, tiling ${tilingId(t)} (src/kernels/sgmat/config.ts).`,
    ...tilingConstants(t),
    `const FRAG_M: u32 = ${c.M}u;`,
    `const FRAG_N: u32 = ${c.N}u;`,
    `const FRAG_K: u32 = ${c.K}u;`,
    `const SUBGROUP_SIZE: u32 = ${c.subgroupSize}u;`,
    `const SIGNED_FRAGMENTS: bool = ${signed};`,
    `alias StageWord = ${result};`,
    `alias LeftFragment = subgroup_matrix_left<${c.componentType}, FRAG_K, FRAG_M>;`,
    `alias RightFragment = subgroup_matrix_right<${c.componentType}, FRAG_N, FRAG_K>;`,
    `alias ResultFragment = subgroup_matrix_result<${result}, FRAG_N, FRAG_M>;`,
    '',
  ].join('\n');
}

/** The tiling's generated constants (sgmat-bindings.wgsl and sgmat.wgsl derive the rest from them). */
function tilingConstants(t: SgmatTiling): string[] {
  const l = tilingLayout(t);
  return [
    `const TILE_M: u32 = ${t.tileM}u;`,
    `const TILE_N: u32 = ${t.tileN}u;`,
    `const SG_ROWS: u32 = ${t.sgRows}u;`,
    `const SG_COLS: u32 = ${t.sgCols}u;`,
    `const KSTEP: u32 = ${t.kStep}u;`,
    `const BUFFERS: u32 = ${t.buffers}u;`,
    `const ROW_BYTES: u32 = ${l.rowBytes}u;`,
    `const OUT_BANDS: u32 = ${l.outBands}u;`,
    `const STAGING_WORDS: u32 = ${l.stageWords}u;`,
    `const LHS_ROWS_STAGED: u32 = ${t.lhsDirect ? 0 : t.tileM}u;`,
    `const RHS_ROWS_STAGED: u32 = ${t.rhsDirect ? 0 : t.tileN}u;`,
  ];
}

/** What reflection reads in place of the generated constants (the parser knows no subgroup-matrix types). */
export const REFLECTION_CONSTANTS = `${['alias StageWord = u32;', ...tilingConstants(DEFAULT_TILING)].join('\n')}\n`;

/**
 * Every one-pass tiling of the family that fragment configuration c can run (within `limits` where
 * given), default first; with `splitK`, each of them also with those slice counts (the one-pass first).
 */
export function sgmatTilings(c: SgmatConfig, limits?: AdapterCaps['limits'], splitK: readonly number[] = []): SgmatTiling[] {
  const out: SgmatTiling[] = [DEFAULT_TILING];
  for (const tileM of TILE_SIDES)
    for (const tileN of TILE_SIDES)
      for (const [sgRows, sgCols] of SUBGROUP_GRIDS)
        for (const kStep of K_STEPS)
          for (const buffers of [2, 1] as const) {
            const t: SgmatTiling = { tileM, tileN, sgRows, sgCols, kStep, buffers };
            if (!tilingProblem(c, t, limits) && tilingId(t) !== tilingId(DEFAULT_TILING)) out.push(t);
          }
  return splitK.length ? out.flatMap((t) => [t, ...splitK.map((s) => ({ ...t, splitK: s }))]) : out;
}

/** The direct-rhs forms (SgmatTiling rhsDirect) of the one-pass tilings of sgmatTilings that c can run. */
export function directTilings(c: SgmatConfig, limits?: AdapterCaps['limits']): SgmatTiling[] {
  return sgmatTilings(c, limits)
    .map((t) => ({ ...t, rhsDirect: true }))
    .filter((t) => !tilingProblem(c, t, limits));
}

/** The tilings with both operands' fragments loaded from the packed operands ('-dd'): the registry's two that the tuner tries. */
export const BOTH_DIRECT_BASES: readonly SgmatTiling[] = [
  DEFAULT_TILING,
  { tileM: 128, tileN: 128, sgRows: 4, sgCols: 2, kStep: 64, buffers: 2 },
];

/**
 * The '-dd' forms (SgmatTiling lhsDirect) of the one-pass tilings of sgmatTilings that c can run, one per
 * tile, grid and k step: nothing is staged, so `buffers` changes nothing (the first one listed is kept).
 */
export function bothDirectTilings(c: SgmatConfig, limits?: AdapterCaps['limits']): SgmatTiling[] {
  const seen = new Set<string>();
  return sgmatTilings(c, limits)
    .map((t) => ({ ...t, rhsDirect: true, lhsDirect: true }))
    .filter((t) => {
      const key = `${t.tileM}x${t.tileN}-${t.sgRows}x${t.sgCols}-${t.kStep}`;
      if (seen.has(key) || tilingProblem(c, t, limits)) return false;
      seen.add(key);
      return true;
    });
}

/** A seeded sample of n tilings of c (an LCG over the family, or over `from`; the default tiling is not drawn). */
export function sampleTilings(
  c: SgmatConfig,
  n: number,
  seed: number,
  limits?: AdapterCaps['limits'],
  from: SgmatTiling[] = sgmatTilings(c, limits).slice(1),
): SgmatTiling[] {
  const pool = [...from];
  const out: SgmatTiling[] = [];
  let s = seed >>> 0;
  while (out.length < n && pool.length) {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    out.push(pool.splice(s % pool.length, 1)[0]);
  }
  return out;
}
