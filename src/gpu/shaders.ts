// The WGSL modules of pack -> gemm -> output, as text (vite `?raw` imports keep them real .wgsl files),
// and their composition: WGSL has no #include, so a kernel's source is its library files concatenated
// in dependency order. No templating: per-call values go through the uniform struct, tile and
// workgroup sizes through `override` constants.

import dot4Emulated from '../kernels/wgsl/dot4-emulated.wgsl?raw';
import dot4Native from '../kernels/wgsl/dot4-native.wgsl?raw';
import elementwise from '../elementwise/elementwise.wgsl?raw';
import fixedpoint from '../kernels/wgsl/fixedpoint.wgsl?raw';
import gemm from '../kernels/dot4-tiled/gemm.wgsl?raw';
import gemv from '../kernels/gemv/gemv.wgsl?raw';
import output from '../kernels/epilogue/epilogue.wgsl?raw';
import pack from '../pack/pack.wgsl?raw';

export type KernelName = 'pack' | 'gemm' | 'gemv' | 'elementwise';
export type Dot4Variant = 'native' | 'emulated';

/** The full source of one kernel; its entry point has the kernel's name. */
export function kernelSource(kernel: KernelName, dot4: Dot4Variant): string {
  if (kernel === 'pack') return pack;
  if (kernel === 'elementwise') return [fixedpoint, elementwise].join('\n'); // issue 4's add/sub/mul/aligned ops
  const inner = dot4 === 'native' ? dot4Native : dot4Emulated;
  return [fixedpoint, output, inner, kernel === 'gemm' ? gemm : gemv].join('\n');
}

export const SHADER_FILES = { fixedpoint, output, pack, gemm, gemv, dot4Native, dot4Emulated, elementwise };
