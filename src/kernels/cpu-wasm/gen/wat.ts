// WAT text helpers shared by the WebAssembly module generators of this folder (pack -> gemm -> output:
// gen-pack.ts, gen-gemm.ts, gen-direct.ts, gen-nibble.ts, gen-output.ts): a context word, a local read or
// written, local declarations, and the panel loop nest of the few-row drivers. Build-time code, like
// everything in this folder.

import { CTX } from '../layout.ts';

/** The kernel context's word `f` (layout.ts CTX), read from the context block at address 0. */
export const ctx = (f: keyof typeof CTX) => `(i32.load offset=${4 * CTX[f]} (i32.const 0))`;
export const get = (n: string) => `(local.get $${n})`;
export const set = (n: string, v: string) => `(local.set $${n} ${v})`;
export const locals = (names: string[], type = 'i32') => names.map((n) => `(local $${n} ${type})`).join(' ');

/**
 * The loop nest the few-row drivers share (gen-direct.ts, gen-nibble.ts): panels [p0, p1) of nc columns
 * in blocks of CTX nBlock panels; per panel, `panel` sets the local b, then `tile` runs each lhs tile
 * mt of [mt0, mt1) with a (its packed lhs tile, tileBytes apart) and c (its C block, ldc bytes per row)
 * set; after each block, the output stage over rows [mt0 * mr, m1) and the block's columns. The driver
 * declares the locals pb, pe, p, mt, a, b, c, ldc, tileBytes, m1 and N and sets the last four.
 */
export function panelLoops(mr: number, nc: number, panel: string, tile: string): string {
  return `${set('pb', get('p0'))}
    (loop $B
      ${set('pe', `(select (i32.add ${get('pb')} ${ctx('nBlock')}) ${get('p1')} (i32.lt_u (i32.add ${get('pb')} ${ctx('nBlock')}) ${get('p1')}))`)}
      ${set('p', get('pb'))}
      (loop $P
        ${panel}
        ${set('mt', get('mt0'))}
        (loop $MT
          ${set('a', `(i32.add ${ctx('lhsPacked')} (i32.mul ${get('mt')} ${get('tileBytes')}))`)}
          ${set('c', `(i32.add (i32.add ${ctx('C')} (i32.mul (i32.mul ${get('mt')} (i32.const ${mr})) ${get('ldc')})) (i32.mul ${get('p')} (i32.const ${4 * nc})))`)}
          ${tile}
          ${set('mt', `(i32.add ${get('mt')} (i32.const 1))`)}
          (br_if $MT (i32.lt_u ${get('mt')} ${get('mt1')})))
        ${set('p', `(i32.add ${get('p')} (i32.const 1))`)}
        (br_if $P (i32.lt_u ${get('p')} ${get('pe')})))
      (call $output (i32.mul ${get('mt0')} (i32.const ${mr})) ${get('m1')} (i32.mul ${get('pb')} (i32.const ${nc}))
        (select (i32.mul ${get('pe')} (i32.const ${nc})) ${get('N')} (i32.lt_u (i32.mul ${get('pe')} (i32.const ${nc})) ${get('N')})))
      ${set('pb', get('pe'))}
      (br_if $B (i32.lt_u ${get('pb')} ${get('p1')})))`;
}
