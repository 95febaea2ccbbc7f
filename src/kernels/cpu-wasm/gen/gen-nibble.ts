// WAT generator for the GEMM stage over a prepacked rhs in k-quads (pack -> GEMM -> output; the rhs was
// packed once by kernel.ts prepackCpu, the lhs is packed per call by prepare.ts): the few-row kernels of a
// prepacked rhs, at most 4 bits two values per byte, or 8 bits one per byte. A few-row GEMM waits for
// the rhs bytes and for the instructions that widen them, so both layouts are made for both.
//
// Layouts (layout.ts QUAD_SHAPES): the rhs in panels of 8 columns, in strips of STRIP_PANELS panels
// whose quads lie one after the other, each quad the strip's panels side by side (so a micro-kernel
// over w panels reads one stream). Per panel, per quad of k (4q..4q+3), the vectors b0 = the (k, k+1) =
// (4q, 4q+1) pairs of columns 0..3 as i16x8 [c0k0 c0k1 c1k0 c1k1 c2k0 c2k1 c3k0 c3k1], b1 the same for
// columns 4..7, and b2, b3 the same for (4q+2, 4q+3). Each is met by a splatted lhs pair in
// `i32x4.dot_i16x8_s`.
// - 4 bits, 16 bytes a panel's quad: 32-bit lane j holds columns j and j + 4, as i16 lanes of four
//   nibbles, (c_j k0, c_j k2, c_j+4 k0, c_j+4 k2) then (c_j k1, c_j k3, c_j+4 k1, c_j+4 k3), lowest
//   first. So each vector is the whole vector shifted right by 0, 4, 8 or 12 bits per i16 lane and
//   masked to 4 bits: three shifts and three masks, no widening shuffle (exact: |l'| <= 255, r' <= 15).
// - 8 bits (the byte lanes), 32 bytes a panel's quad: columns 0..3 then 4..7, column c's four bytes
//   [k0 k2 k1 k3] (QUAD_BYTE_ORDER). Read as i16 lanes, a column holds (k0 | k2 << 8, k1 | k3 << 8): the
//   low bytes are b0 (b1) and the high bytes b2 (b3), taken with a mask or shifts only, no shuffle
//   (which the widening of a row-major rhs needs, gen-direct.ts). The lhs is the direct variant's, lhs -
//   zL, so that |l'| <= 32767 and a pair's dot stays below 2^31.
// - The same byte lanes, widened (layout.ts WIDE, from three rows): `v128.load8x8_u` (or _s) of 8 bytes
//   gives two columns' quads as i16 [c k0, c k2, c k1, c k3, c' k0, ...], which a row's quad packed in
//   the same order (l0 l2 l1 l3, splatted twice) meets in one `i32x4.dot_i16x8_s`: lanes (c, k0 k2),
//   (c, k1 k3), (c', k0 k2), (c', k1 k3), added pairwise once at the end. The widening is part of the
//   load, one a column pair and quad whatever the rows, so it is spread over them.
// - 4 bits on relaxed SIMD (dot7, the relaxed variant of the module only; engine.ts decides): another
//   layout, a nibble per (column, k), met by `i16x8.relaxed_dot_i8x16_i7x16_s` (gen-dot7.ts).
// The lhs tile is [Kp/4][mr][4] i16 (in QUAD_BYTE_ORDER for the widening kernels; for 4 bits the
// requantized lhs l', no zero point subtracted: the output stage's lowbit expansion takes the raw sum
// of l'r', the row sums of l' and the prepacked column sums of r'). Micro-kernels of mr rows x w panels
// keep 2*mr*w = 8 accumulators; the driver walks C in column groups of w panels, the row tiles inside
// (so a group's panels are read from memory once and from cache for the next tiles), and runs the
// output stage per cache block.

import { ctx, get, locals, panelLoops, set } from './wat.ts';
import { CHUNK_COUNTERS, DIRECT, LANE, QUAD_SHAPES, STRIP_PANELS, WIDE } from '../layout.ts';

/** How a micro-kernel gets b0..b3 from the rhs: 4-bit nibbles, or 8-bit byte lanes read unsigned or signed. */
type Unpack = 'nibble' | 'u8' | 's8';
/** Bytes of one quad of one panel. */
const quadBytes = (u: Unpack) => (u === 'nibble' ? 16 : 32);
const kernelName = (mr: number, w: number, u: Unpack) => (u === 'nibble' ? `mkn_${mr}x${w}` : `mkl_${mr}x${w}_${u === 'u8' ? 'u' : 's'}`);

/**
 * Where accumulator i of an mr x (8 w) quad micro-kernel, acc[(r * w + j) * 2 + h], lies in C: row r's
 * address (c + r * ldc) and the byte offset of panel j's half h (columns 8j + 4h .. 8j + 4h + 3).
 */
export function accAt(i: number, w: number): { offset: number; row: string } {
  const h = i & 1;
  const j = (i >> 1) % w;
  const r = Math.floor(i / (2 * w));
  return { offset: 32 * j + 16 * h, row: `(i32.add ${get('c')} (i32.mul ${get('ldc')} (i32.const ${r})))` };
}

/** The mr x (8 w) micro-kernel over `quads` k-quads: a = lhs tile, b = its first panel in the strip's first quad, c = C. */
function microKernel(mr: number, w: number, unpack: Unpack): string {
  const acc = Array.from({ length: 2 * mr * w }, (_, i) => `c${i}`); // acc[(r * w + j) * 2 + h]
  // The mask lives in a local set before the loop: an engine may rebuild a v128.const at every use
  // (Node 24 did: 21.5 against 34.3 GMAC/s for the one-row byte lanes, measured). Signed bytes need none.
  const maskValue =
    unpack === 'nibble' ? '(v128.const i16x8 15 15 15 15 15 15 15 15)' : '(v128.const i16x8 255 255 255 255 255 255 255 255)';
  const low = (v: string) =>
    unpack === 'u8' ? `(v128.and ${v} ${get('mask')})` : `(i16x8.shr_s (i16x8.shl ${v} (i32.const 8)) (i32.const 8))`;
  const high = (v: string) => `(i16x8.shr_${unpack === 'u8' ? 'u' : 's'} ${v} (i32.const 8))`;
  /** Nibbles `shift` bits up in each i16 lane of v, as i16 values (the top ones need no mask). */
  const nibbles = (shift: number) => {
    const shifted = shift ? `(i16x8.shr_u ${get('v')} (i32.const ${shift}))` : get('v');
    return shift === 12 ? shifted : `(v128.and ${shifted} ${get('mask')})`;
  };
  /**
   * Half h of panel j this quad (columns 0..3 or 4..7) into locals `lo`, its (k0, k1) pairs, and `hi`,
   * its (k2, k3) pairs. 4 bits: one load serves both halves; 8 bits: 16 bytes a half.
   */
  const unpackHalf = (j: number, h: number, lo: string, hi: string): string[] => {
    const at = j * quadBytes(unpack);
    if (unpack === 'nibble')
      return [...(h === 0 ? [set('v', `(v128.load offset=${at} ${get('b')})`)] : []), set(lo, nibbles(8 * h)), set(hi, nibbles(8 * h + 4))];
    return [set('v', `(v128.load offset=${at + 16 * h} ${get('b')})`), set(lo, low(get('v'))), set(hi, high(get('v')))];
  };
  const unpackPanel = (j: number) => [...unpackHalf(j, 0, `p${j}0`, `p${j}2`), ...unpackHalf(j, 1, `p${j}1`, `p${j}3`)];
  const splats = (r: number) => [
    set('a0', `(v128.load32_splat offset=${8 * r} ${get('a')})`),
    set('a1', `(v128.load32_splat offset=${8 * r + 4} ${get('a')})`),
  ];
  /** Accumulator c += the row's (k0, k1) pair dotted with `lo` + its (k2, k3) pair dotted with `hi`. */
  const add = (c: string, lo: string, hi: string) =>
    set(c, `(i32x4.add ${get(c)} (i32x4.add (i32x4.dot_i16x8_s ${get('a0')} ${get(lo)}) (i32x4.dot_i16x8_s ${get('a1')} ${get(hi)})))`);
  const accumulate = (r: number, j: number) => [0, 1].map((h) => add(acc[(r * w + j) * 2 + h], `p${j}${h}`, `p${j}${h + 2}`));
  /** One row: half h of panel j unpacked and used at once. */
  const halfPanel = (j: number, h: number) => [...unpackHalf(j, h, 'lo', 'hi'), add(acc[j * 2 + h], 'lo', 'hi')];
  const panels = Array.from({ length: w }, (_, j) => j);
  // One row: each half panel is used as soon as it is unpacked (fewer vectors live at once, which some
  // engines' register allocators need); several rows: every panel first, then each row over them.
  const step =
    mr === 1
      ? [...splats(0), ...panels.flatMap((j) => [...halfPanel(j, 0), ...halfPanel(j, 1)])]
      : [
          ...panels.flatMap(unpackPanel),
          ...Array.from({ length: mr }, (_, r) => [...splats(r), ...panels.flatMap((j) => accumulate(r, j))]).flat(),
        ];
  const stores = acc.map((c, i) => {
    const { offset, row } = accAt(i, w);
    return `(v128.store offset=${offset} ${row} ${get(c)})`;
  });
  const pairs = Array.from({ length: w }, (_, j) => [0, 1, 2, 3].map((h) => `p${j}${h}`)).flat();
  return `
  (func $${kernelName(mr, w, unpack)} (param $a i32) (param $b i32) (param $c i32) (param $ldc i32) (param $quads i32)
    ${locals([...acc, ...pairs, 'a0', 'a1', 'v', 'lo', 'hi', 'mask'], 'v128')}
    ${unpack === 's8' ? '' : set('mask', maskValue)}
    (loop $K
      ${step.join('\n      ')}
      ${set('a', `(i32.add ${get('a')} (i32.const ${8 * mr}))`)}
      ${set('b', `(i32.add ${get('b')} (i32.const ${STRIP_PANELS * quadBytes(unpack)}))`)}
      (br_if $K (local.tee $quads (i32.sub ${get('quads')} (i32.const 1)))))
    ${stores.join('\n    ')})`;
}

/**
 * A few-row driver over a prepacked quad rhs at `base` (strips of STRIP_PANELS panels, `quadBytes` a
 * panel's quad): lhs tiles [mt0, mt1) x column groups [p0, p1) of nc columns, in blocks of nBlock
 * groups, each block's output stage right after it. `at` sets b for group p (locals P and strip may
 * help); `tile` runs the micro-kernel, with locals a, b, c, ldc, quads and signed (CTX rhsSh is 24) set.
 */
export function stripDriver(name: string, mr: number, nc: number, quadBytes: number, at: string, tile: string, lhsElem = 2): string {
  return `
  (func $${name} (export "${name}") (param $mt0 i32) (param $mt1 i32) (param $p0 i32) (param $p1 i32)
    ${locals(['pb', 'pe', 'mt', 'p', 'ldc', 'tileBytes', 'quads', 'strip', 'M', 'N', 'a', 'b', 'c', 'm1', 'signed', 'P'])}
    (if (i32.or (i32.ge_u ${get('mt0')} ${get('mt1')}) (i32.ge_u ${get('p0')} ${get('p1')})) (then (return)))
    ${set('ldc', `(i32.shl ${ctx('Np')} (i32.const 2))`)} ${set('tileBytes', `(i32.mul ${ctx('Kp')} (i32.const ${mr * lhsElem}))`)}
    ${set('quads', `(i32.shr_u ${ctx('Kp')} (i32.const 2))`)} ${set('strip', `(i32.mul ${get('quads')} (i32.const ${STRIP_PANELS * quadBytes}))`)}
    ${set('M', ctx('M'))} ${set('N', ctx('N'))} ${set('signed', `(i32.eq ${ctx('rhsSh')} (i32.const 24))`)}
    ${set('m1', `(select (i32.mul ${get('mt1')} (i32.const ${mr})) ${get('M')} (i32.lt_u (i32.mul ${get('mt1')} (i32.const ${mr})) ${get('M')}))`)}
    ${panelLoops(mr, nc, at, tile)})`;
}

/** The address of panel P's first quad in the strips at `base` (`strip` bytes each, `quadBytes` a panel's quad). */
export const stripAt = (base: string, P: string, quadBytes: number) =>
  `(i32.add ${base} (i32.add (i32.mul (i32.shr_u ${P} (i32.const 2)) ${get('strip')}) (i32.mul (i32.and ${P} (i32.const ${STRIP_PANELS - 1})) (i32.const ${quadBytes}))))`;

/**
 * The driver of one quad shape: column groups of w panels. 4 bits: the panels at CTX rhsPacked; 8 bits
 * (`lane`): the byte lanes at CTX rhsSrc, read signed where CTX rhsSh is 24.
 */
function driver(mr: number, w: number, lane: boolean): string {
  const unpack: Unpack = lane ? 'u8' : 'nibble';
  const call = (u: Unpack) => `(call $${kernelName(mr, w, u)} ${get('a')} ${get('b')} ${get('c')} ${get('ldc')} ${get('quads')})`;
  const at = [
    set('P', `(i32.mul ${get('p')} (i32.const ${w}))`),
    set('b', stripAt(lane ? ctx('rhsSrc') : ctx('rhsPacked'), get('P'), quadBytes(unpack))),
  ].join(' ');
  const tile = lane ? `(if ${get('signed')} (then ${call('s8')}) (else ${call('u8')}))` : call('nibble');
  return stripDriver(`gemm_${lane ? 'lane' : 'nibble'}_${mr}x${w}`, mr, 8 * w, quadBytes(unpack), at, tile);
}

/**
 * The widening micro-kernel: mr rows x 4 columns (half a panel, at b) over `quads` k-quads of the byte
 * lanes, read unsigned or signed; a = the lhs tile in QUAD_BYTE_ORDER, c = C.
 */
function wideKernel(mr: number, signed: boolean): string {
  const load = `v128.load8x8_${signed ? 's' : 'u'}`;
  const acc = Array.from({ length: 2 * mr }, (_, i) => `c${i}`); // acc[2r + h]: columns 2h and 2h + 1, two lanes each
  const step = [set('b0', `(${load} ${get('b')})`), set('b1', `(${load} offset=8 ${get('b')})`)];
  for (let r = 0; r < mr; r++) {
    step.push(set('a0', `(v128.load64_splat offset=${8 * r} ${get('a')})`));
    for (const h of [0, 1]) {
      const c = acc[2 * r + h];
      step.push(set(c, `(i32x4.add ${get(c)} (i32x4.dot_i16x8_s ${get('a0')} ${get(`b${h}`)}))`));
    }
  }
  // Lanes (c0, c0, c1, c1) and (c2, c2, c3, c3) -> c0..c3: the even lanes of both plus the odd ones.
  const even = '0 1 2 3 8 9 10 11 16 17 18 19 24 25 26 27';
  const odd = '4 5 6 7 12 13 14 15 20 21 22 23 28 29 30 31';
  const stores = Array.from({ length: mr }, (_, r) => {
    const [x, y] = [get(acc[2 * r]), get(acc[2 * r + 1])];
    return `(v128.store (i32.add ${get('c')} (i32.mul ${get('ldc')} (i32.const ${r})))
      (i32x4.add (i8x16.shuffle ${even} ${x} ${y}) (i8x16.shuffle ${odd} ${x} ${y})))`;
  });
  return `
  (func $mkw_${mr}x4_${signed ? 's' : 'u'} (param $a i32) (param $b i32) (param $c i32) (param $ldc i32) (param $quads i32)
    ${locals([...acc, 'a0', 'b0', 'b1'], 'v128')}
    (loop $K
      ${step.join('\n      ')}
      ${set('a', `(i32.add ${get('a')} (i32.const ${8 * mr}))`)}
      ${set('b', `(i32.add ${get('b')} (i32.const ${STRIP_PANELS * 32}))`)}
      (br_if $K (local.tee $quads (i32.sub ${get('quads')} (i32.const 1)))))
    ${stores.join('\n    ')})`;
}

/** The driver of the widening kernel: column groups of 4 columns (half panels of the byte lanes at CTX rhsSrc). */
function wideDriver(mr: number): string {
  const call = (u: 'u' | 's') => `(call $mkw_${mr}x4_${u} ${get('a')} ${get('b')} ${get('c')} ${get('ldc')} ${get('quads')})`;
  const at = [
    set('P', `(i32.shr_u ${get('p')} (i32.const 1))`),
    set('b', `(i32.add ${stripAt(ctx('rhsSrc'), get('P'), 32)} (i32.shl (i32.and ${get('p')} (i32.const 1)) (i32.const 4)))`),
  ].join(' ');
  return stripDriver(`gemm_wide_${mr}x4`, mr, 4, 32, at, `(if ${get('signed')} (then ${call('s')}) (else ${call('u')}))`);
}

/** The quad micro-kernels (4-bit, one per shape of QUAD_SHAPES; 8-bit unsigned and signed, the LANE shape) and their drivers; the widening kernels and their driver; the few-row lhs pack. */
export function nibbleFunctions(): string {
  const drivers = [
    ...DIRECT.map(({ mr, nc }) => `gemm_direct_${mr}x${nc}`),
    ...QUAD_SHAPES.map(({ mr, w }) => `gemm_nibble_${mr}x${w}`),
    `gemm_lane_${LANE.mr}x${LANE.w}`,
    `gemm_wide_${WIDE.mr}x${WIDE.nc}`,
    'gemm_i16',
  ];
  const kernels = [
    ...QUAD_SHAPES.flatMap(({ mr, w }) => [microKernel(mr, w, 'nibble'), driver(mr, w, false)]),
    microKernel(LANE.mr, LANE.w, 'u8'),
    microKernel(LANE.mr, LANE.w, 's8'),
    driver(LANE.mr, LANE.w, true),
  ];
  const wide = [wideKernel(WIDE.mr, false), wideKernel(WIDE.mr, true), wideDriver(WIDE.mr)];
  return [...kernels, ...wide, PACK_LHS_FEW, ...drivers.map(dynamic)].join('\n');
}

/**
 * The split of a few-row driver (or of a packed-panel kernel over a prepacked rhs) over threads, as
 * pthreadpool splits a range: thread `slot` of T owns range `slot` of the `total` panels, T ranges
 * of whole chunks (range j starts at floor(nch j / T) chunk, nch = ceil(total / chunk)), and takes
 * `chunk` panels at a time from that range's counter (CHUNK_COUNTERS, which the runtime sets to the
 * starts before the job); then it takes what is left in the ranges after its own, in turn. So a thread
 * reads the same columns call after call (they stay in its core's cache where the weights fit in the
 * caches together), and one the OS runs late, or that never comes (pool.ts: an open job), leaves its
 * range to the others instead of holding them up.
 */
export function dynamic(name: string): string {
  const counter = (j: string) => `(i32.add (i32.const ${CHUNK_COUNTERS.at}) (i32.mul ${j} (i32.const ${CHUNK_COUNTERS.stride})))`;
  const rangeEnd = `(i32.mul (i32.wrap_i64 (i64.div_u (i64.mul (i64.extend_i32_u ${get('nch')}) (i64.extend_i32_u (i32.add ${get('j')} (i32.const 1)))) (i64.extend_i32_u ${get('T')}))) ${get('chunk')})`;
  return `
  (func $dyn_${name} (export "dyn_${name}") (param $mt0 i32) (param $mt1 i32) (param $total i32) (param $chunk i32) (param $slot i32) (param $T i32)
    ${locals(['nch', 'j', 'left', 'end', 'at', 'p', 'e'])}
    ${set('nch', `(i32.div_u (i32.sub (i32.add ${get('total')} ${get('chunk')}) (i32.const 1)) ${get('chunk')})`)}
    ${set('j', get('slot'))}
    ${set('left', get('T'))}
    (loop $R
      ${set('end', rangeEnd)}
      ${set('end', `(select ${get('end')} ${get('total')} (i32.lt_u ${get('end')} ${get('total')}))`)}
      ${set('at', counter(get('j')))}
      (block $taken (loop $C
        (br_if $taken (i32.ge_u (i32.atomic.load ${get('at')}) ${get('end')}))
        ${set('p', `(i32.atomic.rmw.add ${get('at')} ${get('chunk')})`)}
        (br_if $taken (i32.ge_u ${get('p')} ${get('end')}))
        ${set('e', `(i32.add ${get('p')} ${get('chunk')})`)}
        (call $${name} ${get('mt0')} ${get('mt1')} ${get('p')} (select ${get('e')} ${get('end')} (i32.lt_u ${get('e')} ${get('end')})))
        (br $C)))
      ${set('j', `(i32.add ${get('j')} (i32.const 1))`)}
      (if (i32.eq ${get('j')} ${get('T')}) (then ${set('j', '(i32.const 0)')}))
      ${set('left', `(i32.sub ${get('left')} (i32.const 1))`)}
      (br_if $R ${get('left')})))`;
}

/**
 * The lhs pack of the few-row kernels (the direct variant of gen-direct.ts and the 4-bit kernel above):
 * rows [0, M) of the bytes at `src` (element (m, k) at src + m*so + k*sk, read signed or not) minus a
 * per-row `sub` (i32 at sub + 4m), as i16 in tiles of mr rows, [Kp/g][mr][g] with g = 2^gl, 2 or 4
 * (`order` 1: a group of 4 in QUAD_BYTE_ORDER, for the widening kernels); each row's sum of them at
 * sums + 4m. The values fit in 16 bits (the callers' bound on sub). The caller zeroes the tiles first
 * (padding past M and K stays zero). Run on the calling thread (a few rows): in WebAssembly, so that it
 * runs compiled from the first call; eight values at a time where k is contiguous (sk = 1), the rest
 * one by one.
 */
const PACK_LHS_FEW = `
  (func $pack_lhs_few (export "pack_lhs_few") (param $src i32) (param $so i32) (param $sk i32) (param $signed i32) (param $M i32)
    (param $K i32) (param $Kp i32) (param $mr i32) (param $gl i32) (param $order i32) (param $out i32) (param $sums i32) (param $sub i32)
    ${locals(['m', 'k', 'v', 'sum', 'base', 's', 'at', 'z', 'g', 'gm', 'j', 'gs'])} ${locals(['x', 'zv', 'acc'], 'v128')}
    (if (i32.or (i32.eqz ${get('M')}) (i32.eqz ${get('K')})) (then (return)))
    ${set('g', `(i32.shl (i32.const 1) ${get('gl')})`)} ${set('gm', `(i32.mul ${get('g')} ${get('mr')})`)}
    ${set('gs', `(i32.shl ${get('gm')} (i32.const 1))`)}
    (loop $M
      ${set('base', `(i32.add ${get('out')} (i32.shl (i32.add (i32.mul (i32.div_u ${get('m')} ${get('mr')}) (i32.mul ${get('Kp')} ${get('mr')})) (i32.shl (i32.rem_u ${get('m')} ${get('mr')}) ${get('gl')})) (i32.const 1)))`)}
      ${set('z', `(i32.load (i32.add ${get('sub')} (i32.shl ${get('m')} (i32.const 2))))`)}
      ${set('s', `(i32.add ${get('src')} (i32.mul ${get('m')} ${get('so')}))`)}
      ${set('sum', '(i32.const 0)')} ${set('k', '(i32.const 0)')}
      (if (i32.eq ${get('sk')} (i32.const 1)) (then
        ${set('zv', `(i16x8.splat ${get('z')})`)} ${set('acc', '(v128.const i32x4 0 0 0 0)')}
        (block $done (loop $V
          (br_if $done (i32.gt_u (i32.add ${get('k')} (i32.const 8)) ${get('K')}))
          ${set('x', `(i16x8.sub (if (result v128) ${get('signed')} (then (v128.load8x8_s ${get('s')})) (else (v128.load8x8_u ${get('s')}))) ${get('zv')})`)}
          (if ${get('order')} (then ${set('x', `(i8x16.shuffle 0 1 4 5 2 3 6 7 8 9 12 13 10 11 14 15 ${get('x')} ${get('x')})`)}))
          ${set('acc', `(i32x4.add ${get('acc')} (i32x4.extadd_pairwise_i16x8_s ${get('x')}))`)}
          ${set('at', `(i32.add ${get('base')} (i32.mul (i32.shr_u ${get('k')} ${get('gl')}) ${get('gs')}))`)}
          (if (i32.eq ${get('gl')} (i32.const 2))
            (then (v128.store64_lane 0 ${get('at')} ${get('x')}) (v128.store64_lane 1 (i32.add ${get('at')} ${get('gs')}) ${get('x')}))
            (else
              (v128.store32_lane 0 ${get('at')} ${get('x')})
              (v128.store32_lane 1 (i32.add ${get('at')} ${get('gs')}) ${get('x')})
              (v128.store32_lane 2 (i32.add ${get('at')} (i32.mul ${get('gs')} (i32.const 2))) ${get('x')})
              (v128.store32_lane 3 (i32.add ${get('at')} (i32.mul ${get('gs')} (i32.const 3))) ${get('x')})))
          ${set('s', `(i32.add ${get('s')} (i32.const 8))`)} ${set('k', `(i32.add ${get('k')} (i32.const 8))`)}
          (br $V)))
        ${set('sum', `(i32.add (i32.add (i32x4.extract_lane 0 ${get('acc')}) (i32x4.extract_lane 1 ${get('acc')})) (i32.add (i32x4.extract_lane 2 ${get('acc')}) (i32x4.extract_lane 3 ${get('acc')})))`)}))
      (if (i32.lt_u ${get('k')} ${get('K')}) (then
        (loop $K
          ${set('v', `(i32.sub (if (result i32) ${get('signed')} (then (i32.load8_s ${get('s')})) (else (i32.load8_u ${get('s')}))) ${get('z')})`)}
          ${set('j', `(i32.and ${get('k')} (i32.sub ${get('g')} (i32.const 1)))`)}
          (if ${get('order')} (then ${set('j', `(i32.or (i32.shl (i32.and ${get('j')} (i32.const 1)) (i32.const 1)) (i32.shr_u ${get('j')} (i32.const 1)))`)}))
          ${set('at', `(i32.add ${get('base')} (i32.shl (i32.add (i32.mul (i32.shr_u ${get('k')} ${get('gl')}) ${get('gm')}) ${get('j')}) (i32.const 1)))`)}
          (i32.store16 ${get('at')} ${get('v')})
          ${set('sum', `(i32.add ${get('sum')} ${get('v')})`)}
          ${set('s', `(i32.add ${get('s')} ${get('sk')})`)}
          (br_if $K (i32.lt_u (local.tee $k (i32.add ${get('k')} (i32.const 1))) ${get('K')})))))
      (i32.store (i32.add ${get('sums')} (i32.shl ${get('m')} (i32.const 2))) ${get('sum')})
      (br_if $M (i32.lt_u (local.tee $m (i32.add ${get('m')} (i32.const 1))) ${get('M')}))))`;
