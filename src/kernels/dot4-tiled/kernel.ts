// The dot4-tiled GEMM kernels (pack -> GEMM -> output): ./gemm.wgsl with TILE_M x TILE_N workgroup tiles
// of 4x4 register blocks, on dot4U8Packed where the adapter has it (packed_4x8_integer_dot_product) and
// on the manual unpack elsewhere. Each (tile, dot4 variant) pair is one kernel of the registry; which
// one runs for which shape is decided there (src/kernels/registry.ts), not here.

import { bandedKernel } from '../banded.ts';
import type { GpuGemmKernel } from '../types.ts';
import { gemmKernelSource } from '../../epilogue/source.ts';
import gemm from './gemm.wgsl?raw';

const sources = { native: gemmKernelSource(gemm, true), emulated: gemmKernelSource(gemm, false) };

/** A dot4-tiled kernel with square tiles of `tile` (a multiple of 4 dividing 64) and a dot4 variant. */
export function dot4TiledKernel(tile: 32 | 64, dot4: 'native' | 'emulated'): GpuGemmKernel {
  return bandedKernel({
    id: `dot4-${tile}x${tile}${dot4 === 'emulated' ? '-emulated' : ''}`,
    source: sources[dot4],
    entryPoint: 'gemm',
    overrides: { TILE_M: tile, TILE_N: tile, TILE_KW: 16 },
    tileM: tile,
    tileN: tile,
    supports: (caps) => dot4 === 'emulated' || caps.dot4,
  });
}
