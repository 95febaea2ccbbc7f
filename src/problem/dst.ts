// The dst matrix's storage, one place for every backend (pack -> gemm -> OUTPUT): the typed array of each
// dst type (src/types.ts) and its element size. The CPU paths allocate dst here, and the GPU readback
// views the bytes it mapped through the same function.

import type { DstData, DstType, OperandType } from '../types.ts';

/** Bytes per element of every dst and operand type. */
export const DTYPE_BYTES: Record<DstType | OperandType, number> = { int32: 4, int16: 2, int8: 1, uint8: 1 };

/** A dst array of `type`: new and zeroed (a length), or a view of existing bytes (an ArrayBuffer). */
export function allocateDst(type: DstType, lengthOrBuffer: number | ArrayBuffer): DstData {
  switch (type) {
    case 'int32':
      return new Int32Array(lengthOrBuffer as ArrayBuffer);
    case 'uint8':
      return new Uint8Array(lengthOrBuffer as ArrayBuffer);
    case 'int8':
      return new Int8Array(lengthOrBuffer as ArrayBuffer);
    case 'int16':
      return new Int16Array(lengthOrBuffer as ArrayBuffer);
  }
}
