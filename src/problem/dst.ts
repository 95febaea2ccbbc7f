// The dst matrix's storage, one place for every backend (pack -> gemm -> OUTPUT): the typed array of each
// dst type (src/types.ts) and its element size. The CPU paths allocate dst here, and the GPU readback
// views the bytes it mapped through the same function. An allocation this engine cannot make (a length
// beyond its typed arrays, or no memory) is a LimitExceededError naming memory (allocationLimit).

import { LimitExceededError } from '../errors.ts';
import type { DstData, DstType, OperandType } from '../types.ts';

/** Bytes per element of every dst and operand type. */
export const DTYPE_BYTES: Record<DstType | OperandType, number> = { int32: 4, int16: 2, int8: 1, uint8: 1 };

/**
 * A dst array of `type`: new and zeroed (a length), or a view of existing bytes (an ArrayBuffer). A
 * length that no typed array here can hold (or no memory) is a LimitExceededError (allocationLimit).
 */
export function allocateDst(type: DstType, lengthOrBuffer: number | ArrayBuffer): DstData {
  try {
    return typedDst(type, lengthOrBuffer);
  } catch (e) {
    throw allocationLimit(e, `a dst of ${lengthOrBuffer} ${type} elements`);
  }
}

/**
 * A RangeError of an allocation (an array beyond what this engine's typed arrays or memory hold) as a
 * LimitExceededError naming memory, with `what` could not be had; any other error as it is.
 */
export function allocationLimit(e: unknown, what: string): unknown {
  return isAllocationFailure(e) ? new LimitExceededError('memory', `${what} cannot be allocated here (${e.message})`) : e;
}

/** Whether e is the RangeError of an allocation that this engine's typed arrays or memory cannot hold. */
export function isAllocationFailure(e: unknown): e is RangeError {
  return e instanceof RangeError && /allocation failed|Array buffer|typed array length|Invalid array length/i.test(e.message);
}

function typedDst(type: DstType, lengthOrBuffer: number | ArrayBuffer): DstData {
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
