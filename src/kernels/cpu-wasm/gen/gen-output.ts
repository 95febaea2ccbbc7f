// WAT generator for the OUTPUT stage of the WebAssembly CPU kernels (pack -> gemm -> OUTPUT), run by the
// driver (gen-gemm.ts) on each block of C right after its micro-kernels: the four-term zero-point
// expansion (with the less-than-8-bit RoundingMultiplyByConstantFraction terms of src/quant/lowbit.ts),
// the output program (the stages of src/types.ts encoded by stages.ts: bias, both quantize-down stages,
// scaleInt32ByFixedPointAndExponent with each rounding, requantizeFloat32, clamp, the casts), and the store to
// dst in its order and dtype. The stages run on four columns per SIMD vector: the fixed-point functions
// of src/quant/fixedpoint.ts with 64-bit lane products, each lane with its own exponent (single rounding,
// which shifts a 64-bit product by a per-lane count, runs one element at a time, as do 'double-up' and the
// float32 requantization). tanh is not here (the
// runtime finishes a pipeline from its first tanh in JavaScript).

import { ctx } from './wat.ts';
import { STAGE_OP } from '../../../problem/stages/pipeline.ts';
import { STAGE_MODE, STAGE_WORDS } from '../layout.ts';

const g = (n: string) => `(local.get $${n})`;
const s = (n: string, v: string) => `(local.set $${n} ${v})`;
const i32 = (v: number) => `(i32.const ${v})`;
const add = (a: string, b: string) => `(i32.add ${a} ${b})`;
const mul = (a: string, b: string) => `(i32.mul ${a} ${b})`;
const word = (i: number) => `(i32.load offset=${4 * i} ${g('pp')})`;

// The fixed-point functions of src/quant/fixedpoint.ts on four int32 lanes, as inline WAT expressions
// (V8 does not inline small WebAssembly calls everywhere, and a call per element cost more than the
// GEMM). Arguments are v128 expressions, each used once unless it is a local.
const MIN = i32(-2147483648);
const MAX = i32(2147483647);
const splat = (v: string) => `(i32x4.splat ${v})`;
const v = (op: string, ...args: string[]) => `(${op} ${args.join(' ')})`;
/**
 * Bits 31..62 of each 64-bit lane of a and b, as [a0, a1, b0, b1]: the low word of the lane shifted right
 * by 31, where an arithmetic and a logical shift agree (x64 has only the logical one for 64-bit lanes).
 */
const high31 = (a: string, b: string) =>
  `(i8x16.shuffle 0 1 2 3 8 9 10 11 16 17 18 19 24 25 26 27 (i64x2.shr_u ${a} ${i32(31)}) (i64x2.shr_u ${b} ${i32(31)}))`;
/** floor(x * y / 2^31) per lane of the locals x, y (64-bit products). */
const mulShr31 = (x: string, y: string) => high31(v('i64x2.extmul_low_i32x4_s', g(x), g(y)), v('i64x2.extmul_high_i32x4_s', g(x), g(y)));
/**
 * SaturatingRoundingDoublingHighMul of the locals x, m: the nudged truncating division of the source is
 * floor((x*m + 2^30) / 2^31), which overflows only for x = m = INT32_MIN (then INT32_MAX).
 */
const vSrdhm = (x: string, m: string) => `(v128.bitselect ${splat(MAX)}
      ${high31(
        v('i64x2.add', v('i64x2.extmul_low_i32x4_s', g(x), g(m)), '(v128.const i64x2 1073741824 1073741824)'),
        v('i64x2.add', v('i64x2.extmul_high_i32x4_s', g(x), g(m)), '(v128.const i64x2 1073741824 1073741824)'),
      )}
      (v128.and (i32x4.eq ${g(x)} ${splat(MIN)}) (i32x4.eq ${g(m)} ${splat(MIN)})))`;
/**
 * RoundingDivideByPOT of the local x given its quotient `floor` (x >> exponent) and the local `mask`
 * (2^exponent - 1): plus one where the remainder exceeds mask >> 1, plus one for negative x.
 */
const vRound = (x: string, floor: string, mask: string) =>
  `(i32x4.sub ${floor} (i32x4.gt_s (v128.and ${g(x)} ${g(mask)}) (i32x4.sub (i32x4.shr_s ${g(mask)} ${i32(1)}) (i32x4.shr_s ${g(x)} ${i32(31)}))))`;
/** RoundingDivideByPOT of the local x by the i32 local e, the same for every lane; uses the v128 local `t`. */
const vRdbpUniform = (x: string, e: string) =>
  `(block (result v128) ${s('t', splat(`(i32.sub (i32.shl ${i32(1)} ${g(e)}) ${i32(1)})`))} ${vRound(x, `(i32x4.shr_s ${g(x)} ${g(e)})`, 't')})`;
/**
 * MultiplyByQuantizedMultiplier, double rounding, of the local x by the lanes' multipliers mm and the
 * constants of their exponents (stages.ts exponentConstants: pow, sat, mask, mul); leaves it in x.
 */
const vMbqmDouble = (mm: string, pow: string, sat: string, mask: string, mul: string) => `
      ${s(
        'x',
        `(v128.bitselect ${splat(MAX)} (v128.bitselect ${splat(MIN)} (i32x4.mul ${g('x')} ${g(pow)}) (i32x4.lt_s ${g('x')} (i32x4.neg ${g(sat)})))
        (i32x4.gt_s ${g('x')} ${g(sat)}))`,
      )}
      ${s('x', vSrdhm('x', mm))}
      ${s('x', vRound('x', `(v128.bitselect ${g('x')} ${mulShr31('x', mul)} (i32x4.eq ${g(mask)} (v128.const i32x4 0 0 0 0)))`, mask))}`;
/** MultiplyByQuantizedMultiplier, single rounding (e in -31..30), of the i32 locals x, mm, e; result in x, uses u and p. */
const mbqmSingle = (x: string, mm: string, e: string) => `
      ${s('u', `(i32.sub ${i32(31)} ${g(e)})`)}
      ${s(
        'p',
        `(i64.shr_s (i64.add (i64.mul (i64.extend_i32_s ${g(x)}) (i64.extend_i32_s ${g(mm)}))
        (i64.shl (i64.const 1) (i64.extend_i32_u (i32.sub ${g('u')} ${i32(1)})))) (i64.extend_i32_u ${g('u')}))`,
      )}
      ${s(x, `(select ${MAX} (select ${MIN} (i32.wrap_i64 ${g('p')}) (i64.lt_s ${g('p')} (i64.const -2147483648))) (i64.gt_s ${g('p')} (i64.const 2147483647)))`)}`;

/**
 * MultiplyByQuantizedMultiplier, 'double-up' rounding (ruy; e in -31..31), of the i32 locals x, mm, e:
 * SRDHM(x << max(e, 0) wrapping, mm) = min(floor((x*mm + 2^30) / 2^31), INT32_MAX), then
 * floor((y + 2^(r-1)) / 2^r) for r = max(-e, 0), on 64 bits (exact); result in x, uses u and p.
 */
const mbqmDoubleUp = (x: string, mm: string, e: string) => `
      ${s('u', `(select ${g(e)} ${i32(0)} (i32.gt_s ${g(e)} ${i32(0)}))`)}
      ${s('p', `(i64.shr_s (i64.add (i64.mul (i64.extend_i32_s (i32.shl ${g(x)} ${g('u')})) (i64.extend_i32_s ${g(mm)})) (i64.const 1073741824)) (i64.const 31))`)}
      ${s('p', `(select (i64.const 2147483647) ${g('p')} (i64.gt_s ${g('p')} (i64.const 2147483647)))`)}
      ${s('u', `(select (i32.sub ${i32(0)} ${g(e)}) ${i32(0)} (i32.lt_s ${g(e)} ${i32(0)}))`)}
      ${s('p', `(i64.shr_s (i64.add ${g('p')} (i64.shr_u (i64.shl (i64.const 1) (i64.extend_i32_u ${g('u')})) (i64.const 1))) (i64.extend_i32_u ${g('u')}))`)}
      ${s(x, `(i32.wrap_i64 ${g('p')})`)}`;

/**
 * The requantizeFloat32 stage of the i32 local x with scale bits s and zero point k, in native float32
 * (WebAssembly's conversions and arithmetic round to nearest, ties to even): rint(f32(f32(x) * scale)),
 * then + k in float64 (exact below 2^53; beyond, saturated either way), saturated to int32.
 */
const requantizeFloat32 = (x: string, scale: string, k: string) =>
  s(
    x,
    `(i32.trunc_sat_f64_s (f64.add (f64.promote_f32 (f32.nearest (f32.mul (f32.convert_i32_s ${g(x)}) (f32.reinterpret_i32 ${g(scale)}))))
      (f64.convert_i32_s ${g(k)})))`,
  );

const FIXED_POINT = `
  (func $rmbcf (param $x i32) (param $q i32) (param $r i32) (result i32) (local $p i64)
    ${s('p', `(i64.mul (i64.extend_i32_s ${g('x')}) (i64.extend_i32_s ${g('r')}))`)}
    ${s('p', `(i64.add ${g('p')} (select (i64.const 1073741824) (i64.const -1073741824) (i64.gt_s ${g('p')} (i64.const 0))))`)}
    ${s('p', `(select (i64.add ${g('p')} (i64.const 2147483647)) ${g('p')} (i64.lt_s ${g('p')} (i64.const 0)))`)}
    (i32.add (i32.mul ${g('x')} ${g('q')}) (i32.wrap_i64 (i64.shr_s ${g('p')} (i64.const 31)))))`;

/**
 * acc = RMBCF_xx(raw) + RMBCF_x1(rowSum * -zR) + RMBCF_1x(colSum * -zL) + K*zL*zR, where the kernel's raw
 * products and sums are of the packed values A' = A - cA, B' = B - cB (see layout.ts):
 *   raw = raw' + cB*rowSum' + cA*colSum' + K*cA*cB,  rowSum = rowSum' + K*cA,  colSum = colSum' + K*cB.
 * With 8-bit operands it folds into raw' + R0 + colSum'*R1 + zR*R2 (one SIMD line over n).
 */
const FOUR_TERM = `
  (func $fourTerm (param $m i32) (param $row i32) (param $n0 i32) (param $n1 i32)
    (local $K i32) (local $cA i32) (local $cB i32) (local $rs i32) (local $zl i32) (local $n i32) (local $q i32)
    (local $cs i32) (local $zr i32) (local $R0 v128) (local $R1 v128) (local $R2 v128)
    ${s('K', ctx('K'))} ${s('cA', ctx('cA'))} ${s('cB', ctx('cB'))} ${s('n', g('n0'))}
    ${s('rs', `(i32.load (i32.add ${ctx('rowSums')} (i32.shl ${g('m')} ${i32(2)})))`)}
    ${s('zl', `(i32.load (i32.add ${ctx('zL')} (i32.shl ${g('m')} ${i32(2)})))`)}
    (if ${ctx('identity')} (then
      ${s('R0', `(i32x4.splat (i32.add ${mul(g('cB'), g('rs'))} ${mul(mul(g('K'), g('cB')), `(i32.sub ${g('cA')} ${g('zl')})`)}))`)}
      ${s('R1', `(i32x4.splat (i32.sub ${g('cA')} ${g('zl')}))`)}
      ${s('R2', `(i32x4.splat (i32.sub ${mul(g('K'), `(i32.sub ${g('zl')} ${g('cA')})`)} ${g('rs')}))`)}
      (loop $V
        ${s('q', add(g('row'), `(i32.shl ${g('n')} ${i32(2)})`))}
        (v128.store ${g('q')} (i32x4.add (i32x4.add (v128.load ${g('q')}) ${g('R0')})
          (i32x4.add (i32x4.mul (v128.load (i32.add ${ctx('colSums')} (i32.shl ${g('n')} ${i32(2)}))) ${g('R1')})
                     (i32x4.mul (v128.load (i32.add ${ctx('zR')} (i32.shl ${g('n')} ${i32(2)}))) ${g('R2')}))))
        ${s('n', add(g('n'), i32(4)))}
        (br_if $V (i32.lt_u ${g('n')} ${g('n1')})))
      (return)))
    (loop $S
      ${s('q', add(g('row'), `(i32.shl ${g('n')} ${i32(2)})`))}
      ${s('cs', `(i32.load (i32.add ${ctx('colSums')} (i32.shl ${g('n')} ${i32(2)})))`)}
      ${s('zr', `(i32.load (i32.add ${ctx('zR')} (i32.shl ${g('n')} ${i32(2)})))`)}
      (i32.store ${g('q')} (i32.add (i32.add
        (call $rmbcf (i32.add (i32.add (i32.load ${g('q')}) ${mul(g('cB'), g('rs'))}) (i32.add ${mul(g('cA'), g('cs'))} ${mul(mul(g('K'), g('cA')), g('cB'))}))
          ${ctx('xxQ')} ${ctx('xxS')})
        (call $rmbcf ${mul(add(g('rs'), mul(g('K'), g('cA'))), `(i32.sub ${i32(0)} ${g('zr')})`)} ${ctx('x1Q')} ${ctx('x1S')}))
        (i32.add
        (call $rmbcf ${mul(add(g('cs'), mul(g('K'), g('cB'))), `(i32.sub ${i32(0)} ${g('zl')})`)} ${ctx('onexQ')} ${ctx('onexS')})
        ${mul(mul(g('K'), g('zl')), g('zr'))})))
      ${s('n', add(g('n'), i32(1)))}
      (br_if $S (i32.lt_u ${g('n')} ${g('n1')}))))`;

/**
 * One stage over the row [n0, n1) rounded up to whole vectors of four (C rows and per-channel vectors
 * are padded to Np): x holds four elements, `operands` are the stage's words (a, b, ...) that point to
 * per-channel vectors, and `body` sees each operand as a v128 local o0, o1, ... Column vectors are read
 * four channels at a time; a row's or a scalar operand is splatted once before the loop.
 */
function stageLoop(operands: number[], body: string): string {
  const o = operands.map((_, i) => `o${i}`);
  const pointer = (i: number) => add(word(operands[i]), g('off'));
  const loop = (load: string) => `
        (loop $E
          ${load}
          ${s('x', `(v128.load ${g('q')})`)}
          ${body}
          (v128.store ${g('q')} ${g('x')})
          ${s('q', add(g('q'), i32(16)))} ${s('c', add(g('c'), i32(16)))}
          (br_if $E (i32.lt_u ${g('q')} ${g('end')})))`;
  if (operands.length === 0) return loop('');
  return `
        (if (i32.eq ${g('mode')} ${i32(STAGE_MODE.col)})
          (then ${loop(o.map((n, i) => s(n, `(v128.load ${add(pointer(i), g('c'))})`)).join(' '))})
          (else ${o.map((n, i) => s(n, `(v128.load32_splat ${pointer(i)})`)).join(' ')} ${loop('')}))`;
}

/** The same with i32 x, one element at a time (single rounding needs 64-bit shifts by a per-lane count). */
function scalarLoop(operands: number[], body: string): string {
  const pointer = (i: number) =>
    add(add(word(operands[i]), g('off')), `(select ${g('c')} ${i32(0)} (i32.eq ${g('mode')} ${i32(STAGE_MODE.col)}))`);
  return `
        (loop $E
          ${operands.map((_, i) => s(`s${i}`, `(i32.load ${pointer(i)})`)).join(' ')}
          ${s('xs', `(i32.load ${g('q')})`)}
          ${body}
          (i32.store ${g('q')} ${g('xs')})
          ${s('q', add(g('q'), i32(4)))} ${s('c', add(g('c'), i32(4)))}
          (br_if $E (i32.lt_u ${g('q')} ${g('end')})))`;
}

const STAGES = `
  (func $stages (param $m i32) (param $row i32) (param $n0 i32) (param $n1 i32)
    (local $i i32) (local $pp i32) (local $op i32) (local $mode i32) (local $off i32) (local $q i32) (local $end i32)
    (local $c i32) (local $e i32) (local $e2 i32) (local $k i32) (local $u i32) (local $p i64)
    (local $xs i32) (local $s0 i32) (local $s1 i32)
    (local $x v128) (local $t v128) (local $m2 v128) (local $o0 v128) (local $o1 v128) (local $o2 v128) (local $o3 v128) (local $o4 v128)
    (block $done (loop $S
      (br_if $done (i32.ge_u ${g('i')} ${ctx('stages')}))
      ${s('pp', add(ctx('program'), mul(g('i'), i32(4 * STAGE_WORDS))))}
      ${s('op', word(0))} ${s('mode', word(1))}
      ;; operand address of (m, n0), then c walks the columns in bytes
      ${s('off', `(i32.shl (select ${g('n0')} (select ${g('m')} ${i32(0)} (i32.eq ${g('mode')} ${i32(STAGE_MODE.row)})) (i32.eq ${g('mode')} ${i32(STAGE_MODE.col)})) ${i32(2)})`)}
      ${s('q', add(g('row'), `(i32.shl ${g('n0')} ${i32(2)})`))} ${s('c', i32(0))}
      ${s('end', add(g('row'), `(i32.shl (i32.and (i32.add ${g('n1')} ${i32(3)}) ${i32(-4)}) ${i32(2)})`))}
      (if (i32.eq ${g('op')} ${i32(STAGE_OP.bias)}) (then
        ${stageLoop([2], s('x', `(i32x4.add ${g('x')} ${g('o0')})`))}))
      (if (i32.eq ${g('op')} ${i32(STAGE_OP.scaleToUint8)}) (then ${s('e', word(4))}
        ${stageLoop([2, 3], `${s('x', `(i32x4.mul (i32x4.add ${g('x')} ${g('o0')}) ${g('o1')})`)} ${s('x', vRdbpUniform('x', 'e'))}`)}))
      (if (i32.eq ${g('op')} ${i32(STAGE_OP.fixedPoint)}) (then ${s('m2', splat(word(2)))} ${s('e2', word(3))} ${s('k', word(4))}
        ${stageLoop([], `${s('x', vSrdhm('x', 'm2'))} ${s('x', vRdbpUniform('x', 'e2'))} ${s('x', `(i32x4.add ${g('x')} ${splat(g('k'))})`)}`)}))
      (if (i32.eq ${g('op')} ${i32(STAGE_OP.exponentDouble)}) (then ${s('k', word(7))}
        ${stageLoop([2, 3, 4, 5, 6], `${vMbqmDouble('o0', 'o1', 'o2', 'o3', 'o4')} ${s('x', `(i32x4.add ${g('x')} ${splat(g('k'))})`)}`)}))
      (if (i32.eq ${g('op')} ${i32(STAGE_OP.exponentSingle)}) (then ${s('k', word(4))}
        ${scalarLoop([2, 3], `${mbqmSingle('xs', 's0', 's1')} ${s('xs', add(g('xs'), g('k')))}`)}))
      (if (i32.eq ${g('op')} ${i32(STAGE_OP.exponentDoubleUp)}) (then ${s('k', word(4))}
        ${scalarLoop([2, 3], `${mbqmDoubleUp('xs', 's0', 's1')} ${s('xs', add(g('xs'), g('k')))}`)}))
      (if (i32.eq ${g('op')} ${i32(STAGE_OP.requantizeFloat32)}) (then ${s('k', word(3))}
        ${scalarLoop([2], requantizeFloat32('xs', 's0', 'k'))}))
      (if (i32.eq ${g('op')} ${i32(STAGE_OP.clamp)}) (then
        ${stageLoop([], s('x', `(i32x4.min_s (i32x4.max_s ${g('x')} ${splat(word(2))}) ${splat(word(3))})`))}))
      (if (i32.eq ${g('op')} ${i32(STAGE_OP.truncate)}) (then
        ${stageLoop([], s('x', `(v128.and ${g('x')} ${splat(i32(255))})`))}))
      ${s('i', add(g('i'), i32(1)))}
      (br $S))))`;

/**
 * The store to dst: a row-major dst takes four elements at once, their low 1, 2 or 4 bytes (the same
 * truncation as a scalar store8/store16), the rest one at a time.
 */
const STORE = `
  (func $store (param $m i32) (param $row i32) (param $n0 i32) (param $n1 i32)
    (local $size i32) (local $d i32) (local $inc i32) (local $q i32) (local $end i32) (local $x v128)
    ${s('size', ctx('dstSize'))}
    ${s('d', add(ctx('dst'), mul(add(mul(g('m'), ctx('dstSm')), mul(g('n0'), ctx('dstSn'))), g('size'))))}
    ${s('inc', mul(ctx('dstSn'), g('size')))}
    ${s('q', add(g('row'), `(i32.shl ${g('n0')} ${i32(2)})`))} ${s('end', add(g('row'), `(i32.shl ${g('n1')} ${i32(2)})`))}
    (if (i32.eq ${ctx('dstSn')} ${i32(1)}) (then
      (block $B (loop $V
        (br_if $B (i32.gt_u (i32.add ${g('q')} ${i32(16)}) ${g('end')}))
        ${s('x', `(v128.load ${g('q')})`)}
        (if (i32.eq ${g('size')} ${i32(1)}) (then (v128.store32_lane 0 ${g('d')} (i8x16.shuffle 0 4 8 12 0 0 0 0 0 0 0 0 0 0 0 0 ${g('x')} ${g('x')}))))
        (if (i32.eq ${g('size')} ${i32(2)}) (then (v128.store64_lane 0 ${g('d')} (i8x16.shuffle 0 1 4 5 8 9 12 13 0 0 0 0 0 0 0 0 ${g('x')} ${g('x')}))))
        (if (i32.eq ${g('size')} ${i32(4)}) (then (v128.store ${g('d')} ${g('x')})))
        ${s('d', add(g('d'), `(i32.shl ${g('size')} ${i32(2)})`))} ${s('q', add(g('q'), i32(16)))}
        (br $V)))))
    (if (i32.ge_u ${g('q')} ${g('end')}) (then (return)))
    ${[
      [1, 'i32.store8'],
      [2, 'i32.store16'],
      [4, 'i32.store'],
    ]
      .map(
        ([size, op]) => `
    (if (i32.eq ${g('size')} ${i32(size as number)}) (then (loop $W
      (${op} ${g('d')} (i32.load ${g('q')}))
      ${s('d', add(g('d'), g('inc')))} ${s('q', add(g('q'), i32(4)))}
      (br_if $W (i32.lt_u ${g('q')} ${g('end')})))))`,
      )
      .join('')})`;

/** $output(m0, m1, n0, n1): rows [m0, m1) x columns [n0, n1) of C, four-term + program + store. */
export const OUTPUT_FUNCTIONS = `${FIXED_POINT}
${FOUR_TERM}
${STAGES}
${STORE}
  (func $output (export "output") (param $m0 i32) (param $m1 i32) (param $n0 i32) (param $n1 i32) (local $row i32)
    (loop $M
      ${s('row', add(ctx('C'), mul(g('m0'), `(i32.shl ${ctx('Np')} ${i32(2)})`)))}
      (call $fourTerm ${g('m0')} ${g('row')} ${g('n0')} ${g('n1')})
      (call $stages ${g('m0')} ${g('row')} ${g('n0')} ${g('n1')})
      (call $store ${g('m0')} ${g('row')} ${g('n0')} ${g('n1')})
      ${s('m0', add(g('m0'), i32(1)))}
      (br_if $M (i32.lt_u ${g('m0')} ${g('m1')}))))`;
