// Less-than-8-bit operands on the WebAssembly path: an operand requantized to its bit depth in the uint8
// domain (src/quant/lowbit.ts, the normative scheme) before it is packed, here in TypeScript, by table
// lookups. prepare.ts writes the result into linear memory; the pack -> gemm -> output chain then runs on
// the requantized bytes as on 8-bit ones.

import { type ConcreteRounding, requantize, resolveRounding, roundingOffset } from '../../quant/lowbit.ts';
import type { NormalizedProblem } from '../../problem/problem.ts';
import { UINT8_DOMAIN_SHIFT } from '../../types.ts';

/**
 * requantize(src, bits, roundingOffset(rounding, i)) (src/quant/lowbit.ts) for every src in 0..255, at
 * [(i % 255) * 256 + src]: the offsets repeat every 255 elements (one offset for 'nearest', at [src]).
 * One table per bits and rounding, made on first use (24 at most, 64 KiB each).
 */
const requantizeTables = new Map<string, Uint8Array>();
function requantizeTable(bits: number, rounding: ConcreteRounding): Uint8Array {
  const key = `${bits} ${rounding}`;
  let t = requantizeTables.get(key);
  if (!t) {
    const periods = rounding === 'nearest' ? 1 : 255;
    t = new Uint8Array(256 * periods);
    for (let j = 0; j < periods; j++)
      for (let src = 0; src < 256; src++) t[256 * j + src] = requantize(src, bits, roundingOffset(rounding, j));
    requantizeTables.set(key, t);
  }
  return t;
}

/**
 * The operand as bytes in the uint8 domain requantized to `bits` (src/quant/lowbit.ts), same storage
 * order: a table lookup per element (requantizeTable), walked in storage order, the row-major index's
 * period (i % 255, which picks the rounding offset) kept as a counter.
 */
export function requantized(
  p: Pick<NormalizedProblem, 'lhs' | 'rhs' | 'bitDepth' | 'K' | 'lhsType' | 'rhsType'>,
  which: 'lhs' | 'rhs',
): Uint8Array {
  const op = p[which];
  const rounding = resolveRounding(p.bitDepth!.rounding, p.K);
  const table = requantizeTable(p.bitDepth![which], rounding);
  const period = rounding === 'nearest' ? 0 : 256; // table row stride: one row for 'nearest'
  const shift = (which === 'lhs' ? p.lhsType : p.rhsType) === 'int8' ? UINT8_DOMAIN_SHIFT : 0;
  const { data, rows, cols } = op;
  const out = new Uint8Array(data.length);
  if (op.order === 'row-major') {
    for (let i = 0, j = 0; i < data.length; i++) {
      out[i] = table[period * j + data[i] + shift];
      if (++j === 255) j = 0;
    }
    return out;
  }
  // Column-major: down a column the row-major index grows by cols.
  const step = cols % 255;
  for (let c = 0, s = 0; c < cols; c++) {
    for (let r = 0, j = c % 255; r < rows; r++, s++) {
      out[s] = table[period * j + data[s] + shift];
      j += step;
      if (j >= 255) j -= 255;
    }
  }
  return out;
}
