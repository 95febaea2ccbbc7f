// WAT generator for the GEMM stage over a prepacked rhs of at most 4 bits, two values per byte
// (pack -> GEMM -> output; the rhs was packed once by kernel.ts prepackCpu, the lhs is packed per call by
// run.ts). Half the bytes of an 8-bit rhs are read, which is what a few-row GEMM waits for.
//
// Layout (layout.ts NIBBLE_*): the rhs in panels of 8 columns; per panel, per quad of k (4q..4q+3),
// 16 bytes. Byte j holds, in its low nibble, element j of [b0 | b1] and, in its high nibble, element j of
// [b2 | b3], where b0 = the (k, k+1) = (4q, 4q+1) pairs of columns 0..3 as i16x8
// [c0k0 c0k1 c1k0 c1k1 c2k0 c2k1 c3k0 c3k1], b1 the same for columns 4..7, and b2, b3 the same for
// (4q+2, 4q+3). So one v128.load, two masks and four widenings (i16x8.extend_*_i8x16_u) give four
// vectors of pairs, each met by a splatted lhs pair in `i32x4.dot_i16x8_s` (exact: |l'| <= 255,
// r' <= 15). The lhs tile is [Kp/4][mr][4] i16: the requantized lhs values l' (no zero point
// subtracted: the output stage's lowbit expansion takes the raw sum of l'r', the row sums of l' and the
// prepacked column sums of r'). Micro-kernels of mr rows x w panels keep 2*mr*w = 8 accumulators; the
// driver walks C in column groups of w panels, the row tiles inside (so a group's panels are read from
// memory once and from cache for the next tiles), and runs the output stage per cache block.

import { ctx, get, locals, panelLoops, set } from './wat.ts';
import { CTX, DIRECT, NIBBLE_SHAPES } from '../layout.ts';

/** The mr x (8 w) micro-kernel over `quads` k-quads: a = lhs tile, b = the first panel (panels `stride` bytes apart), c = C. */
function microKernel(mr: number, w: number): string {
  const acc = Array.from({ length: 2 * mr * w }, (_, i) => `c${i}`); // acc[(r * w + j) * 2 + h]
  const step: string[] = [];
  const mask = '(v128.const i8x16 15 15 15 15 15 15 15 15 15 15 15 15 15 15 15 15)';
  for (let j = 0; j < w; j++) {
    const at = j === 0 ? get('b') : `(i32.add ${get('b')} ${get(`s${j}`)})`;
    step.push(
      set('v', `(v128.load ${at})`),
      set('lo', `(v128.and ${get('v')} ${mask})`),
      set('hi', `(v128.and (i16x8.shr_u ${get('v')} (i32.const 4)) ${mask})`),
      set(`p${j}0`, `(i16x8.extend_low_i8x16_u ${get('lo')})`),
      set(`p${j}1`, `(i16x8.extend_high_i8x16_u ${get('lo')})`),
      set(`p${j}2`, `(i16x8.extend_low_i8x16_u ${get('hi')})`),
      set(`p${j}3`, `(i16x8.extend_high_i8x16_u ${get('hi')})`),
    );
  }
  for (let r = 0; r < mr; r++) {
    step.push(
      set('a0', `(v128.load32_splat offset=${8 * r} ${get('a')})`),
      set('a1', `(v128.load32_splat offset=${8 * r + 4} ${get('a')})`),
    );
    for (let j = 0; j < w; j++) {
      for (const h of [0, 1]) {
        const c = acc[(r * w + j) * 2 + h];
        step.push(
          set(
            c,
            `(i32x4.add ${get(c)} (i32x4.add (i32x4.dot_i16x8_s ${get('a0')} ${get(`p${j}${h}`)}) (i32x4.dot_i16x8_s ${get('a1')} ${get(`p${j}${h + 2}`)})))`,
          ),
        );
      }
    }
  }
  const stores = acc.map((c, i) => {
    const h = i & 1;
    const j = (i >> 1) % w;
    const r = Math.floor(i / (2 * w));
    return `(v128.store offset=${32 * j + 16 * h} (i32.add ${get('c')} (i32.mul ${get('ldc')} (i32.const ${r}))) ${get(c)})`;
  });
  const pairs = Array.from({ length: w }, (_, j) => [0, 1, 2, 3].map((h) => `p${j}${h}`)).flat();
  const strides = Array.from({ length: w - 1 }, (_, j) => `s${j + 1}`);
  return `
  (func $mkn_${mr}x${w} (param $a i32) (param $b i32) (param $c i32) (param $ldc i32) (param $quads i32) (param $stride i32)
    ${locals([...acc, ...pairs, 'a0', 'a1', 'v', 'lo', 'hi'], 'v128')} ${locals(strides)}
    ${strides.map((s, j) => set(s, `(i32.mul ${get('stride')} (i32.const ${j + 1}))`)).join(' ')}
    (loop $K
      ${step.join('\n      ')}
      ${set('a', `(i32.add ${get('a')} (i32.const ${8 * mr}))`)}
      ${set('b', `(i32.add ${get('b')} (i32.const 16))`)}
      (br_if $K (local.tee $quads (i32.sub ${get('quads')} (i32.const 1)))))
    ${stores.join('\n    ')})`;
}

/** The driver of one shape: lhs tiles [mt0, mt1) x column groups [g0, g1) of 8 w columns, in blocks of nBlock groups, each block's output stage right after it. */
function driver(mr: number, w: number): string {
  const nc = 8 * w;
  return `
  (func $gemm_nibble_${mr}x${w} (export "gemm_nibble_${mr}x${w}") (param $mt0 i32) (param $mt1 i32) (param $p0 i32) (param $p1 i32)
    ${locals(['pb', 'pe', 'mt', 'p', 'ldc', 'tileBytes', 'quads', 'stride', 'M', 'N', 'a', 'b', 'c', 'm1'])}
    (if (i32.or (i32.ge_u ${get('mt0')} ${get('mt1')}) (i32.ge_u ${get('p0')} ${get('p1')})) (then (return)))
    ${set('ldc', `(i32.shl ${ctx('Np')} (i32.const 2))`)} ${set('tileBytes', `(i32.mul ${ctx('Kp')} (i32.const ${mr * 2}))`)}
    ${set('quads', `(i32.shr_u ${ctx('Kp')} (i32.const 2))`)} ${set('stride', `(i32.shl ${ctx('Kp')} (i32.const 2))`)}
    ${set('M', ctx('M'))} ${set('N', ctx('N'))}
    ${set('m1', `(select (i32.mul ${get('mt1')} (i32.const ${mr})) ${get('M')} (i32.lt_u (i32.mul ${get('mt1')} (i32.const ${mr})) ${get('M')}))`)}
    ${panelLoops(
      mr,
      nc,
      set('b', `(i32.add ${ctx('rhsPacked')} (i32.mul (i32.mul ${get('p')} (i32.const ${w})) ${get('stride')}))`),
      `(call $mkn_${mr}x${w} ${get('a')} ${get('b')} ${get('c')} ${get('ldc')} ${get('quads')} ${get('stride')})`,
    )})`;
}

/** The 4-bit micro-kernels and their drivers, one per shape of NIBBLE_SHAPES, and the few-row lhs pack. */
export function nibbleFunctions(): string {
  const drivers = [
    ...DIRECT.map(({ mr, nc }) => `gemm_direct_${mr}x${nc}`),
    ...NIBBLE_SHAPES.map(({ mr, w }) => `gemm_nibble_${mr}x${w}`),
    'gemm_i16',
  ];
  return [...NIBBLE_SHAPES.flatMap(({ mr, w }) => [microKernel(mr, w), driver(mr, w)]), PACK_LHS_FEW, ...drivers.map(dynamic)].join('\n');
}

/**
 * The dynamic split of a few-row driver (or of the 16-bit kernel over a prepacked rhs) over threads: each thread takes `chunk` column groups at a time
 * from the shared counter CTX chunkNext (zeroed by the runtime before the job) until all `total` are
 * taken, so that a thread the OS runs late leaves its share to the others instead of holding them up.
 */
function dynamic(name: string): string {
  return `
  (func $dyn_${name} (export "dyn_${name}") (param $mt0 i32) (param $mt1 i32) (param $total i32) (param $chunk i32) (local $p i32) (local $e i32)
    (loop $L
      ${set('p', `(i32.atomic.rmw.add (i32.const ${4 * CTX.chunkNext}) ${get('chunk')})`)}
      (if (i32.lt_u ${get('p')} ${get('total')}) (then
        ${set('e', `(i32.add ${get('p')} ${get('chunk')})`)}
        (call $${name} ${get('mt0')} ${get('mt1')} ${get('p')} (select ${get('e')} ${get('total')} (i32.lt_u ${get('e')} ${get('total')})))
        (br $L)))))`;
}

/**
 * The lhs pack of the few-row kernels (the direct variant of gen-direct.ts and the 4-bit kernel above):
 * rows [0, M) of the bytes at `src` (element (m, k) at src + m*so + k*sk, read signed or not) minus a
 * per-row `sub` (i32 at sub + 4m), as i16 in tiles of 2^mrl rows, [Kp/g][mr][g] with g = 2^gl; each
 * row's sum of them at sums + 4m. The caller zeroes the tiles first (padding past M and K stays zero).
 * Run on the calling thread (a few rows): in WebAssembly, so that it runs compiled from the first call.
 */
const PACK_LHS_FEW = `
  (func $pack_lhs_few (export "pack_lhs_few") (param $src i32) (param $so i32) (param $sk i32) (param $signed i32) (param $M i32)
    (param $K i32) (param $Kp i32) (param $mrl i32) (param $gl i32) (param $out i32) (param $sums i32) (param $sub i32)
    ${locals(['m', 'k', 'v', 'sum', 'base', 's', 'at', 'z', 'mr', 'g'])}
    (if (i32.or (i32.eqz ${get('M')}) (i32.eqz ${get('K')})) (then (return)))
    ${set('mr', `(i32.shl (i32.const 1) ${get('mrl')})`)} ${set('g', `(i32.shl (i32.const 1) ${get('gl')})`)}
    (loop $M
      ${set('base', `(i32.add ${get('out')} (i32.shl (i32.add (i32.mul (i32.shr_u ${get('m')} ${get('mrl')}) (i32.mul ${get('Kp')} ${get('mr')})) (i32.shl (i32.and ${get('m')} (i32.sub ${get('mr')} (i32.const 1))) ${get('gl')})) (i32.const 1)))`)}
      ${set('z', `(i32.load (i32.add ${get('sub')} (i32.shl ${get('m')} (i32.const 2))))`)}
      ${set('s', `(i32.add ${get('src')} (i32.mul ${get('m')} ${get('so')}))`)}
      ${set('sum', '(i32.const 0)')} ${set('k', '(i32.const 0)')}
      (loop $K
        ${set('v', `(i32.sub (if (result i32) ${get('signed')} (then (i32.load8_s ${get('s')})) (else (i32.load8_u ${get('s')}))) ${get('z')})`)}
        ${set('at', `(i32.add ${get('base')} (i32.shl (i32.add (i32.shl (i32.shr_u ${get('k')} ${get('gl')}) (i32.add ${get('gl')} ${get('mrl')})) (i32.and ${get('k')} (i32.sub ${get('g')} (i32.const 1)))) (i32.const 1)))`)}
        (i32.store16 ${get('at')} ${get('v')})
        ${set('sum', `(i32.add ${get('sum')} ${get('v')})`)}
        ${set('s', `(i32.add ${get('s')} ${get('sk')})`)}
        (br_if $K (i32.lt_u (local.tee $k (i32.add ${get('k')} (i32.const 1))) ${get('K')})))
      (i32.store (i32.add ${get('sums')} (i32.shl ${get('m')} (i32.const 2))) ${get('sum')})
      (br_if $M (i32.lt_u (local.tee $m (i32.add ${get('m')} (i32.const 1))) ${get('M')}))))`;
