// WAT generator for the few-row GEMM stage of the relaxed 8-bit kernel over a prepacked rhs (pack ->
// GEMM -> output; the rhs was packed once by kernel.ts prepackCpu into the relaxed panels of gen-gemm.ts,
// the lhs is packed per call by prepare.ts). The packed 6x8 micro-kernel wastes most of its dot products on a
// few rows (at one row, 10 of every 12), so up to RELAXED_FEW_MAX_M rows take these instead: the shapes
// of layout.ts QUAD_SHAPES, mr rows x w panels, eight accumulators, over the same panels.
//
// Layout: a relaxed panel is [Kp/4][8][4] signed bytes (columns 0..3 of a quad, then 4..7, each column's
// four k side by side), panels Kp * 8 bytes apart; the lhs tile is [Kp/4][mr][4] bytes, the packed lhs
// A' = A - cA that prepare.ts makes with pack_lhs_few and narrow_lhs (unsigned for usdot, signed for sdot, as
// the 6x8 kernel's). Per quad, each panel's two vectors meet each row's splatted quad in
// `i32x4.relaxed_dot_i8x16_i7x16_add_s`, exactly as in the 6x8 kernel, so the engine's proof of that
// kernel (engine.ts) covers these too. C and the output stage are the 6x8 kernel's.

import { ctx, get, locals, set } from './wat.ts';
import { QUAD_SHAPES } from '../layout.ts';
import { dynamic, stripDriver } from './gen-nibble.ts';

/** The mr x (8 w) micro-kernel over `quads` k-quads: a = lhs tile, b = its first panel, ps = bytes between panels, c = C. */
function microKernel(mr: number, w: number): string {
  const acc = Array.from({ length: 2 * mr * w }, (_, i) => `c${i}`); // acc[(r * w + j) * 2 + h]
  const panels = Array.from({ length: w }, (_, j) => j);
  const ptr = (j: number) => (j === 0 ? 'b' : `b${j}`);
  // The rows' splats first, then each panel's two vectors, used by every row as soon as they are loaded.
  const step = [
    ...Array.from({ length: mr }, (_, r) => set(`a${r}`, `(v128.load32_splat offset=${4 * r} ${get('a')})`)),
    ...panels.flatMap((j) => [
      set('x0', `(v128.load ${get(ptr(j))})`),
      set('x1', `(v128.load offset=16 ${get(ptr(j))})`),
      ...Array.from({ length: mr }, (_, r) =>
        [0, 1].map((h) => {
          const c = acc[(r * w + j) * 2 + h];
          return set(c, `(i32x4.relaxed_dot_i8x16_i7x16_add_s ${get(`x${h}`)} ${get(`a${r}`)} ${get(c)})`);
        }),
      ).flat(),
    ]),
  ];
  const stores = acc.map((c, i) => {
    const h = i & 1;
    const j = (i >> 1) % w;
    const r = Math.floor(i / (2 * w));
    return `(v128.store offset=${32 * j + 16 * h} (i32.add ${get('c')} (i32.mul ${get('ldc')} (i32.const ${r}))) ${get(c)})`;
  });
  const others = panels.slice(1).map(ptr);
  return `
  (func $mkx_${mr}x${w} (param $a i32) (param $b i32) (param $c i32) (param $ldc i32) (param $quads i32) (param $ps i32)
    ${locals(others)} ${locals([...acc, ...Array.from({ length: mr }, (_, r) => `a${r}`), 'x0', 'x1'], 'v128')}
    ${others.map((p, i) => set(p, `(i32.add ${get('b')} (i32.mul ${get('ps')} (i32.const ${i + 1})))`)).join(' ')}
    (loop $K
      ${step.join('\n      ')}
      ${set('a', `(i32.add ${get('a')} (i32.const ${4 * mr}))`)}
      ${panels.map((j) => set(ptr(j), `(i32.add ${get(ptr(j))} (i32.const 32))`)).join(' ')}
      (br_if $K (local.tee $quads (i32.sub ${get('quads')} (i32.const 1)))))
    ${stores.join('\n    ')})`;
}

/** The driver of one shape: column groups of w panels of the relaxed panels at CTX rhsPacked. */
function driver(mr: number, w: number): string {
  const ps = `(i32.shl ${ctx('Kp')} (i32.const 3))`;
  const at = set('b', `(i32.add ${ctx('rhsPacked')} (i32.mul (i32.mul ${get('p')} (i32.const ${w})) ${ps}))`);
  const tile = `(call $mkx_${mr}x${w} ${get('a')} ${get('b')} ${get('c')} ${get('ldc')} ${get('quads')} ${ps})`;
  return stripDriver(`gemm_relaxed_${mr}x${w}`, mr, 8 * w, 32, at, tile, 1);
}

/** The relaxed few-row kernels (the relaxed variant of the module only): per QUAD_SHAPES shape a micro-kernel, its driver and its split over threads. */
export function relaxedFewFunctions(): string {
  return QUAD_SHAPES.flatMap(({ mr, w }) => [microKernel(mr, w), driver(mr, w), dynamic(`gemm_relaxed_${mr}x${w}`)]).join('\n');
}
