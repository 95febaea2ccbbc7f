// WAT text helpers shared by the WebAssembly module generators of this folder (pack -> gemm -> output:
// gen-pack.ts, gen-gemm.ts, gen-direct.ts, gen-output.ts): a context word, a local read or written,
// local declarations. Build-time code, like everything in this folder.

import { CTX } from '../layout.ts';

/** The kernel context's word `f` (layout.ts CTX), read from the context block at address 0. */
export const ctx = (f: keyof typeof CTX) => `(i32.load offset=${4 * CTX[f]} (i32.const 0))`;
export const get = (n: string) => `(local.get $${n})`;
export const set = (n: string, v: string) => `(local.set $${n} ${v})`;
export const locals = (names: string[], type = 'i32') => names.map((n) => `(local $${n} ${type})`).join(' ');
