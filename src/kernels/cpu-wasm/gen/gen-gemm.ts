// WAT generator for the PACK and GEMM stages of the WebAssembly CPU kernels (pack -> gemm -> output; the
// output stage is gen-output.ts). Emitted once by the module generator (generate.ts), never at run time.
//
// Layout (layout.ts KERNELS): the lhs is packed in tiles of `mr` rows, the rhs in panels of NR = 8
// columns, both with k in groups of `kstep` (K padded with zeros to Kp):
//   lhs tile t:  [Kp/kstep][mr][kstep] values,   rhs panel p: [Kp/kstep][8][kstep] values,
// i16 for the exact kernel (kstep 2: `i32x4.dot_i16x8_s` of a splatted (k, k+1) lhs pair with four
// columns' pairs), bytes for relaxed SIMD (kstep 4: `i32x4.relaxed_dot_i8x16_i7x16_add_s`, the rhs
// signed, the splatted lhs quad the 7-bit operand). Either way a group of one row or column is 4 bytes,
// and the sums of each row and column are taken while packing. The micro-kernel keeps mr x 8 int32
// accumulators in 2*mr registers over the whole depth and stores them to C (Mp x Np int32); the driver
// walks C in cache blocks of rhs panels and runs the output stage on each block while it is hot.

import { packFunctions } from './gen-pack.ts';
import { KERNELS, NR, type WasmKernelKind } from '../layout.ts';
import { ctx, get, locals, set } from './wat.ts';

/** The mr x 8 micro-kernel over `steps` k-groups: a = lhs tile, b = rhs panel, c = C at (m0, n0), ldc in bytes. */
function microKernel(kind: WasmKernelKind): string {
  const { mr } = KERNELS[kind];
  const acc = Array.from({ length: 2 * mr }, (_, i) => `c${i}`);
  const step: string[] = [set('b0', `(v128.load ${get('b')})`), set('b1', `(v128.load offset=16 ${get('b')})`)];
  for (let r = 0; r < mr; r++) {
    step.push(set('a0', `(v128.load32_splat offset=${4 * r} ${get('a')})`));
    for (const h of [0, 1]) {
      const c = acc[2 * r + h];
      step.push(
        kind === 'i16'
          ? set(c, `(i32x4.add ${get(c)} (i32x4.dot_i16x8_s ${get('a0')} ${get(`b${h}`)}))`)
          : set(c, `(i32x4.relaxed_dot_i8x16_i7x16_add_s ${get(`b${h}`)} ${get('a0')} ${get(c)})`),
      );
    }
  }
  const stores = acc.map((c, i) => {
    const r = i >> 1;
    return `(v128.store offset=${(i & 1) * 16} (i32.add ${get('c')} (i32.mul ${get('ldc')} (i32.const ${r}))) ${get(c)})`;
  });
  return `
  (func $mk_${kind} (param $a i32) (param $b i32) (param $c i32) (param $ldc i32) (param $steps i32)
    ${locals([...acc, 'a0', 'b0', 'b1'], 'v128')}
    (loop $K
      ${step.join('\n      ')}
      ${set('a', `(i32.add ${get('a')} (i32.const ${4 * mr}))`)}
      ${set('b', `(i32.add ${get('b')} (i32.const 32))`)}
      (br_if $K (local.tee $steps (i32.sub ${get('steps')} (i32.const 1)))))
    ${stores.join('\n    ')})`;
}

/**
 * The driver: lhs tiles [mt0, mt1) x rhs panels [p0, p1) of C, in blocks of nBlock panels (which stay
 * in L2 while every lhs tile of the range passes over them); the output stage of each tile's rows over
 * the block follows its micro-kernels.
 */
function driver(kind: WasmKernelKind): string {
  const { mr, kstep, elem } = KERNELS[kind];
  return `
  (func $gemm_${kind} (export "gemm_${kind}") (param $mt0 i32) (param $mt1 i32) (param $p0 i32) (param $p1 i32)
    ${locals(['pb', 'pe', 'mt', 'p', 'nb', 'ldc', 'tileBytes', 'panelBytes', 'steps', 'lhs', 'rhs', 'C', 'M', 'N', 'a', 'crow', 'm0'])}
    (if (i32.or (i32.ge_u ${get('mt0')} ${get('mt1')}) (i32.ge_u ${get('p0')} ${get('p1')})) (then (return)))
    ${set('nb', ctx('nBlock'))} ${set('ldc', `(i32.shl ${ctx('Np')} (i32.const 2))`)}
    ${set('tileBytes', `(i32.mul ${ctx('Kp')} (i32.const ${mr * elem}))`)}
    ${set('panelBytes', `(i32.mul ${ctx('Kp')} (i32.const ${NR * elem}))`)}
    ${set('steps', `(i32.div_u ${ctx('Kp')} (i32.const ${kstep}))`)}
    ${set('lhs', ctx('lhsPacked'))} ${set('rhs', ctx('rhsPacked'))} ${set('C', ctx('C'))} ${set('M', ctx('M'))} ${set('N', ctx('N'))}
    ${set('pb', get('p0'))}
    (loop $B
      ${set('pe', `(select (i32.add ${get('pb')} ${get('nb')}) ${get('p1')} (i32.lt_u (i32.add ${get('pb')} ${get('nb')}) ${get('p1')}))`)}
      ${set('mt', get('mt0'))}
      (loop $MT
        ${set('m0', `(i32.mul ${get('mt')} (i32.const ${mr}))`)}
        ${set('a', `(i32.add ${get('lhs')} (i32.mul ${get('mt')} ${get('tileBytes')}))`)}
        ${set('crow', `(i32.add ${get('C')} (i32.mul ${get('m0')} ${get('ldc')}))`)}
        ${set('p', get('pb'))}
        (loop $P
          (call $mk_${kind} ${get('a')} (i32.add ${get('rhs')} (i32.mul ${get('p')} ${get('panelBytes')}))
            (i32.add ${get('crow')} (i32.shl ${get('p')} (i32.const 5))) ${get('ldc')} ${get('steps')})
          ${set('p', `(i32.add ${get('p')} (i32.const 1))`)}
          (br_if $P (i32.lt_u ${get('p')} ${get('pe')})))
        (call $output ${get('m0')}
          (select (i32.add ${get('m0')} (i32.const ${mr})) ${get('M')} (i32.lt_u (i32.add ${get('m0')} (i32.const ${mr})) ${get('M')}))
          (i32.shl ${get('pb')} (i32.const 3))
          (select (i32.shl ${get('pe')} (i32.const 3)) ${get('N')} (i32.lt_u (i32.shl ${get('pe')} (i32.const 3)) ${get('N')})))
        ${set('mt', `(i32.add ${get('mt')} (i32.const 1))`)}
        (br_if $MT (i32.lt_u ${get('mt')} ${get('mt1')})))
      ${set('pb', get('pe'))}
      (br_if $B (i32.lt_u ${get('pb')} ${get('p1')}))))`;
}

/** The relaxed-SIMD probe: `iters` accumulations of relaxed_dot(splat8(a), splat8(b)); lane 0 of the sum. */
export const PROBE = `
  (func $probe (export "probe") (param $a i32) (param $b i32) (param $iters i32) (result i32)
    (local $acc v128) (local $x v128) (local $y v128)
    ${set('x', `(i8x16.splat ${get('a')})`)} ${set('y', `(i8x16.splat ${get('b')})`)}
    (loop $L
      ${set('acc', `(i32x4.relaxed_dot_i8x16_i7x16_add_s ${get('x')} ${get('y')} ${get('acc')})`)}
      (br_if $L (local.tee $iters (i32.sub ${get('iters')} (i32.const 1)))))
    (i32x4.extract_lane 0 ${get('acc')}))`;

/** Pack, micro-kernel and driver of one kernel kind. */
export function gemmFunctions(kind: WasmKernelKind): string {
  return [packFunctions(kind), microKernel(kind), driver(kind)].join('\n');
}
