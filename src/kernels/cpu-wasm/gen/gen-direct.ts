// WAT generator for the DIRECT variant of the 16-bit kernel (pack -> gemm -> output, with no rhs pack):
// for a few lhs rows the rhs packing costs more than the multiply (every rhs byte is read, widened and
// written once, then read again), so a row-major rhs is read where it lies. The runtime (prepare.ts) packs
// the few lhs rows itself, with the lhs zero point already subtracted (lhs - zL fits in 16 bits for
// every zero point it lets through), so that no column sums are needed: the four-term expansion
// reduces to raw - zR * rowSum. For each pair of rhs rows k, k+1 the micro-kernel loads `nc` adjacent
// columns of each, widened to 16 bits as it loads (`v128.load8x8_u` or `_s`), interleaves them into
// (k, k+1) pairs (i8x16.shuffle) and accumulates `i32x4.dot_i16x8_s` with each lhs row's splatted
// pair. Three shapes keep eight accumulators in registers: 1 row x 32 columns, 2 x 16 and 4 x 8
// (layout.ts DIRECT). The rhs is the caller's row-major bytes, rows CTX rhsSk apart (a prepacked rhs has
// its own few-row kernels, gen-nibble.ts). The rhs source has Kp rows (the last one zero where K is odd,
// prepare.ts); columns read past N land in C's padding columns, which are never stored.

import { ctx, get, locals, panelLoops, set } from './wat.ts';
import { DIRECT } from '../layout.ts';

/** The mr x nc micro-kernel over `steps` k pairs: a = lhs tile [Kp/2][mr][2] i16, b = rhs at (0, n0) with row stride ldb; c = C at (m0, n0). */
function microKernel(mr: number, nc: number, signed: boolean): string {
  const vectors = nc / 8; // 8 columns of one row widen into one v128
  const acc = Array.from({ length: (mr * nc) / 4 }, (_, i) => `c${i}`);
  const load = `v128.load8x8_${signed ? 's' : 'u'}`;
  const step: string[] = [];
  for (let v = 0; v < vectors; v++)
    step.push(
      set('r0', `(${load} offset=${8 * v} ${get('b')})`),
      set('r1', `(${load} offset=${8 * v} ${get('bn')})`),
      set(`b${2 * v}`, `(i8x16.shuffle 0 1 16 17 2 3 18 19 4 5 20 21 6 7 22 23 ${get('r0')} ${get('r1')})`),
      set(`b${2 * v + 1}`, `(i8x16.shuffle 8 9 24 25 10 11 26 27 12 13 28 29 14 15 30 31 ${get('r0')} ${get('r1')})`),
    );
  for (let r = 0; r < mr; r++) {
    step.push(set('a0', `(v128.load32_splat offset=${4 * r} ${get('a')})`));
    for (let h = 0; h < nc / 4; h++) {
      const c = acc[r * (nc / 4) + h];
      step.push(set(c, `(i32x4.add ${get(c)} (i32x4.dot_i16x8_s ${get('a0')} ${get(`b${h}`)}))`));
    }
  }
  const bs = Array.from({ length: nc / 4 }, (_, i) => `b${i}`);
  const stores = acc.map((c, i) => {
    const r = Math.floor(i / (nc / 4));
    const h = i % (nc / 4);
    return `(v128.store offset=${16 * h} (i32.add ${get('c')} (i32.mul ${get('ldc')} (i32.const ${r}))) ${get(c)})`;
  });
  return `
  (func $mkd_${mr}x${nc}_${signed ? 's' : 'u'} (param $a i32) (param $b i32) (param $c i32) (param $ldc i32) (param $steps i32) (param $ldb i32)
    ${locals([...acc, ...bs, 'a0', 'r0', 'r1'], 'v128')} (local $bn i32) (local $ldb2 i32)
    ${set('ldb2', `(i32.shl ${get('ldb')} (i32.const 1))`)}
    (loop $K
      ${set('bn', `(i32.add ${get('b')} ${get('ldb')})`)}
      ${step.join('\n      ')}
      ${set('a', `(i32.add ${get('a')} (i32.const ${4 * mr}))`)}
      ${set('b', `(i32.add ${get('b')} ${get('ldb2')})`)}
      (br_if $K (local.tee $steps (i32.sub ${get('steps')} (i32.const 1)))))
    ${stores.join('\n    ')})`;
}

/** One driver per micro-kernel shape: lhs tiles [mt0, mt1) x rhs panels [p0, p1) of nc columns, in blocks of nBlock panels, each block's output stage right after it. */
function driver(mr: number, nc: number): string {
  const call = (signed: boolean) =>
    `(call $mkd_${mr}x${nc}_${signed ? 's' : 'u'} ${get('a')} ${get('b')} ${get('c')} ${get('ldc')} ${get('steps')} ${get('ldb')})`;
  return `
  (func $gemm_direct_${mr}x${nc} (export "gemm_direct_${mr}x${nc}") (param $mt0 i32) (param $mt1 i32) (param $p0 i32) (param $p1 i32)
    ${locals(['pb', 'pe', 'mt', 'p', 'ldc', 'tileBytes', 'steps', 'ldb', 'signed', 'M', 'N', 'a', 'b', 'c', 'm1'])}
    (if (i32.or (i32.ge_u ${get('mt0')} ${get('mt1')}) (i32.ge_u ${get('p0')} ${get('p1')})) (then (return)))
    ${set('ldc', `(i32.shl ${ctx('Np')} (i32.const 2))`)} ${set('tileBytes', `(i32.mul ${ctx('Kp')} (i32.const ${mr * 2}))`)}
    ${set('steps', `(i32.shr_u ${ctx('Kp')} (i32.const 1))`)} ${set('ldb', ctx('rhsSk'))}
    ${set('signed', `(i32.eq ${ctx('rhsSh')} (i32.const 24))`)} ${set('M', ctx('M'))} ${set('N', ctx('N'))}
    ${set('m1', `(select (i32.mul ${get('mt1')} (i32.const ${mr})) ${get('M')} (i32.lt_u (i32.mul ${get('mt1')} (i32.const ${mr})) ${get('M')}))`)}
    ${panelLoops(
      mr,
      nc,
      set('b', `(i32.add ${ctx('rhsSrc')} (i32.mul ${get('p')} (i32.const ${nc})))`),
      `(if ${get('signed')} (then ${call(true)}) (else ${call(false)}))`,
    )})`;
}

/** The direct micro-kernels (each shape, unsigned or signed rhs) and their drivers. */
export function directFunctions(): string {
  return DIRECT.flatMap(({ mr, nc }) => [microKernel(mr, nc, false), microKernel(mr, nc, true), driver(mr, nc)]).join('\n');
}
