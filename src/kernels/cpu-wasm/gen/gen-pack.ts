// WAT generator for the PACK stage of the WebAssembly CPU kernels (PACK -> gemm -> output): each
// operand into the micro-kernel's layout (gen-gemm.ts: lhs tiles of mr rows, rhs panels of 8 columns,
// k in groups of kstep, zero-padded) with the sum of each row and column, in one pass.
//   - A scalar packer for any storage order and any edge (element (o, k) at src + o*so + k*sk).
//   - SIMD packers for the common orders: a row-major rhs (8 adjacent columns are 8 adjacent bytes of
//     each row: two or four rows are interleaved with i8x16.shuffle) and, for the 16-bit kernel, a
//     row-major lhs (8 k of 4 rows are transposed into 4 k-pair groups). Full panels and tiles only; the
//     last partial one goes to the scalar packer. Rows past K are zeroed after the XOR (so that the
//     padding is zero in the packed domain), bytes read past an operand are never kept.

import { ctx, get, locals, set } from './wat.ts';
import { type CTX, KERNELS, NR, type WasmKernelKind } from '../layout.ts';

/** Packs tiles [t0, t1) of one operand (lhs: tiles of mr rows; rhs: panels of 8 columns) with their sums. */
function scalarPacker(kind: WasmKernelKind, operand: 'lhs' | 'rhs'): string {
  const { mr, kstep, elem } = KERNELS[kind];
  const R = operand === 'lhs' ? mr : NR;
  const f = (name: string) => ctx(`${operand}${name}` as keyof typeof CTX);
  const store = elem === 2 ? 'i32.store16' : 'i32.store8';
  const oneValue = (j: number) => `
        ${set('v', `(i32.load8_u (select ${get('in')} ${get('src')} (i32.lt_u ${get('k')} ${get('lim')})))`)}
        ${set('v', `(i32.shr_s (i32.shl (i32.xor ${get('v')} ${get('xor')}) ${get('sh')}) ${get('sh')})`)}
        ${set('v', `(select ${get('v')} (i32.const 0) (i32.lt_u ${get('k')} ${get('lim')}))`)}
        ${set('sum', `(i32.add ${get('sum')} ${get('v')})`)}
        (${store} offset=${j * elem} ${get('out')} ${get('v')})
        ${set('in', `(i32.add ${get('in')} ${get('sk')})`)}
        ${set('k', `(i32.add ${get('k')} (i32.const 1))`)}`;
  return `
  (func $pack_${operand}_scalar_${kind} (param $t0 i32) (param $t1 i32)
    ${locals(['src', 'so', 'sk', 'xor', 'sh', 'outer', 'K', 'Kp', 'dst', 'sums', 't', 'r', 'o', 'k', 'v', 'sum', 'out', 'in', 'lim'])}
    ${set('src', f('Src'))} ${set('so', f('So'))} ${set('sk', f('Sk'))} ${set('xor', f('Xor'))} ${set('sh', f('Sh'))}
    ${set('outer', ctx(operand === 'lhs' ? 'M' : 'N'))} ${set('K', ctx('K'))} ${set('Kp', ctx('Kp'))}
    ${set('dst', ctx(operand === 'lhs' ? 'lhsPacked' : 'rhsPacked'))} ${set('sums', ctx(operand === 'lhs' ? 'rowSums' : 'colSums'))}
    (if (i32.ge_u ${get('t0')} ${get('t1')}) (then (return)))
    ${set('t', get('t0'))}
    (loop $T
      ${set('r', '(i32.const 0)')}
      (loop $R
        ${set('o', `(i32.add (i32.mul ${get('t')} (i32.const ${R})) ${get('r')})`)}
        ${set('lim', `(select ${get('K')} (i32.const 0) (i32.lt_u ${get('o')} ${get('outer')}))`)}
        ${set('in', `(i32.add ${get('src')} (i32.mul ${get('o')} ${get('so')}))`)}
        ${set('out', `(i32.add ${get('dst')} (i32.mul (i32.add (i32.mul ${get('t')} (i32.mul ${get('Kp')} (i32.const ${R}))) (i32.mul ${get('r')} (i32.const ${kstep}))) (i32.const ${elem})))`)}
        ${set('sum', '(i32.const 0)')} ${set('k', '(i32.const 0)')}
        (loop $G
          ${Array.from({ length: kstep }, (_, j) => oneValue(j)).join('')}
          ${set('out', `(i32.add ${get('out')} (i32.const ${R * kstep * elem}))`)}
          (br_if $G (i32.lt_u ${get('k')} ${get('Kp')})))
        (i32.store (i32.add ${get('sums')} (i32.shl ${get('o')} (i32.const 2))) ${get('sum')})
        ${set('r', `(i32.add ${get('r')} (i32.const 1))`)}
        (br_if $R (i32.lt_u ${get('r')} (i32.const ${R}))))
      ${set('t', `(i32.add ${get('t')} (i32.const 1))`)}
      (br_if $T (i32.lt_u ${get('t')} ${get('t1')}))))`;
}

const shuffle = (lanes: number[], a: string, b: string) => `(i8x16.shuffle ${lanes.join(' ')} ${a} ${b})`;
const INTERLEAVE_BYTES = [0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23];
const ext = (half: 'low' | 'high', signed: boolean, v: string) => `(i16x8.extend_${half}_i8x16_${signed ? 's' : 'u'} ${v})`;
const pairSums16 = (v: string) => `(i32x4.extadd_pairwise_i16x8_s ${v})`;

/** Row-major rhs, one full panel p (columns 8p..8p+7): rows k..k+kstep-1 interleaved per column. */
function rhsPanel(kind: WasmKernelKind): string {
  const { kstep, elem } = KERNELS[kind];
  const rows = Array.from({ length: kstep }, (_, j) => `r${j}`);
  const body = (signed: boolean) => {
    const load = rows.map((r, j) =>
      set(
        r,
        `(select (v128.xor (v128.load64_zero (i32.add ${get('in')} (i32.mul (i32.add ${get('k')} (i32.const ${j})) ${get('N')}))) ${get('xv')})
          (v128.const i32x4 0 0 0 0) (i32.lt_u (i32.add ${get('k')} (i32.const ${j})) ${get('K')}))`,
      ),
    );
    const pack =
      kind === 'i16'
        ? [
            set('il', shuffle(INTERLEAVE_BYTES, get('r0'), get('r1'))),
            set('lo', ext('low', signed, get('il'))),
            set('hi', ext('high', signed, get('il'))),
          ]
        : [
            set('il', shuffle(INTERLEAVE_BYTES, get('r0'), get('r1'))),
            set('jl', shuffle(INTERLEAVE_BYTES, get('r2'), get('r3'))),
            set('lo', shuffle([0, 1, 16, 17, 2, 3, 18, 19, 4, 5, 20, 21, 6, 7, 22, 23], get('il'), get('jl'))),
            set('hi', shuffle([8, 9, 24, 25, 10, 11, 26, 27, 12, 13, 28, 29, 14, 15, 30, 31], get('il'), get('jl'))),
          ];
    const sum = (v: string) => (kind === 'i16' ? pairSums16(v) : pairSums16(`(i16x8.extadd_pairwise_i8x16_${signed ? 's' : 'u'} ${v})`));
    return `(loop $G
        ${load.join('\n        ')}
        ${pack.join('\n        ')}
        (v128.store ${get('out')} ${get('lo')}) (v128.store offset=16 ${get('out')} ${get('hi')})
        ${set('s0', `(i32x4.add ${get('s0')} ${sum(get('lo'))})`)} ${set('s1', `(i32x4.add ${get('s1')} ${sum(get('hi'))})`)}
        ${set('out', `(i32.add ${get('out')} (i32.const 32))`)} ${set('k', `(i32.add ${get('k')} (i32.const ${kstep}))`)}
        (br_if $G (i32.lt_u ${get('k')} ${get('Kp')})))`;
  };
  return `
  (func $pack_rhs_panel_${kind} (param $p i32)
    ${locals(['in', 'out', 'k', 'K', 'Kp', 'N'])} ${locals([...rows, 'il', 'jl', 'lo', 'hi', 's0', 's1', 'xv'], 'v128')}
    ${set('N', ctx('N'))} ${set('K', ctx('K'))} ${set('Kp', ctx('Kp'))}
    ${set('in', `(i32.add ${ctx('rhsSrc')} (i32.shl ${get('p')} (i32.const 3)))`)}
    ${set('out', `(i32.add ${ctx('rhsPacked')} (i32.mul ${get('p')} (i32.mul ${get('Kp')} (i32.const ${NR * elem}))))`)}
    ${set('xv', `(i8x16.splat ${ctx('rhsXor')})`)}
    (if ${ctx('rhsSh')} (then ${body(true)}) (else ${body(false)}))
    (v128.store (i32.add ${ctx('colSums')} (i32.shl ${get('p')} (i32.const 5))) ${get('s0')})
    (v128.store offset=16 (i32.add ${ctx('colSums')} (i32.shl ${get('p')} (i32.const 5))) ${get('s1')}))`;
}

/** Row-major lhs, one full tile t of the 16-bit kernel (4 rows): 8 k of each row -> 4 k-pair groups. */
function lhsTileI16(): string {
  const body = (signed: boolean) => {
    const groups = [
      [0, 1, 8, 9, 16, 17, 24, 25, 2, 3, 10, 11, 18, 19, 26, 27],
      [4, 5, 12, 13, 20, 21, 28, 29, 6, 7, 14, 15, 22, 23, 30, 31],
    ];
    const stores = groups.flatMap((lanes, i) =>
      (['low', 'high'] as const).map((half, h) => {
        const g = 2 * i + h;
        const v = ext(half, signed, shuffle(lanes, get('v01'), get('v23')));
        const store = `${set('g', v)} ${set('s', `(i32x4.add ${get('s')} ${pairSums16(get('g'))})`)} (v128.store offset=${16 * g} ${get('out')} ${get('g')})`;
        return g === 0 ? store : `(if (i32.lt_u (i32.add ${get('k')} (i32.const ${2 * g})) ${get('Kp')}) (then ${store}))`;
      }),
    );
    return `(loop $G
        ${set('mask', `(i8x16.gt_u (i8x16.splat (select (i32.sub ${get('K')} ${get('k')}) (i32.const 8) (i32.lt_u (i32.sub ${get('K')} ${get('k')}) (i32.const 8)))) ${get('iota')})`)}
        ${set('v01', `(v128.and (v128.xor (v128.load64_lane 1 (i32.add ${get('row1')} ${get('k')}) (v128.load64_zero (i32.add ${get('row0')} ${get('k')}))) ${get('xv')}) ${get('mask')})`)}
        ${set('v23', `(v128.and (v128.xor (v128.load64_lane 1 (i32.add ${get('row3')} ${get('k')}) (v128.load64_zero (i32.add ${get('row2')} ${get('k')}))) ${get('xv')}) ${get('mask')})`)}
        ${stores.join('\n        ')}
        ${set('out', `(i32.add ${get('out')} (i32.const 64))`)} ${set('k', `(i32.add ${get('k')} (i32.const 8))`)}
        (br_if $G (i32.lt_u ${get('k')} ${get('Kp')})))`;
  };
  return `
  (func $pack_lhs_tile_i16 (param $t i32)
    ${locals(['row0', 'row1', 'row2', 'row3', 'out', 'k', 'K', 'Kp', 'so'])} ${locals(['v01', 'v23', 'g', 's', 'mask', 'iota', 'xv'], 'v128')}
    ${set('K', ctx('K'))} ${set('Kp', ctx('Kp'))} ${set('so', ctx('lhsSo'))}
    ${set('row0', `(i32.add ${ctx('lhsSrc')} (i32.mul (i32.shl ${get('t')} (i32.const 2)) ${get('so')}))`)}
    ${set('row1', `(i32.add ${get('row0')} ${get('so')})`)} ${set('row2', `(i32.add ${get('row1')} ${get('so')})`)} ${set('row3', `(i32.add ${get('row2')} ${get('so')})`)}
    ${set('out', `(i32.add ${ctx('lhsPacked')} (i32.mul ${get('t')} (i32.shl ${get('Kp')} (i32.const 3))))`)}
    ${set('xv', `(i8x16.splat ${ctx('lhsXor')})`)} ${set('iota', '(v128.const i8x16 0 1 2 3 4 5 6 7 0 1 2 3 4 5 6 7)')}
    (if ${ctx('lhsSh')} (then ${body(true)}) (else ${body(false)}))
    (v128.store (i32.add ${ctx('rowSums')} (i32.shl ${get('t')} (i32.const 4))) ${get('s')}))`;
}

/** The exported packers: SIMD for full panels/tiles in the orders above, scalar for the rest. */
function dispatcher(kind: WasmKernelKind, operand: 'lhs' | 'rhs', simd: string | null): string {
  const R = operand === 'lhs' ? KERNELS[kind].mr : NR;
  const scalar = `$pack_${operand}_scalar_${kind}`;
  if (!simd)
    return `
  (func $pack_${operand}_${kind} (export "pack_${operand}_${kind}") (param $t0 i32) (param $t1 i32)
    (call ${scalar} ${get('t0')} ${get('t1')}))`;
  const contiguous = operand === 'lhs' ? ctx('lhsSk') : ctx('rhsSo');
  const outer = ctx(operand === 'lhs' ? 'M' : 'N');
  return `
  (func $pack_${operand}_${kind} (export "pack_${operand}_${kind}") (param $t0 i32) (param $t1 i32) (local $t i32)
    (if (i32.or (i32.ne ${contiguous} (i32.const 1)) (i32.ge_u ${get('t0')} ${get('t1')})) (then (call ${scalar} ${get('t0')} ${get('t1')}) (return)))
    ${set('t', get('t0'))}
    (loop $T
      (if (i32.le_u (i32.mul (i32.add ${get('t')} (i32.const 1)) (i32.const ${R})) ${outer})
        (then (call ${simd} ${get('t')}))
        (else (call ${scalar} ${get('t')} (i32.add ${get('t')} (i32.const 1)))))
      ${set('t', `(i32.add ${get('t')} (i32.const 1))`)}
      (br_if $T (i32.lt_u ${get('t')} ${get('t1')}))))`;
}

/** Every pack function of one kernel kind; exports pack_lhs_<kind>(t0, t1) and pack_rhs_<kind>(p0, p1). */
export function packFunctions(kind: WasmKernelKind): string {
  return [
    scalarPacker(kind, 'lhs'),
    scalarPacker(kind, 'rhs'),
    rhsPanel(kind),
    kind === 'i16' ? lhsTileI16() : '',
    dispatcher(kind, 'lhs', kind === 'i16' ? '$pack_lhs_tile_i16' : null),
    dispatcher(kind, 'rhs', `$pack_rhs_panel_${kind}`),
  ].join('\n');
}
