// Validation of a GemmProblem (src/types.ts), once, for every backend: the CPU reference, the WebGPU
// scheduler and the CLI all start from the NormalizedProblem made here. Bad input throws InputError
// naming the field as the spec names it (`lhs`, `rhsZeroPoint`, `pipeline[2].shift`...).

import { InputError } from '../errors.ts';
import { tanhParams, type TanhParams } from '../quant/tanh.ts';
import {
  INT32_MAX,
  INT32_MIN,
  type Axis,
  type BitDepth,
  type DstType,
  type GemmProblem,
  type Operand,
  type OperandType,
  type OutputStage,
  type Order,
  type PerChannel,
} from '../types.ts';
import { brief } from './echo.ts';

export interface NormalizedProblem {
  M: number;
  N: number;
  K: number;
  /** The operands, with their storage order made explicit. */
  lhs: Operand & { order: Order };
  rhs: Operand & { order: Order };
  lhsType: OperandType;
  rhsType: OperandType;
  lhsZeroPoint: PerChannel;
  rhsZeroPoint: PerChannel;
  pipeline: OutputStage[];
  /** tanh constants, by stage index, for the stages of type 'tanh'. */
  tanh: Map<number, TanhParams>;
  dstOrder: Order;
  dstType: DstType;
  bitDepth?: BitDepth;
}

export function isInt32(v: unknown): v is number {
  return typeof v === 'number' && Number.isInteger(v) && v >= INT32_MIN && v <= INT32_MAX;
}

function checkInt32(field: string, v: unknown): number {
  if (!isInt32(v)) throw new InputError(field, `expected an int32, got ${brief(v)}`);
  return v;
}

function checkRange(field: string, v: unknown, lo: number, hi: number): number {
  if (typeof v !== 'number' || !Number.isInteger(v) || v < lo || v > hi) {
    throw new InputError(field, `expected an integer in ${lo}..${hi}, got ${brief(v)}`);
  }
  return v;
}

export function operandType(field: string, data: unknown): OperandType {
  if (data instanceof Uint8Array) return 'uint8';
  if (data instanceof Int8Array) return 'int8';
  throw new InputError(field, 'expected uint8 or int8 data (Uint8Array or Int8Array)');
}

function checkOperand(field: string, op: Operand, shapesOnly: boolean): OperandType {
  if (!op || typeof op !== 'object') throw new InputError(field, 'missing operand');
  const type = operandType(field, op.data);
  checkRange(`${field}.rows`, op.rows, 1, INT32_MAX);
  checkRange(`${field}.cols`, op.cols, 1, INT32_MAX);
  if (op.order !== undefined && op.order !== 'row-major' && op.order !== 'col-major') {
    throw new InputError(`${field}.order`, `expected 'row-major' or 'col-major', got ${brief(op.order)}`);
  }
  if (!shapesOnly && op.data.length !== op.rows * op.cols) {
    throw new InputError(field, `data has ${op.data.length} elements, shape [${op.rows},${op.cols}] needs ${op.rows * op.cols}`);
  }
  return type;
}

/** A scalar, or an Int32Array of exactly `length` elements. */
function checkPerChannel(field: string, v: unknown, length: number, what: string): PerChannel {
  if (v instanceof Int32Array) {
    if (v.length !== length) throw new InputError(field, `vector has length ${v.length}, expected ${length} (${what})`);
    return v;
  }
  return checkInt32(field, v);
}

function checkAxis(field: string, axis: unknown): Axis {
  if (axis !== 'row' && axis !== 'col') throw new InputError(field, `expected "row" or "col", got ${brief(axis)}`);
  return axis;
}

const ROUNDINGS = ['nearest', 'probabilistic-addmod', 'probabilistic-xorshift', 'default'] as const;

/** A BitDepth as normalizeProblem accepts it (also ctx.prepack's). */
export function checkBitDepth(b: BitDepth): BitDepth {
  if (!b || typeof b !== 'object') throw new InputError('bitDepth', 'expected {"lhs": 1..8, "rhs": 1..8, "rounding": ...}');
  checkRange('bitDepth.lhs', b.lhs, 1, 8);
  checkRange('bitDepth.rhs', b.rhs, 1, 8);
  const rounding = b.rounding ?? 'default';
  if (!(ROUNDINGS as readonly string[]).includes(rounding)) {
    throw new InputError('bitDepth.rounding', `expected one of ${ROUNDINGS.join(', ')}, got ${brief(rounding)}`);
  }
  return { lhs: b.lhs, rhs: b.rhs, rounding };
}

const CAST_TYPES: Record<string, readonly DstType[]> = {
  saturatingCast: ['uint8', 'int8', 'int16'],
  truncatingCast: ['uint8'],
};

/**
 * shapesOnly: the operands' data lives elsewhere (a GPU buffer); check their shapes and types only.
 * rhsShapeOnly: the same for the rhs alone (prepacked for the CPU: its data is in the kernels' memory).
 */
export function normalizeProblem(
  problem: GemmProblem,
  { shapesOnly = false, rhsShapeOnly = false }: { shapesOnly?: boolean; rhsShapeOnly?: boolean } = {},
): NormalizedProblem {
  const lhsType = checkOperand('lhs', problem.lhs, shapesOnly);
  const rhsType = checkOperand('rhs', problem.rhs, shapesOnly || rhsShapeOnly);
  const lhs = withOrder(problem.lhs);
  const rhs = withOrder(problem.rhs);
  if (lhs.cols !== rhs.rows) {
    throw new InputError(
      'rhs',
      `shape mismatch: lhs is [${lhs.rows},${lhs.cols}], rhs is [${rhs.rows},${rhs.cols}]; need lhs cols == rhs rows`,
    );
  }
  const M = lhs.rows;
  const N = rhs.cols;
  const K = lhs.cols;
  const lhsZeroPoint = checkPerChannel('lhsZeroPoint', problem.lhsZeroPoint ?? 0, M, 'one per lhs row, M');
  const rhsZeroPoint = checkPerChannel('rhsZeroPoint', problem.rhsZeroPoint ?? 0, N, 'one per rhs column, N');
  const dstOrder = problem.dstOrder ?? 'row-major';
  if (dstOrder !== 'row-major' && dstOrder !== 'col-major') throw new InputError('dstOrder', `expected 'row-major' or 'col-major'`);

  const pipeline = problem.pipeline ?? [];
  if (!Array.isArray(pipeline)) throw new InputError('pipeline', 'expected an array of stages');
  const tanh = new Map<number, TanhParams>();
  let dstType: DstType = 'int32';
  const lengthOf = (axis: Axis) => (axis === 'row' ? M : N);
  const axisWhat = (axis: Axis) => (axis === 'row' ? 'axis "row": one per dst row, M' : 'axis "col": one per dst column, N');
  pipeline.forEach((stage, i) => {
    const f = `pipeline[${i}]`;
    if (!stage || typeof stage !== 'object') throw new InputError(f, 'expected a stage object');
    if (dstType !== 'int32') throw new InputError(f, `no stage may follow a cast (pipeline[${i - 1}] is the last allowed)`);
    switch (stage.type) {
      case 'bias': {
        const axis = checkAxis(`${f}.axis`, stage.axis);
        if (!(stage.values instanceof Int32Array)) throw new InputError(`${f}.values`, 'expected an int32 vector');
        checkPerChannel(`${f}.values`, stage.values, lengthOf(axis), axisWhat(axis));
        break;
      }
      case 'quantizeDownInt32ToUint8Scale':
      case 'scaleInt32ByFixedPointAndExponent': {
        const legacy = stage.type === 'quantizeDownInt32ToUint8Scale';
        const vectors: [string, PerChannel][] = legacy
          ? [
              ['offset', stage.offset],
              ['multiplier', stage.multiplier],
            ]
          : [
              ['multiplier', stage.multiplier],
              ['exponent', stage.exponent],
            ];
        const perChannel = vectors.some(([, v]) => v instanceof Int32Array);
        const axis = perChannel ? checkAxis(`${f}.axis`, stage.axis) : undefined;
        for (const [name, v] of vectors) {
          if (axis) checkPerChannel(`${f}.${name}`, v, lengthOf(axis), axisWhat(axis));
          else checkInt32(`${f}.${name}`, v);
        }
        if (legacy) {
          checkRange(`${f}.shift`, stage.shift, 0, 31);
        } else {
          const rounding = stage.rounding ?? 'double';
          if (rounding !== 'double' && rounding !== 'double-up' && rounding !== 'single') {
            throw new InputError(`${f}.rounding`, `expected "double", "double-up" or "single", got ${brief(stage.rounding)}`);
          }
          checkInt32(`${f}.offsetAfterShift`, stage.offsetAfterShift);
          const hi = rounding === 'single' ? 30 : 31;
          if (stage.exponent instanceof Int32Array) {
            // (the field name is made only for the element that fails: this runs on every call)
            const bad = stage.exponent.findIndex((e) => e < -31 || e > hi);
            if (bad >= 0) checkRange(`${f}.exponent[${bad}]`, stage.exponent[bad], -31, hi);
          } else checkRange(`${f}.exponent`, stage.exponent, -31, hi);
        }
        break;
      }
      case 'requantizeFloat32': {
        const scale = stage.scale;
        const finite32 = (v: number) => typeof v === 'number' && Number.isFinite(v) && Math.fround(v) === v;
        if (scale instanceof Float32Array) {
          const axis = checkAxis(`${f}.axis`, stage.axis);
          if (scale.length !== lengthOf(axis))
            throw new InputError(`${f}.scale`, `expected ${lengthOf(axis)} values (${axisWhat(axis)}), got ${scale.length}`);
          const bad = scale.findIndex((v) => !Number.isFinite(v));
          if (bad >= 0) throw new InputError(`${f}.scale[${bad}]`, `expected a finite float32, got ${scale[bad]}`);
        } else if (!finite32(scale)) {
          throw new InputError(
            `${f}.scale`,
            `expected a finite float32 value (Math.fround(scale) === scale) or a Float32Array, got ${brief(scale)}`,
          );
        }
        checkInt32(`${f}.zeroPoint`, stage.zeroPoint);
        break;
      }
      case 'quantizeDownInt32ByFixedPoint':
        checkInt32(`${f}.multiplier`, stage.multiplier);
        checkRange(`${f}.shift`, stage.shift, 0, 31);
        checkInt32(`${f}.offsetAfterShift`, stage.offsetAfterShift);
        break;
      case 'clamp':
        checkInt32(`${f}.min`, stage.min);
        checkInt32(`${f}.max`, stage.max);
        if (stage.min > stage.max) throw new InputError(`${f}.min`, `min ${stage.min} > max ${stage.max}`);
        break;
      case 'tanh': {
        const zero = checkInt32(`${f}.realZeroAsInt32`, stage.realZeroAsInt32);
        const amplitude = checkRange(`${f}.realAmplitudeAsInt32`, stage.realAmplitudeAsInt32, 1, 2 ** 29);
        if (Math.abs(zero) + 8 * amplitude > INT32_MAX) {
          throw new InputError(f, `|realZeroAsInt32| + 8 * realAmplitudeAsInt32 must be <= ${INT32_MAX}`);
        }
        tanh.set(i, tanhParams(zero, amplitude));
        break;
      }
      case 'saturatingCast':
      case 'truncatingCast': {
        const allowed = CAST_TYPES[stage.type];
        if (!allowed.includes(stage.to)) throw new InputError(`${f}.to`, `expected one of ${allowed.join(', ')}, got ${brief(stage.to)}`);
        dstType = stage.to;
        break;
      }
      default:
        throw new InputError(`${f}.type`, `unknown stage type ${brief((stage as { type: unknown }).type)}`);
    }
  });

  const bitDepth = problem.bitDepth === undefined ? undefined : checkBitDepth(problem.bitDepth);

  return {
    M,
    N,
    K,
    lhs,
    rhs,
    lhsType,
    rhsType,
    lhsZeroPoint,
    rhsZeroPoint,
    pipeline,
    tanh,
    dstOrder,
    dstType,
    ...(bitDepth ? { bitDepth } : {}),
  };
}

/** The value of a scalar-or-vector parameter at channel i. */
export function channel(v: PerChannel, i: number): number {
  return typeof v === 'number' ? v : v[i];
}

/** The operand with its storage order made explicit (row-major when not given). */
export function withOrder<T extends Operand>(op: T): T & { order: Order } {
  return op.order ? (op as T & { order: Order }) : { ...op, order: 'row-major' };
}

/** Element (r, c) of an operand, whatever its storage order. */
export function elementAt(op: Operand, r: number, c: number): number {
  return op.data[op.order === 'col-major' ? c * op.rows + r : r * op.cols + c];
}

/** Index of element (m, n) of an M x N matrix stored in `order`. */
export function dstIndex(order: Order, M: number, N: number, m: number, n: number): number {
  return order === 'row-major' ? m * N + n : n * M + m;
}
