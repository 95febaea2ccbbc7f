// The shared WGSL libraries as text (vite `?raw` imports keep them real .wgsl files). WGSL has no
// #include, so a shader's source is its libraries concatenated in dependency order, then its own file.
// The libraries mirror the TS modules file for file: fixedpoint.wgsl is src/quant/fixedpoint.ts,
// tanh.wgsl src/quant/tanh.ts, lowbit.wgsl src/quant/lowbit.ts. No templating: per-call values go
// through uniform structs, tile and workgroup sizes through `override` constants, enum codes through
// src/gpu/codes.ts (none of these libraries reads one). The output stage's library (the epilogue, with
// these under it) is src/epilogue/source.ts.

import dot4Emulated from './dot4-emulated.wgsl?raw';
import dot4Native from './dot4-native.wgsl?raw';
import fixedpoint from './fixedpoint.wgsl?raw';
import float32 from './float32.wgsl?raw';
import lowbit from './lowbit.wgsl?raw';
import tanh from './tanh.wgsl?raw';

/** The exact fixed-point arithmetic (no bindings). */
export const fixedpointLibrary = fixedpoint;

/** The fixed-point arithmetic with the float32 requantization (the elementwise kernel's XNNPACK mul). */
export const float32Library = [fixedpointLibrary, float32].join('\n');

/** The fixed-point arithmetic with the float32 requantization, tanh and the less-than-8-bit corrections: what the epilogue runs on. */
export const outputMathLibrary = [fixedpointLibrary, float32, tanh, lowbit].join('\n');

/** dot4(a, b): dot4U8Packed where the adapter has it, else the manual unpack. */
export function dot4Library(native: boolean): string {
  return native ? dot4Native : dot4Emulated;
}
