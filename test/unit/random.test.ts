// Unit tier for the tests' seeded generator (tools/random.ts): Rng.sample draws without replacement, the
// same draws for the same seed, so a sampled sweep (test/gpu/dot4-family.test.ts, patches.test.ts) never
// runs one configuration twice in place of another.

import { describe, expect, it } from 'vitest';
import { Rng } from '../../tools/random.ts';

describe('Rng.sample', () => {
  const pool = Array.from({ length: 48 }, (_, i) => i);
  it('gives n distinct elements of the pool, all of it where n is its length or more, the same for the same seed', () => {
    for (let seed = 0; seed < 200; seed++) {
      for (const n of [0, 1, 3, 47]) {
        const got = new Rng(seed).sample(pool, n);
        expect(got).toHaveLength(n);
        expect(new Set(got).size).toBe(n);
        for (const x of got) expect(pool).toContain(x);
        expect(new Rng(seed).sample(pool, n)).toEqual(got);
      }
      expect([...new Rng(seed).sample(pool, 60)].sort((a, b) => a - b)).toEqual(pool);
    }
  });
  it('leaves the pool as it was', () => {
    const copy = [...pool];
    new Rng(5).sample(pool, 10);
    expect(pool).toEqual(copy);
  });
});
