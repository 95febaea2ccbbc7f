// The gemv kernel (pack -> GEMM -> output) for small M (matrix-vector products, LLM decoding): ./gemv.wgsl,
// 4 dst rows x COLUMNS columns per workgroup with K split over SLICES invocations per column, on
// dot4U8Packed where the adapter has it and on the manual unpack elsewhere (two kernels of the registry).

import type { AdapterCaps } from '../../gpu/caps.ts';
import { getPipeline } from '../../gpu/pipelines.ts';
import { planGemm } from '../../gpu/plan.ts';
import { PACK_FORMATS } from '../../pack/formats.ts';
import { encodeBanded } from '../banded.ts';
import type { GpuGemmKernel } from '../types.ts';
import { gemmKernelSource } from '../wgsl/source.ts';
import gemv from './gemv.wgsl?raw';

const sources = { native: gemmKernelSource(gemv, true), emulated: gemmKernelSource(gemv, false) };
const COLUMNS = 16;

export function gemvKernel(dot4: 'native' | 'emulated'): GpuGemmKernel {
  const id = `gemv${dot4 === 'emulated' ? '-emulated' : ''}`;
  const source = sources[dot4];
  const format = PACK_FORMATS['u8k4-r64'];
  return {
    id,
    backend: 'webgpu',
    packFormat: format.id,
    uniformsPerDispatch: 2,
    supports: (caps: AdapterCaps) => dot4 === 'emulated' || caps.dot4,
    plan: (shape, limits) => planGemm(shape, format, 4, COLUMNS, limits),
    pipeline: (device) => getPipeline(device, { id, source, entryPoint: 'gemv', overrides: { COLUMNS, SLICES: 16 } }),
    encode: (e) => encodeBanded(e, source),
  };
}
