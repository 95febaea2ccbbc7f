// The dot4-tiled GEMM kernels (pack -> GEMM -> output): ./gemm.wgsl with TILE_M x TILE_N workgroup tiles
// of 4x4 register blocks, on dot4U8Packed where the adapter has it (packed_4x8_integer_dot_product) and
// on the manual unpack elsewhere. Each (tile, dot4 variant) pair is one kernel of the registry; which
// one runs for which shape is decided there (src/kernels/registry.ts), not here.

import { bandedKernel, dot4TileLoop, tileBindings } from '../banded.ts';
import type { GpuGemmKernel } from '../types.ts';
import { gemmKernelSource } from '../../epilogue/source.ts';
import gemm from './gemm.wgsl?raw';

const kernel = [tileBindings, dot4TileLoop, gemm].join('\n');
const sources = { native: gemmKernelSource(kernel, true), emulated: gemmKernelSource(kernel, false) };

/** The ids of these kernels, by tile and dot4 variant. */
export const DOT4_TILED_ID = {
  32: { native: 'dot4-32x32', emulated: 'dot4-32x32-emulated' },
  64: { native: 'dot4-64x64', emulated: 'dot4-64x64-emulated' },
} as const;
export type Dot4TiledId = (typeof DOT4_TILED_ID)[32 | 64]['native' | 'emulated'];

/** A dot4-tiled kernel with square tiles of `tile` (a multiple of 4 dividing 64) and a dot4 variant. */
export function dot4TiledKernel(tile: 32 | 64, dot4: 'native' | 'emulated'): GpuGemmKernel {
  return bandedKernel({
    id: DOT4_TILED_ID[tile][dot4],
    source: sources[dot4],
    entryPoint: 'gemm',
    overrides: { TILE_M: tile, TILE_N: tile, TILE_KW: 16 },
    // SwiftShader compiles the unrolled k step (TILE_KW x 16 dot4 per invocation, between barriers) in
    // most of a first call's time: 4 words compile in about half of it, and run as fast there.
    slowCompilerOverrides: { TILE_KW: 4 },
    tileM: tile,
    tileN: tile,
    supports: (caps) => dot4 === 'emulated' || caps.dot4,
  });
}
