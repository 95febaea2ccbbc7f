// The gemv kernel (pack -> GEMM -> output) for small M (matrix-vector products, LLM decoding): ./gemv.wgsl,
// 4 dst rows x COLUMNS columns per workgroup with K split over SLICES invocations per column, on
// dot4U8Packed where the adapter has it and on the manual unpack elsewhere (two kernels of the registry).

import { bandedKernel } from '../banded.ts';
import type { GpuGemmKernel } from '../types.ts';
import { gemmKernelSource } from '../wgsl/source.ts';
import gemv from './gemv.wgsl?raw';

const sources = { native: gemmKernelSource(gemv, true), emulated: gemmKernelSource(gemv, false) };
const COLUMNS = 16;

export function gemvKernel(dot4: 'native' | 'emulated'): GpuGemmKernel {
  return bandedKernel({
    id: `gemv${dot4 === 'emulated' ? '-emulated' : ''}`,
    source: sources[dot4],
    entryPoint: 'gemv',
    overrides: { COLUMNS, SLICES: 16 },
    tileM: 4,
    tileN: COLUMNS,
    supports: (caps) => dot4 === 'emulated' || caps.dot4,
  });
}
