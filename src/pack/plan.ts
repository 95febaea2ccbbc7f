// The pack stage's dispatch planner (PACK -> gemm -> output): how packing one operand is cut into
// source bands (each within maxStorageBufferBindingSize, at offsets aligned to
// minStorageBufferOffsetAlignment), packed-row chunks and dispatches (each within
// maxComputeWorkgroupsPerDimension, a flattened 2-D grid with a base index). Pure: plain data,
// unit-tested over many limit sets (test/unit/plan.test.ts), encoded by ./pack.ts.

import { LimitExceededError } from '../errors.ts';
import type { PlanLimits } from '../gpu/caps.ts';
import { alignedUnit, type FlatDispatch, flatDispatches, floorTo, roundUp } from '../gpu/plan.ts';
import { type PackLayout, packedRowBytes } from './formats.ts';

/** Where an operand's bytes are: element (outer, k) at byte outer*outerStride + k*depthStride. */
export interface PackSource {
  bytes: number;
  outerStride: number;
  depthStride: number;
}

export interface PackDispatch extends FlatDispatch {
  /** The source binding: [srcBase, srcBase + srcSize) bytes, holding the k range [depthBegin, depthEnd). */
  srcBase: number;
  srcSize: number;
  depthBegin: number;
  depthEnd: number;
  /** First packed row of the dispatch (the packed binding starts there) and its row count. */
  outerBase: number;
  rows: number;
}

/**
 * Bands and dispatches that pack an operand of `outer` rows of `depth` values: source bands that fit a
 * binding (whole rows when k is contiguous, k slices otherwise, at aligned offsets), packed-row chunks
 * that fit a binding, grids within the workgroup-count limit. One workgroup per `rowsPerWorkgroup` packed
 * rows. Only the
 * operand's own rows are packed: the padding rows up to the layout's rowAlign keep whatever the buffer
 * held, since kernels compute and discard the dst elements they give (src/pack/formats.ts).
 * `bufferSize`: the source buffer's size (a binding may not run past it).
 */
export function planPack(
  src: PackSource,
  bufferSize: number,
  outer: number,
  depth: number,
  layout: PackLayout,
  limits: PlanLimits,
  what: string,
  rowsPerWorkgroup = 1,
): PackDispatch[] {
  const {
    maxStorageBufferBindingSize: maxBinding,
    maxComputeWorkgroupsPerDimension: maxWG,
    minStorageBufferOffsetAlignment: alignment,
  } = limits;
  const rowBytes = packedRowBytes(depth, layout);
  const packedRows = floorTo(maxBinding / rowBytes, layout.rowAlign);
  if (packedRows === 0)
    throw new LimitExceededError('maxStorageBufferBindingSize', `${what}: one packed row band needs ${layout.rowAlign * rowBytes} bytes`);

  type Band = { srcBase: number; srcEnd: number; depthBegin: number; depthEnd: number; outerBegin: number; outerEnd: number };
  const bands: Band[] = [];
  if (src.bytes <= maxBinding) {
    bands.push({ srcBase: 0, srcEnd: src.bytes, depthBegin: 0, depthEnd: depth, outerBegin: 0, outerEnd: outer });
  } else if (src.depthStride === 1) {
    const unit = alignedUnit(src.outerStride, alignment); // band offsets must stay aligned
    const step = floorTo(maxBinding / src.outerStride, unit);
    if (step === 0)
      throw new LimitExceededError('maxStorageBufferBindingSize', `${what}: ${unit} rows of the operand exceed a storage binding`);
    for (let o = 0; o < outer; o += step) {
      const end = Math.min(outer, o + step);
      bands.push({
        srcBase: o * src.outerStride,
        srcEnd: Math.min(src.bytes, end * src.outerStride),
        depthBegin: 0,
        depthEnd: depth,
        outerBegin: o,
        outerEnd: end,
      });
    }
  } else {
    const unit = alignedUnit(src.depthStride, alignment, 32 / (layout.valueBits ?? 8)); // aligned offsets, whole packed words
    const step = floorTo(maxBinding / src.depthStride, unit);
    if (step === 0)
      throw new LimitExceededError('maxStorageBufferBindingSize', `${what}: ${unit} k-slices of the operand exceed a storage binding`);
    for (let k = 0; k < depth; k += step) {
      bands.push({
        srcBase: k * src.depthStride,
        srcEnd: Math.min(src.bytes, (k + step) * src.depthStride),
        depthBegin: k,
        depthEnd: Math.min(depth, k + step),
        outerBegin: 0,
        outerEnd: outer,
      });
    }
  }
  const out: PackDispatch[] = [];
  for (const band of bands) {
    const srcSize = Math.min(roundUp(band.srcEnd - band.srcBase, 4), bufferSize - band.srcBase);
    for (let o = band.outerBegin; o < band.outerEnd; o += packedRows) {
      const rows = Math.min(packedRows, band.outerEnd - o);
      for (const d of flatDispatches(Math.ceil(rows / rowsPerWorkgroup), maxWG)) {
        out.push({ ...d, srcBase: band.srcBase, srcSize, depthBegin: band.depthBegin, depthEnd: band.depthEnd, outerBase: o, rows });
      }
    }
  }
  return out;
}
