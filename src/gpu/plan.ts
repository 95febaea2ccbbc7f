// The pure dispatch planner of the GPU path (pack -> gemm -> output): how one GEMM or one elementwise
// op is cut into storage-binding bands (each within maxStorageBufferBindingSize, at offsets aligned to
// minStorageBufferOffsetAlignment) and into dispatches (each within maxComputeWorkgroupsPerDimension, a
// flattened 2-D grid with a base index), with the arithmetic the pack stage's planner (src/pack/plan.ts)
// shares. No GPU objects here: plans are plain data, unit-tested over many limit sets
// (test/unit/plan.test.ts), and encoded by the GEMM kernels and src/elementwise/gpu.ts.

import { LimitExceededError } from '../errors.ts';
import type { BitDepth, DstType, Order } from '../types.ts';
import { DTYPE_BYTES } from '../problem/dst.ts';
import type { PlanLimits } from './caps.ts';

export const roundUp = (x: number, m: number) => Math.ceil(x / m) * m;
export const floorTo = (x: number, m: number) => Math.floor(x / m) * m;
const gcd = (a: number, b: number): number => (b === 0 ? a : gcd(b, a % b));

/** The smallest count c, a multiple of `multiple`, for which c * stride bytes is a multiple of `alignment`. */
export function alignedUnit(stride: number, alignment: number, multiple = 1): number {
  const unit = alignment / gcd(stride, alignment);
  return (unit * multiple) / gcd(unit, multiple);
}

export interface FlatDispatch {
  /** Index of the first workgroup of this dispatch in the flattened grid. */
  base: number;
  x: number;
  y: number;
}

/** Splits `total` workgroups into dispatches of at most max^2, each a 2-D grid with a base index. */
export function flatDispatches(total: number, max: number): FlatDispatch[] {
  const out = [];
  for (let base = 0; base < total; base += max * max) {
    const count = Math.min(max * max, total - base);
    const x = Math.min(count, max);
    out.push({ base, x, y: Math.ceil(count / x) });
  }
  return out;
}

/** What a GEMM plan (and a kernel's choice) needs of the problem. */
export interface GemmShape {
  M: number;
  N: number;
  K: number;
  dstType: DstType;
  dstOrder: Order;
  /** Less-than-8-bit operands: kernels reading 4-bit rhs ('u4k8-r64') need bitDepth.rhs <= 4. */
  bitDepth?: BitDepth;
}

/** The dst matrix on the GPU: lines (rows, or columns when col-major) padded to `stride` elements. */
interface DstLayout {
  stride: number;
  bytes: number;
  elementBytes: number;
}

export function dstLayout(shape: GemmShape): DstLayout {
  const colMajor = shape.dstOrder === 'col-major';
  const stride = roundUp(colMajor ? shape.M : shape.N, 4);
  const elementBytes = DTYPE_BYTES[shape.dstType];
  return { stride, elementBytes, bytes: stride * (colMajor ? shape.N : shape.M) * elementBytes };
}

/** How the packed operands of a GEMM are padded: rows to `rowAlign`, depth to `depthAlign` (src/pack/formats.ts). */
interface RowAlignment {
  rowAlign: number;
  depthAlign: number;
}

export interface GemmDispatch extends FlatDispatch {
  /** First dst row and column of the band (the packed lhs/rhs bindings start there). */
  m0: number;
  n0: number;
  /** Packed rows of lhs and rhs bound for the band. */
  rows: number;
  cols: number;
  /** Rows and columns of the band's tiles that hold dst elements, rounded up to the tile. */
  liveRows: number;
  liveCols: number;
  /** The dst binding and the element index (in the whole dst) where it starts. */
  dstOffset: number;
  dstSize: number;
  dstBase: number;
}

/**
 * Bands and dispatches of a GEMM whose kernel computes tileM x tileN blocks of dst from packed operands
 * of `layout` (rowAlign must be a multiple of both tile sizes): each band keeps its lhs rows, rhs
 * columns and dst lines within one storage binding, and only tiles that hold dst elements are dispatched
 * (M = 1 runs one row of tiles, not the rowAlign/tileM rows of a padded band).
 */
export function planGemm(shape: GemmShape, layout: RowAlignment, tileM: number, tileN: number, limits: PlanLimits): GemmDispatch[] {
  const { M, N, K } = shape;
  const { maxStorageBufferBindingSize: maxBinding, maxComputeWorkgroupsPerDimension: maxWG } = limits;
  const rowBytes = roundUp(K, layout.depthAlign);
  const Mp = roundUp(M, layout.rowAlign);
  const Np = roundUp(N, layout.rowAlign);
  const colMajor = shape.dstOrder === 'col-major';
  const { stride, elementBytes } = dstLayout(shape);
  const lineBytes = stride * elementBytes;
  const bandRows = floorTo(maxBinding / Math.max(rowBytes, colMajor ? 0 : lineBytes), layout.rowAlign);
  const bandCols = floorTo(maxBinding / Math.max(rowBytes, colMajor ? lineBytes : 0), layout.rowAlign);
  if (bandRows === 0 || bandCols === 0) {
    throw new LimitExceededError(
      'maxStorageBufferBindingSize',
      `${layout.rowAlign} packed rows or dst lines exceed a storage binding (${maxBinding} bytes)`,
    );
  }
  const out: GemmDispatch[] = [];
  for (let m0 = 0; m0 < Mp; m0 += bandRows) {
    const rows = Math.min(bandRows, Mp - m0);
    for (let n0 = 0; n0 < Np; n0 += bandCols) {
      const cols = Math.min(bandCols, Np - n0);
      // dst range: whole rows [m0, m0+rows) for row-major, whole columns for column-major.
      const lineBegin = colMajor ? n0 : m0;
      const lineEnd = Math.min(colMajor ? N : M, lineBegin + (colMajor ? cols : rows));
      if (lineBegin >= lineEnd) continue; // a band of padding only
      const liveRows = roundUp(Math.min(rows, M - m0), tileM);
      const liveCols = roundUp(Math.min(cols, N - n0), tileN);
      const tiles = (liveRows / tileM) * (liveCols / tileN);
      for (const d of flatDispatches(tiles, maxWG)) {
        out.push({
          ...d,
          m0,
          n0,
          rows,
          cols,
          liveRows,
          liveCols,
          dstOffset: lineBegin * lineBytes,
          dstSize: roundUp((lineEnd - lineBegin) * lineBytes, 4),
          dstBase: lineBegin * stride,
        });
      }
    }
  }
  return out;
}

interface ElementwiseDispatch extends FlatDispatch {
  /** The output words [wordBegin, wordBegin + words) of this band. */
  wordBegin: number;
  words: number;
}

/**
 * Bands and dispatches of an elementwise op over `words` output words (4 elements each), one word per
 * invocation: output bands within one binding at aligned offsets, grids within the workgroup-count limit.
 * Inputs are bound whole (broadcasting reads them anywhere), so each must fit a binding.
 */
export function planElementwise(words: number, inputBytes: number[], workgroupSize: number, limits: PlanLimits): ElementwiseDispatch[] {
  const {
    maxStorageBufferBindingSize: maxBinding,
    maxComputeWorkgroupsPerDimension: maxWG,
    minStorageBufferOffsetAlignment: alignment,
  } = limits;
  inputBytes.forEach((bytes, i) => {
    if (bytes > maxBinding) {
      throw new LimitExceededError(
        'maxStorageBufferBindingSize',
        `elementwise: input ${'ab'[i] ?? i} needs ${bytes} bytes, above maxStorageBufferBindingSize ${maxBinding}`,
      );
    }
  });
  // One band at offset 0 where the output fits a binding; else bands at aligned offsets.
  const unit = alignedUnit(4, alignment);
  const step = words * 4 <= maxBinding ? words : floorTo(maxBinding / 4, unit);
  if (step === 0 && words > 0)
    throw new LimitExceededError(
      'maxStorageBufferBindingSize',
      `elementwise: ${unit} output words at an aligned offset exceed a storage binding`,
    );
  const out: ElementwiseDispatch[] = [];
  for (let w = 0; w < words; w += step) {
    const n = Math.min(step, words - w);
    for (const d of flatDispatches(Math.ceil(n / workgroupSize), maxWG)) out.push({ ...d, wordBegin: w, words: n });
  }
  return out;
}
