// The variants of the WebAssembly module of the CPU kernels (pack -> gemm -> output) and their names,
// shared by the generator (generate.ts, build time) and the engine (engine.ts, run time) without the
// run time importing the generator.

export interface Variant {
  relaxed: boolean;
  shared: boolean;
}

export const VARIANTS: Variant[] = [
  { relaxed: false, shared: false },
  { relaxed: false, shared: true },
  { relaxed: true, shared: false },
  { relaxed: true, shared: true },
];

export const variantName = (v: Variant) => `${v.relaxed ? 'relaxed' : 'simd'}${v.shared ? '-shared' : ''}`;

/** Pages: up to 4 GiB; a shared memory must declare its maximum. */
export const MAX_PAGES = 65536;
