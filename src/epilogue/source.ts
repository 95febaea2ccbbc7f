// The epilogue's WGSL library (pack -> gemm -> OUTPUT): ./epilogue.wgsl on top of the fixed-point,
// tanh and less-than-8-bit libraries of src/wgsl/, and the composition of a GEMM kernel's full source:
// this library, the dot4 variant, then the kernel's own file.

import { wgslCodes } from '../gpu/codes.ts';
import { dot4Library, outputMathLibrary } from '../wgsl/source.ts';
import epilogue from './epilogue.wgsl?raw';

/** Everything a GEMM kernel needs in front of its own file: the enum codes, the epilogue (storeQuad) and its math. */
export const epilogueLibrary = [wgslCodes, outputMathLibrary, epilogue].join('\n');

/** The full source of a GEMM kernel: epilogue, dot4 variant, then the kernel's own file. */
export function gemmKernelSource(kernel: string, nativeDot4: boolean): string {
  return [epilogueLibrary, dot4Library(nativeDot4), kernel].join('\n');
}
