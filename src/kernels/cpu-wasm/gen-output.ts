// WAT generator for the OUTPUT stage of the WebAssembly CPU kernels (pack -> gemm -> OUTPUT), run by the
// driver (gen-gemm.ts) on each block of C right after its micro-kernels: the four-term zero-point
// expansion (with the less-than-8-bit RoundingMultiplyByConstantFraction terms of src/quant/lowbit.ts),
// the output program (the stages of src/types.ts encoded by stages.ts: bias, both quantize-down stages,
// scaleInt32ByFixedPointAndExponent with double or single rounding, clamp, the casts), and the store to
// dst in its order and dtype. The fixed-point functions are src/quant/fixedpoint.ts with native 64-bit
// products, inlined; tanh is not here (the runtime finishes a pipeline from its first tanh in JavaScript).

import { ctx } from './gen-gemm.ts';
import { OP, STAGE_WORDS } from './layout.ts';

const g = (n: string) => `(local.get $${n})`;
const s = (n: string, v: string) => `(local.set $${n} ${v})`;
const i32 = (v: number) => `(i32.const ${v})`;
const add = (a: string, b: string) => `(i32.add ${a} ${b})`;
const mul = (a: string, b: string) => `(i32.mul ${a} ${b})`;
const word = (i: number) => `(i32.load offset=${4 * i} ${g('pp')})`;

// The fixed-point functions of src/quant/fixedpoint.ts as inline WAT expressions (V8 does not inline
// small WebAssembly calls everywhere, and a call per function per element cost more than the GEMM).
// Each reads and writes the locals it names; `x`, `m`, `e`, `t`, `u` are i32 scratch, `p` is i64.
const MIN = i32(-2147483648);
const MAX = i32(2147483647);
/** SaturatingRoundingDoublingHighMul(x, m) of locals x, m. */
const srdhm = (x: string, m: string) => `(block (result i32)
      ${s('p', `(i64.mul (i64.extend_i32_s ${g(x)}) (i64.extend_i32_s ${g(m)}))`)}
      ${s('p', `(i64.add ${g('p')} (select (i64.const 1073741824) (i64.const -1073741823) (i64.ge_s ${g('p')} (i64.const 0))))`)}
      ${s('p', `(select (i64.add ${g('p')} (i64.const 2147483647)) ${g('p')} (i64.lt_s ${g('p')} (i64.const 0)))`)}
      (select ${MAX} (i32.wrap_i64 (i64.shr_s ${g('p')} (i64.const 31))) (i32.and (i32.eq ${g(x)} ${MIN}) (i32.eq ${g(m)} ${MIN}))))`;
/** RoundingDivideByPOT(v, e) of locals v, e (e in 0..31); uses t. */
const rdbp = (v: string, e: string) => `(block (result i32)
      ${s('t', `(i32.sub (i32.shl ${i32(1)} ${g(e)}) ${i32(1)})`)}
      (i32.add (i32.shr_s ${g(v)} ${g(e)})
        (i32.gt_s (i32.and ${g(v)} ${g('t')}) (i32.add (i32.shr_s ${g('t')} ${i32(1)}) (i32.lt_s ${g(v)} ${i32(0)})))))`;
/** x * 2^e saturated (e in 0..31; e = 0 needs no case: the threshold is then INT32_MAX); uses t. */
const sls = (x: string, e: string) => `(block (result i32)
      ${s('t', `(i32.sub (i32.shl ${i32(1)} (i32.sub ${i32(31)} ${g(e)})) ${i32(1)})`)}
      (select ${MAX} (select ${MIN} (i32.shl ${g(x)} ${g(e)}) (i32.lt_s ${g(x)} (i32.sub ${i32(0)} ${g('t')}))) (i32.gt_s ${g(x)} ${g('t')})))`;
/** MultiplyByQuantizedMultiplier, double rounding, of locals x, mm and exponent e; leaves the result in x. */
const mbqmDouble = (e: string) => `
      ${s('u', `(select ${g(e)} ${i32(0)} (i32.gt_s ${g(e)} ${i32(0)}))`)}
      ${s('x', sls('x', 'u'))}
      ${s('x', srdhm('x', 'mm'))}
      ${s('u', `(select ${i32(0)} (i32.sub ${i32(0)} ${g(e)}) (i32.gt_s ${g(e)} ${i32(0)}))`)}
      ${s('x', rdbp('x', 'u'))}`;
/** MultiplyByQuantizedMultiplier, single rounding (e in -31..30), of locals x, mm and exponent e; result in x. */
const mbqmSingle = (e: string) => `
      ${s('u', `(i32.sub ${i32(31)} ${g(e)})`)}
      ${s(
        'p',
        `(i64.shr_s (i64.add (i64.mul (i64.extend_i32_s ${g('x')}) (i64.extend_i32_s ${g('mm')}))
        (i64.shl (i64.const 1) (i64.extend_i32_u (i32.sub ${g('u')} ${i32(1)})))) (i64.extend_i32_u ${g('u')}))`,
      )}
      ${s('x', `(select ${MAX} (select ${MIN} (i32.wrap_i64 ${g('p')}) (i64.lt_s ${g('p')} (i64.const -2147483648))) (i64.gt_s ${g('p')} (i64.const 2147483647)))`)}`;

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

/** One stage's loop over the row: x is the element, pa/pc walk the stage's per-channel operands. */
const stageLoop = (body: string) => `
        (loop $E
          ${s('x', `(i32.load ${g('q')})`)}
          ${body}
          (i32.store ${g('q')} ${g('x')})
          ${s('q', add(g('q'), i32(4)))} ${s('pa', add(g('pa'), g('ia')))} ${s('pc', add(g('pc'), g('ic')))}
          (br_if $E (i32.lt_u ${g('q')} ${g('end')})))`;

/** Per-channel operand (ptr word w, stride word w+1): its address at (m, n0) and its step along n. */
const channel = (p: string, inc: string, w: number) => `
        ${s(p, add(word(w), mul(`(select ${g('n0')} ${g('m')} ${g('col')})`, word(w + 1))))}
        ${s(inc, `(select ${word(w + 1)} ${i32(0)} ${g('col')})`)}`;

const STAGES = `
  (func $stages (param $m i32) (param $row i32) (param $n0 i32) (param $n1 i32)
    (local $i i32) (local $pp i32) (local $op i32) (local $col i32) (local $q i32) (local $end i32) (local $x i32)
    (local $pa i32) (local $ia i32) (local $pc i32) (local $ic i32) (local $e i32) (local $m2 i32) (local $e2 i32)
    (local $t i32) (local $u i32) (local $k i32) (local $p i64) (local $mm i32)
    ${s('end', add(g('row'), `(i32.shl ${g('n1')} ${i32(2)})`))}
    (block $done (loop $S
      (br_if $done (i32.ge_u ${g('i')} ${ctx('stages')}))
      ${s('pp', add(ctx('program'), mul(g('i'), i32(4 * STAGE_WORDS))))}
      ${s('op', word(0))} ${s('col', word(1))}
      ${s('q', add(g('row'), `(i32.shl ${g('n0')} ${i32(2)})`))}
      ${s('pa', i32(0))} ${s('ia', i32(0))} ${s('pc', i32(0))} ${s('ic', i32(0))}
      (if (i32.eq ${g('op')} ${i32(OP.bias)}) (then ${channel('pa', 'ia', 2)}
        ${stageLoop(s('x', add(g('x'), `(i32.load ${g('pa')})`)))}))
      (if (i32.eq ${g('op')} ${i32(OP.scaleToUint8)}) (then ${channel('pa', 'ia', 2)} ${channel('pc', 'ic', 4)} ${s('e', word(6))}
        ${stageLoop(`${s('x', `(i32.mul (i32.add ${g('x')} (i32.load ${g('pa')})) (i32.load ${g('pc')}))`)} ${s('x', rdbp('x', 'e'))}`)}))
      (if (i32.eq ${g('op')} ${i32(OP.fixedPoint)}) (then ${s('m2', word(2))} ${s('e2', word(3))} ${s('k', word(4))}
        ${stageLoop(`${s('x', srdhm('x', 'm2'))} ${s('x', rdbp('x', 'e2'))} ${s('x', add(g('x'), g('k')))}`)}))
      (if (i32.eq ${g('op')} ${i32(OP.exponentDouble)}) (then ${channel('pa', 'ia', 2)} ${channel('pc', 'ic', 4)} ${s('e', word(6))}
        ${stageLoop(`${s('mm', `(i32.load ${g('pa')})`)} ${s('e2', `(i32.load ${g('pc')})`)} ${mbqmDouble('e2')} ${s('x', add(g('x'), g('e')))}`)}))
      (if (i32.eq ${g('op')} ${i32(OP.exponentSingle)}) (then ${channel('pa', 'ia', 2)} ${channel('pc', 'ic', 4)} ${s('e', word(6))}
        ${stageLoop(`${s('mm', `(i32.load ${g('pa')})`)} ${s('e2', `(i32.load ${g('pc')})`)} ${mbqmSingle('e2')} ${s('x', add(g('x'), g('e')))}`)}))
      (if (i32.eq ${g('op')} ${i32(OP.clamp)}) (then ${s('e', word(3))}
        ${stageLoop(`${s('x', `(select ${g('x')} ${word(2)} (i32.gt_s ${g('x')} ${word(2)}))`)} ${s('x', `(select ${g('x')} ${g('e')} (i32.lt_s ${g('x')} ${g('e')}))`)}`)}))
      (if (i32.eq ${g('op')} ${i32(OP.truncate)}) (then
        ${stageLoop(s('x', `(i32.and ${g('x')} ${i32(255)})`))}))
      ${s('i', add(g('i'), i32(1)))}
      (br $S))))`;

const STORE = `
  (func $store (param $m i32) (param $row i32) (param $n0 i32) (param $n1 i32)
    (local $size i32) (local $d i32) (local $inc i32) (local $q i32) (local $end i32)
    ${s('size', ctx('dstSize'))}
    ${s('d', add(ctx('dst'), mul(add(mul(g('m'), ctx('dstSm')), mul(g('n0'), ctx('dstSn'))), g('size'))))}
    ${s('inc', mul(ctx('dstSn'), g('size')))}
    ${s('q', add(g('row'), `(i32.shl ${g('n0')} ${i32(2)})`))} ${s('end', add(g('row'), `(i32.shl ${g('n1')} ${i32(2)})`))}
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
