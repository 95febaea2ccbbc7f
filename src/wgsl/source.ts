// The shared WGSL libraries as text (vite `?raw` imports keep them real .wgsl files), and their
// composition: WGSL has no #include, so a kernel's source is its libraries concatenated in dependency
// order, then its own file. The libraries mirror the TS modules file for file: fixedpoint.wgsl is
// src/quant/fixedpoint.ts, tanh.wgsl src/quant/tanh.ts, lowbit.wgsl src/quant/lowbit.ts, the epilogue
// src/reference/pipeline.ts. No templating: per-call values go through uniform structs, tile and
// workgroup sizes through `override` constants, enum codes through ./codes.ts.

import epilogue from '../epilogue/epilogue.wgsl?raw';
import { wgslCodes } from './codes.ts';
import dot4Emulated from './dot4-emulated.wgsl?raw';
import dot4Native from './dot4-native.wgsl?raw';
import fixedpoint from './fixedpoint.wgsl?raw';
import lowbit from './lowbit.wgsl?raw';
import tanh from './tanh.wgsl?raw';

/** The codes and the exact fixed-point arithmetic (no bindings). */
export const fixedpointLibrary = [wgslCodes, fixedpoint].join('\n');

/** Everything a GEMM kernel needs in front of its own file: the epilogue (storeQuad) and its math. */
export const epilogueLibrary = [fixedpointLibrary, tanh, lowbit, epilogue].join('\n');

/** dot4(a, b): dot4U8Packed where the adapter has it, else the manual unpack. */
export function dot4Library(native: boolean): string {
  return native ? dot4Native : dot4Emulated;
}

/** The full source of a GEMM kernel: epilogue, dot4 variant, then the kernel's own file. */
export function gemmKernelSource(kernel: string, nativeDot4: boolean): string {
  return [epilogueLibrary, dot4Library(nativeDot4), kernel].join('\n');
}
