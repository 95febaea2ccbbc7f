// GpuMatrix: a matrix living in a GPU buffer, the form in which GPU-resident data enters and leaves
// the GPU path (pack -> gemm -> output): a caller's operand read where it is, or a GEMM's dst left on
// the GPU. Plain data: the buffer and how its elements are laid out (a dst that gemmOnGpu hands out also
// carries its lease, src/scheduler/operands.ts), and the bytes reading it back copies.

import { DTYPE_BYTES } from '../problem/dst.ts';
import type { DstType, OperandType, Order } from '../types.ts';

/** A matrix living in a GPU buffer. `stride`: elements between consecutive rows (row-major) or columns. */
export interface GpuMatrix {
  buffer: GPUBuffer;
  rows: number;
  cols: number;
  order: Order;
  dtype: OperandType | DstType;
  stride: number;
}

export function isGpuMatrix(x: object): x is GpuMatrix {
  return 'buffer' in x;
}

/** Bytes m spans in its buffer: its lines at their stride, the last to its end. */
function matrixSpan(m: GpuMatrix): number {
  const [lines, inner] = m.order === 'row-major' ? [m.rows, m.cols] : [m.cols, m.rows];
  return ((lines - 1) * m.stride + inner) * DTYPE_BYTES[m.dtype];
}

/** Bytes that reading m back copies: its span in whole 4-byte words. */
export function matrixBytes(m: GpuMatrix): number {
  return Math.ceil(matrixSpan(m) / 4) * 4;
}
