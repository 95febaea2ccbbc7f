// WAT generator for 4-bit weights on relaxed SIMD (dot7; the relaxed variant of the module only, where
// engine.ts proved the relaxed dot exact on 7-bit operands): the GEMM stage of pack -> GEMM -> output over
// an rhs prepacked by kernel.ts prepackCpu in the dot7 layout, a nibble per (column, k), met by
// `i16x8.relaxed_dot_i8x16_i7x16_s`; the lhs narrowing to bytes (also the relaxed few-row kernels',
// gen-relaxed-few.ts) and the engine's 7-bit probe. The drivers and the split over threads are the
// 16-bit few-row kernels' (gen-nibble.ts stripDriver, dynamic).

import { QUAD_SHAPES, STRIP_PANELS } from '../layout.ts';
import { accAt, dynamic, stripAt, stripDriver } from './gen-nibble.ts';
import { ctx, get, locals, set } from './wat.ts';

/**
 * The 4-bit micro-kernel on relaxed SIMD (`dot7`): mr rows x w panels over `quads` k-quads of the dot7
 * layout at b (a panel's quad: 16 bytes, byte 4i + k holding column i in its low nibble and column
 * i + 4 in its high one); a = the lhs tile [Kp/4][mr][4] of signed bytes l' - 128 (narrow_lhs), c = C,
 * s = the column sums of r' for the group's first column. `i16x8.relaxed_dot_i8x16_i7x16_s` of a
 * splatted lhs quad and a nibble vector gives each column's (k0, k1) and (k2, k3) pair sums as i16; its
 * 7-bit operand is r' <= 15, where every lowering agrees (engine.ts dot7). The sums stay in i16 for
 * DOT7_BLOCK quads (|pair| <= 2 * 128 * 15 = 3840, eight of them 30720 < 2^15), then widen pairwise
 * into C, which starts at 128 * colSum: sum (l' - 128) r' + 128 sum r' = sum l' r'. A whole block is
 * unrolled, its first quad setting the accumulators (no zeroing, no loop counter between its quads):
 * 0.92x the one-row kernel's time of the rolled loop at 1x4096^2, 0.96-1.00x for the other shapes
 * (bench/results/2026-11-27-cpu-dot7-unroll-ab.txt). The 16-bit kernels unrolled by two were slower.
 */
function microKernel7(mr: number, w: number): string {
  const acc = Array.from({ length: 2 * mr * w }, (_, i) => `c${i}`); // acc[(r * w + j) * 2 + h]
  const lo = (v: string) => `(v128.and ${v} ${get('mask')})`;
  const hi = (v: string) => `(v128.and (i16x8.shr_u ${v} (i32.const 4)) ${get('mask')})`;
  const panels = Array.from({ length: w }, (_, j) => j);
  /**
   * Quad q of a block (a and b at the block's first): the accumulators set by its dots where `first`
   * (a block's first quad, so no zeroing after a flush), else added to.
   */
  const step = (q: number, first: boolean) => {
    const dot = (c: string, x: string, r: number) => {
      const d = `(i16x8.relaxed_dot_i8x16_i7x16_s ${get(`a${r}`)} ${x})`;
      return set(c, first ? d : `(i16x8.add ${get(c)} ${d})`);
    };
    const splat = (r: number) => set(`a${r}`, `(v128.load32_splat offset=${4 * (q * mr + r)} ${get('a')})`);
    const load = (j: number) => set('v', `(v128.load offset=${16 * j + q * STRIP_PANELS * 16} ${get('b')})`);
    // Each panel used as soon as it is unpacked, by every row (the rows' splats first): fewer vectors
    // live at once than with every panel unpacked first.
    return [
      ...Array.from({ length: mr }, (_, r) => splat(r)),
      ...panels.flatMap((j) => [
        load(j),
        set('lo', lo(get('v'))),
        set('hi', hi(get('v'))),
        ...Array.from({ length: mr }, (_, r) => [
          dot(acc[(r * w + j) * 2], get('lo'), r),
          dot(acc[(r * w + j) * 2 + 1], get('hi'), r),
        ]).flat(),
      ]),
    ];
  };
  const advance = (quads: number) => [
    set('a', `(i32.add ${get('a')} (i32.const ${4 * mr * quads}))`),
    set('b', `(i32.add ${get('b')} (i32.const ${STRIP_PANELS * 16 * quads}))`),
  ];
  const init = acc.map((_, i) => {
    const { offset, row } = accAt(i, w);
    return `(v128.store offset=${offset} ${row} (i32x4.shl (v128.load offset=${offset} ${get('s')}) (i32.const 7)))`;
  });
  const flush = acc.map((c, i) => {
    const { offset, row } = accAt(i, w);
    return `(v128.store offset=${offset} ${row} (i32x4.add (v128.load offset=${offset} ${row}) (i32x4.extadd_pairwise_i16x8_s ${get(c)})))`;
  });
  const block = Array.from({ length: DOT7_BLOCK }, (_, q) => step(q, q === 0)).flat();
  // Whole blocks unrolled (the quads' offsets immediate, a block's first quad setting the accumulators),
  // then the last quads of a partial block one at a time.
  return `
  (func $mkr_${mr}x${w} (param $a i32) (param $b i32) (param $c i32) (param $ldc i32) (param $quads i32) (param $s i32)
    ${locals([...acc, ...Array.from({ length: mr }, (_, r) => `a${r}`), 'v', 'lo', 'hi', 'mask'], 'v128')}
    ${set('mask', '(v128.const i8x16 15 15 15 15 15 15 15 15 15 15 15 15 15 15 15 15)')}
    ${init.join('\n    ')}
    (block $blocks (loop $O
      (br_if $blocks (i32.lt_u ${get('quads')} (i32.const ${DOT7_BLOCK})))
      ${block.join('\n      ')}
      ${advance(DOT7_BLOCK).join(' ')}
      ${flush.join('\n      ')}
      ${set('quads', `(i32.sub ${get('quads')} (i32.const ${DOT7_BLOCK}))`)}
      (br $O)))
    (if ${get('quads')} (then
      ${step(0, true).join('\n      ')}
      ${advance(1).join(' ')}
      (block $done (loop $K
        (br_if $done (i32.eqz (local.tee $quads (i32.sub ${get('quads')} (i32.const 1)))))
        ${step(0, false).join('\n        ')}
        ${advance(1).join(' ')}
        (br $K)))
      ${flush.join('\n      ')}))
  )`;
}

/** Quads whose relaxed pair sums a dot7 micro-kernel keeps in i16 before it widens them. */
const DOT7_BLOCK = 8;

/** The driver of one dot7 quad shape: column groups of w panels of the dot7 layout at CTX rhsPacked. */
function driver7(mr: number, w: number): string {
  const at = [set('P', `(i32.mul ${get('p')} (i32.const ${w}))`), set('b', stripAt(ctx('rhsPacked'), get('P'), 16))].join(' ');
  const sums = `(i32.add ${ctx('colSums')} (i32.mul ${get('p')} (i32.const ${32 * w})))`;
  const tile = `(call $mkr_${mr}x${w} ${get('a')} ${get('b')} ${get('c')} ${get('ldc')} ${get('quads')} ${sums})`;
  return stripDriver(`gemm_nibble7_${mr}x${w}`, mr, 8 * w, 16, at, tile, 1);
}

/**
 * The byte lhs of the relaxed few-row kernels: the n i16 values x at `at` (pack_lhs_few's tiles) as the
 * bytes x - bias, in place (byte i is written after i16 i and i16 i + 8 are read), narrowed unsigned
 * where `unsigned`, else signed. The dot7 kernels take l' - 128 (bias 128, signed: l' <= 255); the relaxed
 * 8-bit few-row kernels (gen-relaxed-few.ts) A' = A - cA as it is (bias 0, unsigned for usdot). The
 * callers' values fit, so the narrowing never saturates.
 */
const NARROW_LHS = `
  (func $narrow_lhs (export "narrow_lhs") (param $at i32) (param $n i32) (param $bias i32) (param $unsigned i32)
    (local $i i32) (local $x v128) (local $lo v128) (local $hi v128)
    ${set('x', `(i16x8.splat ${get('bias')})`)}
    (block $done (loop $L
      (br_if $done (i32.ge_u ${get('i')} ${get('n')}))
      ${set('lo', `(i16x8.sub (v128.load (i32.add ${get('at')} (i32.shl ${get('i')} (i32.const 1)))) ${get('x')})`)}
      ${set('hi', `(i16x8.sub (v128.load offset=16 (i32.add ${get('at')} (i32.shl ${get('i')} (i32.const 1)))) ${get('x')})`)}
      (v128.store (i32.add ${get('at')} ${get('i')})
        (if (result v128) ${get('unsigned')}
          (then (i8x16.narrow_i16x8_u ${get('lo')} ${get('hi')}))
          (else (i8x16.narrow_i16x8_s ${get('lo')} ${get('hi')}))))
      ${set('i', `(i32.add ${get('i')} (i32.const 16))`)}
      (br $L))))`;

/**
 * The probe of engine.ts dot7: `iters` times i16x8.relaxed_dot_i8x16_i7x16_s(splat8(a), splat8(b)),
 * widened pairwise and summed as the dot7 kernels do; lane 0 (4 * iters * a * b where exact).
 */
const PROBE7 = `
  (func $probe7 (export "probe7") (param $a i32) (param $b i32) (param $iters i32) (result i32)
    (local $acc v128) (local $x v128) (local $y v128)
    ${set('x', `(i8x16.splat ${get('a')})`)} ${set('y', `(i8x16.splat ${get('b')})`)}
    (loop $L
      ${set('acc', `(i32x4.add ${get('acc')} (i32x4.extadd_pairwise_i16x8_s (i16x8.relaxed_dot_i8x16_i7x16_s ${get('x')} ${get('y')})))`)}
      (br_if $L (local.tee $iters (i32.sub ${get('iters')} (i32.const 1)))))
    (i32x4.extract_lane 0 ${get('acc')}))`;

/** The relaxed-SIMD functions of 4-bit weights (dot7; the relaxed variant of the module only): per QUAD_SHAPES shape a micro-kernel and its drivers, the lhs narrowing (also the relaxed few-row kernels'), the probe. */
export function dot7Functions(): string {
  return [
    ...QUAD_SHAPES.flatMap(({ mr, w }) => [microKernel7(mr, w), driver7(mr, w), dynamic(`gemm_nibble7_${mr}x${w}`)]),
    NARROW_LHS,
    PROBE7,
  ].join('\n');
}
