// Bit-exact comparison of two dst matrices, reporting statistics on a mismatch (how many elements
// differ, the largest difference, where the first few are) rather than only the first bad element.

import type { GemmResult } from '../../src/types.ts';

export interface Mismatch {
  count: number;
  total: number;
  maxAbsDiff: number;
  examples: string[];
}

/** Compares element (m, n) of both results, whatever their storage orders. null when equal. */
export function diffResults(got: GemmResult, want: GemmResult): Mismatch | null {
  if (got.rows !== want.rows || got.cols !== want.cols || got.dtype !== want.dtype) {
    return {
      count: -1,
      total: 0,
      maxAbsDiff: NaN,
      examples: [`shape/dtype ${got.rows}x${got.cols} ${got.dtype} vs ${want.rows}x${want.cols} ${want.dtype}`],
    };
  }
  const at = (r: GemmResult, m: number, n: number) => r.data[r.order === 'row-major' ? m * r.cols + n : n * r.rows + m];
  let count = 0;
  let maxAbsDiff = 0;
  const examples: string[] = [];
  for (let m = 0; m < want.rows; m++) {
    for (let n = 0; n < want.cols; n++) {
      const g = at(got, m, n);
      const w = at(want, m, n);
      if (g !== w) {
        count++;
        maxAbsDiff = Math.max(maxAbsDiff, Math.abs(g - w));
        if (examples.length < 6) examples.push(`(${m},${n}) got ${g} want ${w}`);
      }
    }
  }
  return count === 0 ? null : { count, total: want.rows * want.cols, maxAbsDiff, examples };
}

export function formatMismatch(d: Mismatch, context = ''): string {
  return `${context}\n${d.count} of ${d.total} elements differ, max |diff| ${d.maxAbsDiff}; first: ${d.examples.join('; ')}`;
}
