// The wide-tile dot4 GEMM kernels (pack -> GEMM -> output): ./gemm.wgsl, 8 x 8 dst elements per
// invocation by default (4 x 4, 4 x 8 or 8 x 4 in the tuner's configurations: the thread tile, generated
// constants as in ../dot4-tiled) and 128 x 128 workgroup tiles with double-buffered staging, reading
// 'u8k4-r128' packs with global loads of 1, 2 or 4 packed words (../banded.ts dot4LoadConstants), on
// dot4U8Packed where the adapter has it and on the manual unpack elsewhere. The dot4 kernels for
// large shapes on adapters without subgroup matrices; ../dot4-tiled (4 x 4 per invocation, 32- and
// 64-tiles) stays for shapes that would leave most of a 128-tile empty. Which one runs for which shape
// is decided in src/kernels/registry.ts. Every tiling also has a form that gathers a convolution's lhs
// from its input into the same staging (./lhs-patches.wgsl in place of ./lhs.wgsl: PreparedGemmKernel.patchLhs).

import { type AdapterCaps, fitsWorkgroup } from '../../gpu/caps.ts';
import { bandedKernel, dot4KernelSource, type ThreadSide, type VecWords } from '../banded.ts';
import type { GpuGemmKernel } from '../types.ts';
import gemm from './gemm.wgsl?raw';
import lhs from './lhs.wgsl?raw';
import lhsPatches from './lhs-patches.wgsl?raw';
import { patchGatherWgsl } from '../../pack/patches.ts';

/**
 * A tiling of the wide kernel (the tuner's family, src/kernels/tuning.ts): THREADS_Y x THREADS_X
 * invocations of threadM x threadN each (4 or 8, default 8: a (threadM THREADS_Y) x (threadN THREADS_X)
 * tile, each side 32 to 128) and TILE_KW packed words per stage; each invocation loads 4 or 8 packed words
 * per operand and stage (gemm.wgsl's registers), in pieces of vecWords words (default 4: vec4<u32>).
 */
export interface Dot4WideConfig {
  threadsX: 8 | 16;
  threadsY: 8 | 16;
  tileKW: 4 | 8 | 16;
  vecWords?: VecWords;
  threadM?: ThreadSide;
  threadN?: ThreadSide;
}

/** The workgroup tile of tiling c: (threadM THREADS_Y) x (threadN THREADS_X). */
export const dot4WideTile = (c: Dot4WideConfig) => ({ tileM: (c.threadM ?? 8) * c.threadsY, tileN: (c.threadN ?? 8) * c.threadsX });

/** The registry's tiling: 128 x 128 tiles of 16 x 16 invocations, 8 words per stage. */
export const DOT4_WIDE_DEFAULT: Dot4WideConfig = { threadsX: 16, threadsY: 16, tileKW: 8 };

/** Why tiling c cannot run ('' where it can): each invocation loads 4 or 8 words of both operands per stage. */
export function dot4WideProblem(c: Dot4WideConfig): string {
  const threads = c.threadsX * c.threadsY;
  const { tileM, tileN } = dot4WideTile(c);
  const words = [(tileM * c.tileKW) / threads, (tileN * c.tileKW) / threads];
  return words.every((x) => x === 4 || x === 8) ? '' : `words loaded per invocation ${words.join(' and ')} (must be 4 or 8)`;
}

/** Bytes of workgroup memory of tiling c: two stages of both operand tiles. */
const stagingBytes = (c: Dot4WideConfig) => {
  const { tileM, tileN } = dot4WideTile(c);
  return 2 * (tileM + tileN) * c.tileKW * 4;
};

/** The ids of these kernels, by dot4 variant. */
export const DOT4_WIDE_ID = { native: 'dot4-128x128', emulated: 'dot4-128x128-emulated' } as const;
export type Dot4WideId = (typeof DOT4_WIDE_ID)['native' | 'emulated'];

/**
 * The id of tiling c: the registry's ids for the default, else 'dot4-{M}x{N}-r8-kw{KW}' at 8 x 8 per
 * invocation, 'dot4-{M}x{N}-r4x8-kw{KW}' at another thread tile (and '-v1', '-v2').
 */
export function dot4WideId(c: Dot4WideConfig, dot4: 'native' | 'emulated'): string {
  const [vec, tm, tn] = [c.vecWords ?? 4, c.threadM ?? 8, c.threadN ?? 8];
  const same = c.threadsX === 16 && c.threadsY === 16 && c.tileKW === 8 && vec === 4 && tm === 8 && tn === 8;
  if (same) return DOT4_WIDE_ID[dot4];
  const v = vec === 4 ? '' : `-v${vec}`;
  const { tileM, tileN } = dot4WideTile(c);
  const r = tm === 8 && tn === 8 ? 'r8' : `r${tm}x${tn}`;
  return `dot4-${tileM}x${tileN}-${r}-kw${c.tileKW}${v}${dot4 === 'emulated' ? '-emulated' : ''}`;
}

export function dot4WideKernel(dot4: 'native' | 'emulated', c: Dot4WideConfig = DOT4_WIDE_DEFAULT): GpuGemmKernel {
  const problem = dot4WideProblem(c);
  if (problem) throw new Error(`dot4 wide tiling ${JSON.stringify(c)}: ${problem}`);
  const { tileM, tileN } = dot4WideTile(c);
  const [vec, tm, tn] = [c.vecWords ?? 4, c.threadM ?? 8, c.threadN ?? 8];
  return bandedKernel({
    id: dot4WideId(c, dot4),
    source: dot4KernelSource('dot4-wide', [lhs, gemm], vec, tm, tn, dot4),
    patchSource: dot4KernelSource('dot4-wide-patches', [patchGatherWgsl, lhsPatches, gemm], vec, tm, tn, dot4),
    entryPoint: 'gemm',
    overrides: { THREADS_X: c.threadsX, THREADS_Y: c.threadsY, TILE_KW: c.tileKW },
    tileM,
    tileN,
    format: 'u8k4-r128',
    supports: (caps: AdapterCaps) =>
      (dot4 === 'emulated' || caps.dot4) &&
      caps.limits.maxComputeWorkgroupStorageSize >= stagingBytes(c) &&
      fitsWorkgroup(caps.limits, c.threadsX, c.threadsY),
  });
}
