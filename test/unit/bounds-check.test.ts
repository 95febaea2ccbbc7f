// Unit tier for the tests' bounds-checked WGSL (test/support/bounds-check.ts), where a GPU test cannot
// show it: the subgroup-matrix builtins compile on lavapipe and GPUs only (the counts themselves are
// checked there, test/lavapipe/toggles.test.ts, and for plain indices on SwiftShader,
// test/gpu/toggles.test.ts). Here: every fragment load and store of the real kernel, in the current form
// and the legacy one, has its span checked with the fragment's shape in the array's units.

import { describe, expect, it } from 'vitest';
import { DEFAULT_TILING, directTilings, bothDirectTilings, type SgmatConfig } from '../../src/kernels/sgmat/config.ts';
import { sgmatSource } from '../../src/kernels/sgmat/kernel.ts';
import { toLegacyForm } from '../../src/kernels/sgmat/load-form.ts';
import { closing, splitTopLevel } from '../../src/wgsl/text.ts';
import { boundsCheckedWgsl } from '../support/bounds-check.ts';

const u8: SgmatConfig = { componentType: 'u8', M: 8, N: 8, K: 8, subgroupSize: 8 };
/** The fragment loads and stores in `code`, comments aside. */
const calls = (code: string) => code.replace(/\/\/[^\n]*/g, '').match(/\bsubgroupMatrix(Load|Store)\b/g)?.length ?? 0;
/** The span checks of `code`: 'array outer inner bound' of each (qgemmSpan's arguments), the counter, offset and stride left out. */
const spans = (code: string) =>
  [...code.matchAll(/\(&(\w+), qgemmSpan\(/g)].map((m) => {
    const open = m.index + m[0].length - 1;
    const [, , , outer, inner, bound] = splitTopLevel(code.slice(open + 1, closing(code, open)), false);
    return [m[1], outer, inner, bound].join(' ');
  });

describe('bounds-checked WGSL: subgroup-matrix spans', () => {
  const staged = sgmatSource(u8, DEFAULT_TILING);
  const rhsDirect = sgmatSource(u8, directTilings(u8)[0]);
  const bothDirect = sgmatSource(u8, bothDirectTilings(u8)[0]);

  it('current form: a left load spans FRAG_M rows of FRAG_K bytes in words, a right one FRAG_N columns, a store FRAG_M rows of FRAG_N words', () => {
    const checked = boundsCheckedWgsl(staged, 'k');
    expect(calls(staged)).toBeGreaterThan(2);
    expect(spans(checked)).toHaveLength(calls(staged));
    expect(new Set(spans(checked))).toEqual(
      new Set([
        'stage u32(FRAG_M) (u32(FRAG_K) * 1u + 3u) / 4u u32(STAGING_WORDS)',
        'stage u32(FRAG_N) (u32(FRAG_K) * 1u + 3u) / 4u u32(STAGING_WORDS)',
        'stage u32(FRAG_M) (u32(FRAG_N) * 4u + 3u) / 4u u32(STAGING_WORDS)',
      ]),
    );
  });

  it('legacy form: offsets in components, so the bound is the array in bytes for 8-bit fragments', () => {
    const legacy = toLegacyForm(staged);
    const checked = boundsCheckedWgsl(legacy, 'k');
    expect(spans(checked)).toHaveLength(calls(legacy));
    expect(new Set(spans(checked))).toEqual(
      new Set([
        'stage u32(FRAG_M) u32(FRAG_K) u32(STAGING_WORDS) * 4u',
        'stage u32(FRAG_N) u32(FRAG_K) u32(STAGING_WORDS) * 4u',
        'stage u32(FRAG_M) u32(FRAG_N) u32(STAGING_WORDS) * 1u',
      ]),
    );
  });

  it('fragments loaded from storage are checked against arrayLength', () => {
    expect(spans(boundsCheckedWgsl(rhsDirect, 'k'))).toContain('rhsWords u32(FRAG_N) (u32(FRAG_K) * 1u + 3u) / 4u arrayLength(&rhsWords)');
    const both = spans(boundsCheckedWgsl(bothDirect, 'k'));
    expect(both).toContain('lhsWords u32(FRAG_M) (u32(FRAG_K) * 1u + 3u) / 4u arrayLength(&lhsWords)');
    expect(both).toHaveLength(calls(bothDirect));
  });

  it('a store of a fragment whose type it cannot tell is an error, not a store left unchecked', () => {
    const code = staged.replace(
      /subgroupMatrixStore<row_major>\(&stage, out, acc00,/,
      'subgroupMatrixStore<row_major>(&stage, out, pick(acc00),',
    );
    expect(() => boundsCheckedWgsl(code, 'k')).toThrow(/no type for the stored fragment pick\(acc00\)/);
  });
});
