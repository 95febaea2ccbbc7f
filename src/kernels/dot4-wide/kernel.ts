// The wide-tile dot4 GEMM kernels (pack -> GEMM -> output): ./gemm.wgsl, 8 x 8 dst elements per
// invocation and 128 x 128 workgroup tiles with double-buffered staging, reading 'u8k4-r128' packs,
// on dot4U8Packed where the adapter has it and on the manual unpack elsewhere. The dot4 kernels for
// large shapes on adapters without subgroup matrices; ../dot4-tiled (4 x 4 per invocation, 32- and
// 64-tiles) stays for shapes that would leave most of a 128-tile empty. Which one runs for which shape
// is decided in src/kernels/registry.ts.

import type { AdapterCaps } from '../../gpu/caps.ts';
import { bandedKernel, tileBindings } from '../banded.ts';
import type { GpuGemmKernel } from '../types.ts';
import { gemmKernelSource } from '../../epilogue/source.ts';
import gemm from './gemm.wgsl?raw';

const kernel = [tileBindings, gemm].join('\n');
const sources = { native: gemmKernelSource(kernel, true), emulated: gemmKernelSource(kernel, false) };
const THREADS_X = 16;
const THREADS_Y = 16;
const TILE_KW = 8;
const TILE = 8 * THREADS_X; // square tiles
/** Bytes of workgroup memory: two stages of both operand tiles. */
const STAGING_BYTES = 2 * 2 * TILE * TILE_KW * 4;

/** The ids of these kernels, by dot4 variant. */
export const DOT4_WIDE_ID = { native: 'dot4-128x128', emulated: 'dot4-128x128-emulated' } as const;
export type Dot4WideId = (typeof DOT4_WIDE_ID)['native' | 'emulated'];

export function dot4WideKernel(dot4: 'native' | 'emulated'): GpuGemmKernel {
  return bandedKernel({
    id: DOT4_WIDE_ID[dot4],
    source: sources[dot4],
    entryPoint: 'gemm',
    overrides: { THREADS_X, THREADS_Y, TILE_KW },
    tileM: TILE,
    tileN: TILE,
    format: 'u8k4-r128',
    supports: (caps: AdapterCaps) =>
      (dot4 === 'emulated' || caps.dot4) &&
      caps.limits.maxComputeWorkgroupStorageSize >= STAGING_BYTES &&
      caps.limits.maxComputeInvocationsPerWorkgroup >= THREADS_X * THREADS_Y,
  });
}
