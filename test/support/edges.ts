// The int32 edge values every exact-arithmetic test crosses with each other: 0, +-1, INT32_MIN/MAX and
// their neighbours, +-2^k and +-(2^k +- 1).

import { INT32_MAX, INT32_MIN } from '../../src/types.ts';

export const EDGES: number[] = (() => {
  const s = new Set<number>([0, 1, -1, 2, -2, 3, -3, INT32_MIN, INT32_MIN + 1, INT32_MAX, INT32_MAX - 1]);
  for (let k = 1; k <= 31; k++) {
    for (const v of [2 ** k, 2 ** k - 1, 2 ** k + 1]) {
      for (const x of [v, -v]) if (x >= INT32_MIN && x <= INT32_MAX) s.add(x);
    }
  }
  return [...s];
})();
