// Validation of a GemmProblem (src/types.ts), once, for every backend: the CPU reference, the WebGPU
// scheduler and the CLI all start from the NormalizedProblem made here. Bad input throws InputError
// naming the field as the spec names it (`lhs`, `rhsZeroPoint`, `pipeline[2].shift`...); each output
// stage's fields are checked by its own module (./stages/).

import { InputError } from '../errors.ts';
import {
  INT32_MAX,
  type BitDepth,
  type DstType,
  type GemmProblem,
  type Operand,
  type OperandType,
  type OutputStage,
  type Order,
  type PerChannel,
} from '../types.ts';
import { checkDtypeKey, checkKnownKeys, checkPerChannel, checkProblemObject, checkRange, RESULT_KEYS } from './check.ts';
import { brief } from './echo.ts';
import { stageDefinition, type StageShape } from './stages/pipeline.ts';

export { channel } from './stages/stage.ts';

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
  /** What each stage's validation derived (src/problem/stages/), by stage index: tanh its constants. */
  derived: unknown[];
  dstOrder: Order;
  dstType: DstType;
  bitDepth?: BitDepth;
}

/** What a call told a prepacked operand it cannot take says: which call runs it (here, ../api.ts, the scheduler). */
export const PREPACKED_ON_GPU = "prepacked on a GpuContext (ctx.prepack): run it with that context's gemm";
export const PREPACKED_FOR_CPU = "prepacked for the CPU path (prepackCpu): run it with gemm(problem, { backend: 'cpu' })";

export function operandType(field: string, data: unknown): OperandType {
  if (data instanceof Uint8Array) return 'uint8';
  if (data instanceof Int8Array) return 'int8';
  throw new InputError(field, 'expected uint8 or int8 data (Uint8Array or Int8Array)');
}

/** A CPU operand checked whole: uint8 or int8 data of rows x cols elements, a known order (InputError naming `field`). */
export function checkCpuOperand(field: string, op: Operand): OperandType {
  return checkOperand(field, op, false);
}

/** The keys of a GemmProblem and of an Operand (src/types.ts): another is a misspelling. */
const PROBLEM_KEYS = ['lhs', 'rhs', 'lhsZeroPoint', 'rhsZeroPoint', 'pipeline', 'dstOrder', 'bitDepth'];
const OPERAND_KEYS = ['data', 'rows', 'cols', 'order', ...RESULT_KEYS];

function checkOperand(field: string, op: Operand, shapesOnly: boolean): OperandType {
  if (!op || typeof op !== 'object') throw new InputError(field, 'missing operand');
  if (typeof (op as { then?: unknown }).then === 'function') {
    throw new InputError(field, 'a Promise, not an operand: await it (prepackCpu and ctx.prepack are async)');
  }
  if (op.data === undefined && 'side' in op && typeof (op as { destroy?: unknown }).destroy === 'function') {
    // prepackCpu's or ctx.prepack's operand (a GPU one has its packFormat), given to cpuGemm or a reference
    throw new InputError(field, 'packFormat' in op ? PREPACKED_ON_GPU : PREPACKED_FOR_CPU);
  }
  const type = operandType(field, op.data);
  checkKnownKeys(field, op, OPERAND_KEYS);
  checkDtypeKey(field, (op as { dtype?: unknown }).dtype, type);
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

const ROUNDINGS = ['nearest', 'probabilistic-addmod', 'probabilistic-xorshift', 'default'] as const;

/** A BitDepth as normalizeProblem accepts it (also ctx.prepack's). */
export function checkBitDepth(b: BitDepth): BitDepth {
  if (!b || typeof b !== 'object') throw new InputError('bitDepth', 'expected {"lhs": 1..8, "rhs": 1..8, "rounding": ...}');
  checkKnownKeys('bitDepth', b, ['lhs', 'rhs', 'rounding']);
  checkRange('bitDepth.lhs', b.lhs, 1, 8);
  checkRange('bitDepth.rhs', b.rhs, 1, 8);
  const rounding = b.rounding === undefined ? 'default' : b.rounding; // null is not absent
  if (!(ROUNDINGS as readonly string[]).includes(rounding)) {
    throw new InputError('bitDepth.rounding', `expected one of ${ROUNDINGS.join(', ')}, got ${brief(rounding)}`);
  }
  return { lhs: b.lhs, rhs: b.rhs, rounding };
}

/**
 * shapesOnly: the operands' data lives elsewhere (a GPU buffer); check their shapes and types only.
 * rhsShapeOnly: the same for the rhs alone (prepacked for the CPU: its data is in the kernels' memory).
 */
export function normalizeProblem(
  problem: GemmProblem,
  { shapesOnly = false, rhsShapeOnly = false }: { shapesOnly?: boolean; rhsShapeOnly?: boolean } = {},
): NormalizedProblem {
  checkProblemObject(problem);
  checkKnownKeys('', problem, PROBLEM_KEYS);
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
  // Absent is 0; null is not absent (the CLI's spec refuses it too).
  const lhsZeroPoint = checkPerChannel(
    'lhsZeroPoint',
    problem.lhsZeroPoint === undefined ? 0 : problem.lhsZeroPoint,
    M,
    'one per lhs row, M',
  );
  const rhsZeroPoint = checkPerChannel(
    'rhsZeroPoint',
    problem.rhsZeroPoint === undefined ? 0 : problem.rhsZeroPoint,
    N,
    'one per rhs column, N',
  );
  const dstOrder = problem.dstOrder === undefined ? 'row-major' : problem.dstOrder;
  if (dstOrder !== 'row-major' && dstOrder !== 'col-major') throw new InputError('dstOrder', `expected 'row-major' or 'col-major'`);

  const pipeline = problem.pipeline === undefined ? [] : problem.pipeline;
  if (!Array.isArray(pipeline)) throw new InputError('pipeline', 'expected an array of stages');
  const derived: unknown[] = [];
  let dstType: DstType = 'int32';
  const shape: StageShape = {
    length: (axis) => (axis === 'row' ? M : N),
    what: (axis) => (axis === 'row' ? 'axis "row": one per dst row, M' : 'axis "col": one per dst column, N'),
  };
  for (const [i, stage] of pipeline.entries()) {
    // entries(), not forEach: a sparse array's hole is a stage that is not an object, not one skipped
    const f = `pipeline[${i}]`;
    if (!stage || typeof stage !== 'object') throw new InputError(f, 'expected a stage object');
    if (dstType !== 'int32') throw new InputError(f, `no stage may follow a cast (pipeline[${i - 1}] is the last allowed)`);
    const def = stageDefinition(stage.type);
    if (!def) {
      const type = (stage as { type: unknown }).type;
      throw new InputError(`${f}.type`, type === undefined ? 'missing: every stage names its type' : `unknown stage type ${brief(type)}`);
    }
    checkKnownKeys(f, stage, ['type', ...Object.keys(def.fields)]);
    derived[i] = def.validate(stage, f, shape);
    if (def.castTo) dstType = def.castTo(stage);
  }

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
    derived,
    dstOrder,
    dstType,
    ...(bitDepth ? { bitDepth } : {}),
  };
}

/** The operand with its storage order made explicit (row-major when not given). */
function withOrder<T extends Operand>(op: T): T & { order: Order } {
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
