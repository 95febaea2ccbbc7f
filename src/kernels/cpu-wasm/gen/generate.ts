// The module generator of the WebAssembly CPU kernels: the WAT text of one module (pack -> gemm ->
// output: gen-gemm.ts and gen-output.ts) for each variant, and its assembly to bytes with the `wabt`
// npm package (a devDependency). `npm run wasm:gen` writes the bytes to binary.gen.ts (checked in);
// test/unit/wasm-binary.test.ts assembles them again and compares byte for byte. The library never
// imports this file at run time.
//
// Variants: `relaxed` adds the relaxed-SIMD kernels (8-bit: the 6x8 and the few-row ones; 4-bit weights:
// dot7) and their probes (a module that only validates where the engine has relaxed SIMD); `shared`
// imports a shared memory (for worker threads) rather than a plain one (a plain page cannot make a
// shared memory without cross-origin isolation).

import { directFunctions } from './gen-direct.ts';
import { gemmFunctions, PROBE } from './gen-gemm.ts';
import { dot7Functions } from './gen-dot7.ts';
import { dynamic, nibbleFunctions } from './gen-nibble.ts';
import { OUTPUT_FUNCTIONS } from './gen-output.ts';
import { relaxedFewFunctions } from './gen-relaxed-few.ts';
import { MAX_PAGES, variantName, type Variant } from '../generate-names.ts';

export { MAX_PAGES, VARIANTS, variantName, type Variant } from '../generate-names.ts';

function moduleText(v: Variant): string {
  return `(module
  (import "env" "memory" (memory ${1} ${MAX_PAGES}${v.shared ? ' shared' : ''}))
${gemmFunctions('i16')}
${directFunctions()}
${nibbleFunctions()}
${v.relaxed ? gemmFunctions('relaxed') : ''}
${v.relaxed ? dynamic('gemm_relaxed') : ''}
${v.relaxed ? PROBE : ''}
${v.relaxed ? dot7Functions() : ''}
${v.relaxed ? relaxedFewFunctions() : ''}
${OUTPUT_FUNCTIONS})
`;
}

/** The subset of wabt's API used here (its default export resolves to this). */
export interface Wabt {
  parseWat(
    filename: string,
    text: string,
    features?: Record<string, boolean>,
  ): {
    resolveNames(): void;
    validate(features?: Record<string, boolean>): void;
    toBinary(options: Record<string, boolean>): { buffer: Uint8Array };
    destroy(): void;
  };
}

export function assemble(wabt: Wabt, v: Variant): Uint8Array {
  const features = { simd: true, relaxed_simd: true, threads: true };
  const m = wabt.parseWat(`${variantName(v)}.wat`, moduleText(v), features);
  try {
    m.resolveNames();
    m.validate(features);
    return m.toBinary({ log: false, write_debug_names: false }).buffer;
  } finally {
    m.destroy();
  }
}
