// The dot4-tiled GEMM kernels (pack -> GEMM -> output): ./gemm.wgsl with TILE_M x TILE_N workgroup tiles
// of 4x4 register blocks, on dot4U8Packed where the adapter has it (packed_4x8_integer_dot_product) and
// on the manual unpack elsewhere, with global loads of 1, 2 or 4 packed words and 4 or 8 dst rows and
// columns per invocation (../banded.ts dot4LoadConstants, dot4ThreadBlock). A tiling whose tile rows split
// evenly among its invocations also has a form that gathers a convolution's lhs from its input
// (PreparedGemmKernel.patchLhs, ../dot4-lhs-patches.wgsl), which the scheduler runs for a PatchOperand
// lhs in place of a patch pack. Each (tile, dot4 variant) pair is one kernel of the registry; which one
// runs for which shape is decided there (src/kernels/registry.ts), not here.

import { bandedKernel, dot4KernelSource, dot4TileLoopBody, type ThreadSide, type VecWords } from '../banded.ts';
import { fitsWorkgroup } from '../../gpu/caps.ts';
import type { GpuGemmKernel } from '../types.ts';
import gemm from './gemm.wgsl?raw';

/** The ids of these kernels, by tile and dot4 variant. */
export const DOT4_TILED_ID = {
  32: { native: 'dot4-32x32', emulated: 'dot4-32x32-emulated' },
  64: { native: 'dot4-64x64', emulated: 'dot4-64x64-emulated' },
} as const;
export type Dot4TiledId = (typeof DOT4_TILED_ID)[32 | 64]['native' | 'emulated'];

/** A tiling of the dot4-tiled kernel (the tuner's family, src/kernels/tuning.ts). */
export interface Dot4TiledConfig {
  /** dst rows and columns per workgroup: 32 or 64 each. */
  tileM: 32 | 64;
  tileN: 32 | 64;
  /** Packed words (4 k each) staged per k step: 4, 8 or 16. */
  tileKW: 4 | 8 | 16;
  /** Packed words per global load: 1 (u32), 2 (vec2<u32>) or 4 (vec4<u32>, the default). */
  vecWords?: VecWords;
  /** dst rows and columns per invocation: 4 or 8 each (default 4). */
  threadM?: ThreadSide;
  threadN?: ThreadSide;
}

/**
 * The id of a tiling: the registry's ids for square tiles with 16-word k steps, vec4 loads and 4x4 per
 * invocation, else every parameter ('dot4-32x64-kw8', then '-t8x4' for another thread tile and '-v1' or
 * '-v2' for narrower loads).
 */
export function dot4TiledId(c: Dot4TiledConfig, dot4: 'native' | 'emulated'): string {
  const [vec, tm, tn] = [c.vecWords ?? 4, c.threadM ?? 4, c.threadN ?? 4];
  if (c.tileM === c.tileN && c.tileKW === 16 && vec === 4 && tm === 4 && tn === 4) return DOT4_TILED_ID[c.tileM][dot4];
  const t = tm === 4 && tn === 4 ? '' : `-t${tm}x${tn}`;
  return `dot4-${c.tileM}x${c.tileN}-kw${c.tileKW}${t}${vec === 4 ? '' : `-v${vec}`}${dot4 === 'emulated' ? '-emulated' : ''}`;
}

/**
 * A dot4-tiled kernel with square tiles of `tile` (a multiple of 4 dividing 64) and a dot4 variant; with
 * `config`, that tiling instead (its k step also on slow compilers: a tuned choice is taken as measured).
 */
export function dot4TiledKernel(tile: 32 | 64, dot4: 'native' | 'emulated', config?: Dot4TiledConfig): GpuGemmKernel {
  const c: Dot4TiledConfig = config ?? { tileM: tile, tileN: tile, tileKW: 16 };
  const [vec, tm, tn] = [c.vecWords ?? 4, c.threadM ?? 4, c.threadN ?? 4];
  return bandedKernel({
    id: dot4TiledId(c, dot4),
    source: dot4KernelSource('dot4-tiled', [dot4TileLoopBody.packed, gemm], vec, tm, tn, dot4),
    // The form that gathers a convolution's lhs needs whole invocations per tile row (TILE_N >= THREAD_M x THREAD_N).
    ...(c.tileN % (tm * tn) === 0
      ? { patchSource: dot4KernelSource('dot4-tiled-patches', [dot4TileLoopBody.patches, gemm], vec, tm, tn, dot4) }
      : {}),
    entryPoint: 'gemm',
    overrides: { TILE_M: c.tileM, TILE_N: c.tileN, TILE_KW: c.tileKW },
    // SwiftShader compiles the unrolled k step (TILE_KW x 16 dot4 per invocation, between barriers) in
    // most of a first call's time: 4 words compile in about half of it, and run as fast there.
    ...(config ? {} : { slowCompilerOverrides: { TILE_KW: 4 } }),
    tileM: c.tileM,
    tileN: c.tileN,
    // A 64x64 tile of 4x4 blocks is 256 invocations: over a compatibility-mode device's 128. Its workgroup
    // memory: both staged tiles (dot4-tile.wgsl), and a word per invocation where it gathers patches.
    supports: (caps) =>
      (dot4 === 'emulated' || caps.dot4) &&
      fitsWorkgroup(caps.limits, c.tileN / tn, c.tileM / tm) &&
      caps.limits.maxComputeWorkgroupStorageSize >= ((c.tileM + c.tileN) * c.tileKW + (c.tileN / tn) * (c.tileM / tm)) * 4,
  });
}
