// Operands of a GPU GEMM (pack -> gemm -> output), in the three forms a caller may give them: a CPU
// array (uploaded per call into a pooled buffer), a GpuMatrix (a caller's or a previous GEMM's buffer,
// read where it is), or a PackedOperand (packed once with its sums; the pack stage is skipped). This
// file types them and validates GPU-resident ones like CPU ones (an rhs prepacked for the CPU path is
// refused saying so); src/pack/pack.ts packOperand says where the bytes of the first two are.

import { InputError } from '../errors.ts';
import { brief } from '../problem/echo.ts';
import { type GpuMatrix, isGpuMatrix, matrixBytes } from '../gpu/matrix.ts';
import { isCpuPacked } from '../kernels/cpu-wasm/kernel.ts';
import type { PackFormatId } from '../pack/formats.ts';
import { checkKnownKeys } from '../problem/check.ts';
import { checkCpuOperand, PREPACKED_FOR_CPU } from '../problem/problem.ts';
import type { ConcreteRounding } from '../quant/lowbit.ts';
import type { Operand, OperandType } from '../types.ts';
import { BufferUsage } from '../gpu/usage.ts';

export { type GpuMatrix, isGpuMatrix };

/** An operand packed once for reuse (ruy's prepacked cache): the packed rows and their sums. */
export interface PackedOperand {
  readonly side: 'lhs' | 'rhs';
  readonly rows: number;
  readonly cols: number;
  readonly type: OperandType;
  /** The layout of `packed` (src/pack/formats.ts): only kernels that read it can use this operand. */
  readonly packFormat: PackFormatId;
  readonly packed: GPUBuffer;
  readonly sums: GPUBuffer;
  /** Requantization applied while packing (bits 8: none). A GEMM must ask for the same. */
  readonly bits: number;
  readonly rounding: ConcreteRounding;
  /** GPU memory held (packed rows and sums). */
  readonly bytes: number;
  /** True once destroy() ran: the operand can no longer be used. */
  readonly destroyed: boolean;
  destroy(): void;
}

export type GpuOperandInput = Operand | GpuMatrix | PackedOperand;

export function isPacked(x: object): x is PackedOperand {
  return 'packed' in x;
}

/**
 * The context that made each GpuMatrix buffer (gemmOnGpu's dst) and each PackedOperand: a matrix or an
 * operand is used only by its own context (two contexts may share one device, and a buffer released by
 * one goes on to its next call: read elsewhere it would be another call's data).
 */
const owners = new WeakMap<object, OperandOwner>();

/** What owns GPU operands (a context's resources, ./resources.ts): the buffers it handed out, each with its lease. */
export interface OperandOwner {
  readonly handedOut: Map<GPUBuffer, number>;
}

/**
 * Each hand-out of a buffer is a lease, numbered, and the matrix handed out carries its number (an
 * enumerable symbol, so that `{ ...m }` and Object.assign carry it too). A buffer released and handed out
 * again has a new lease: a matrix of the old one, or any copy of it, is refused though its buffer is
 * live; so is a matrix built field by field around a handed-out buffer (it has no lease).
 */
const LEASE = Symbol('qgemm.lease');
let leases = 0;
type Leased = GpuMatrix & { [LEASE]?: number };

/** Records m (a dst that gemmOnGpu hands out) as r's and live, under a new lease. */
export function claimMatrix(r: OperandOwner, m: GpuMatrix): GpuMatrix {
  const lease = ++leases;
  owners.set(m.buffer, r);
  r.handedOut.set(m.buffer, lease);
  (m as Leased)[LEASE] = lease;
  return m;
}

/** Records a PackedOperand as r's. */
export function claimPacked<T extends PackedOperand>(r: OperandOwner, x: T): T {
  owners.set(x, r);
  return x;
}

/**
 * Checks that m is a GpuMatrix that r may read or use: a caller's own buffer, or one that r handed out
 * and that is still live (not released, not another context's).
 */
export function checkMatrix(r: OperandOwner, m: unknown, field: string): asserts m is GpuMatrix {
  if (!m || typeof m !== 'object' || !isGpuMatrix(m) || typeof (m as GpuMatrix).buffer !== 'object' || !(m as GpuMatrix).buffer) {
    throw new InputError(field, 'expected a GpuMatrix ({ buffer, rows, cols, order, dtype, stride })');
  }
  const b = m.buffer as Partial<GPUBuffer>;
  if (typeof b.size !== 'number' || typeof b.usage !== 'number' || typeof b.mapAsync !== 'function')
    throw new InputError(`${field}.buffer`, 'expected a GPUBuffer');
  const owner = owners.get(m.buffer);
  if (owner && owner !== r)
    throw new InputError(field, 'this GpuMatrix belongs to another GpuContext: read or use it with the context that made it');
  if (owner !== r || isHandedOut(r, m)) return;
  if ((m as Leased)[LEASE] === undefined && r.handedOut.has(m.buffer))
    throw new InputError(
      field,
      'a GpuMatrix over a buffer that gemmOnGpu handed out must be that matrix or a copy of it ({ ...m }); one built field by field carries no lease',
    );
  throw new InputError(field, 'this GpuMatrix was released (releaseMatrix): its buffer now belongs to other calls');
}

/** True when m's buffer was handed out by r (gemmOnGpu) and is still live, under m's own lease. */
export function isHandedOut(r: OperandOwner, m: GpuMatrix): boolean {
  const lease = r.handedOut.get(m.buffer);
  return owners.get(m.buffer) === r && lease !== undefined && (m as Leased)[LEASE] === lease;
}

/** The keys of a GpuMatrix (src/gpu/matrix.ts); a handed-out one's lease is symbol-keyed, not among them. */
const MATRIX_KEYS = ['buffer', 'rows', 'cols', 'order', 'dtype', 'stride'];

/**
 * Checks the fields of GpuMatrix m as a use of `dtypes` reads it (no key besides them), and that its
 * buffer holds its span in whole 4-byte words, as a binding or a readback takes it (gpu/matrix.ts
 * matrixBytes): an InputError names the field.
 */
export function checkMatrixShape(m: GpuMatrix, field: string, dtypes: readonly GpuMatrix['dtype'][]): void {
  checkKnownKeys(field, m, MATRIX_KEYS); // a misspelt `strid` or an `offset` it does not take would be passed over
  for (const key of ['rows', 'cols'] as const) {
    if (!Number.isSafeInteger(m[key]) || m[key] < 1) throw new InputError(`${field}.${key}`, `expected a positive integer, got ${m[key]}`);
  }
  if (m.order !== 'row-major' && m.order !== 'col-major')
    throw new InputError(`${field}.order`, `expected "row-major" or "col-major", got ${brief(m.order)}`);
  if (!dtypes.includes(m.dtype)) throw new InputError(`${field}.dtype`, `expected ${dtypes.join(' or ')}, got ${brief(m.dtype)}`);
  const inner = m.order === 'row-major' ? m.cols : m.rows;
  if (!Number.isSafeInteger(m.stride) || m.stride < inner) throw new InputError(`${field}.stride`, `must be an integer >= ${inner}`);
  const needed = matrixBytes(m);
  if (needed > m.buffer.size) {
    throw new InputError(
      `${field}.buffer`,
      `holds ${m.buffer.size} bytes, a [${m.rows},${m.cols}] ${m.dtype} matrix with stride ${m.stride} needs ${needed}`,
    );
  }
}

/**
 * Checks that GpuMatrix m's buffer can serve its use: bound whole to a kernel or a pack (`bind`: STORAGE
 * usage and a whole number of 4-byte words, as WebGPU binds storage), bound by the word-rounded range it
 * spans (`bind-range`: a convolution's input, ./patches.ts patchInput; STORAGE only), or copied out by
 * read() (`copy`: COPY_SRC). An InputError names `field.buffer`, where WebGPU would raise a validation
 * error naming none.
 */
export function checkMatrixBuffer(m: GpuMatrix, field: string, use: 'bind' | 'bind-range' | 'copy'): void {
  const { size, usage } = m.buffer;
  const need = use === 'copy' ? BufferUsage.COPY_SRC : BufferUsage.STORAGE;
  if ((usage & need) === 0) {
    const name = use === 'copy' ? 'COPY_SRC' : 'STORAGE';
    throw new InputError(`${field}.buffer`, `needs GPUBufferUsage.${name} (its usage is ${usage}): create it with that usage`);
  }
  if (use === 'bind' && size % 4 !== 0) {
    throw new InputError(`${field}.buffer`, `holds ${size} bytes, not a whole number of 4-byte words: WebGPU binds storage in words`);
  }
}

/**
 * Shape-only stand-in so that normalizeProblem validates GPU-resident operands like CPU ones; a GPU
 * operand must be r's own (checkMatrix, claimPacked) or the caller's.
 */
export function shapeOf(
  x: GpuOperandInput,
  field: string,
  r: OperandOwner,
  checkedAlive = false,
  binding: 'bind' | 'bind-range' = 'bind',
): Operand {
  if (!x || typeof x !== 'object') throw new InputError(field, 'missing operand');
  if (isPacked(x)) {
    const owner = owners.get(x);
    if (owner !== r) {
      throw new InputError(
        field,
        owner ? 'this prepacked operand belongs to another GpuContext' : 'not a PackedOperand made by GpuContext.prepack',
      );
    }
    // checkedAlive: the call checked it when it began, so its buffers stay until the call ends (destroy()).
    if (x.destroyed && !checkedAlive) throw new InputError(field, 'this prepacked operand was destroyed');
    if (x.side !== field) throw new InputError(field, `this operand was prepacked as ${x.side}`);
    return { data: x.type === 'int8' ? new Int8Array(0) : new Uint8Array(0), rows: x.rows, cols: x.cols, order: 'row-major' };
  }
  if (isGpuMatrix(x)) {
    checkMatrix(r, x, field);
    checkMatrixShape(x, field, ['uint8', 'int8']);
    checkMatrixBuffer(x, field, binding);
    return { data: x.dtype === 'int8' ? new Int8Array(0) : new Uint8Array(0), rows: x.rows, cols: x.cols, order: x.order };
  }
  if (isCpuPacked(x)) throw new InputError(field, PREPACKED_FOR_CPU);
  checkCpuOperand(field, x); // its data is uploaded as given: its length must be the shape's
  return x;
}
