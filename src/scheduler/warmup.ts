// Compiling ahead: `ctx.warmup(items)` makes a context compile, before the first real call, every
// pipeline that the listed GEMMs will need (pack -> gemm -> output, with the kernel the registry picks
// for each shape), by running each once on zero-filled operands of its shape. The first use of a kernel
// costs its shader compiles (the pack entry points, the GEMM kernel with its epilogue for the program's
// stage kinds: seconds on SwiftShader, see tools/first-call.mjs); after a warmup a call of a listed shape
// and output program pays none.

import { InputError } from '../errors.ts';
import { checkKnownKeys } from '../problem/check.ts';
import { brief } from '../problem/echo.ts';
import { allocationLimit } from '../problem/dst.ts';
import type { GemmProblem, OutputStage } from '../types.ts';
import type { GpuGemmProblem } from './gemm.ts';

/** A shape to compile for: M x K times K x N, with the output stages and dst order it will run with. */
export interface WarmupShape {
  m: number;
  n: number;
  k: number;
  /** Default 'uint8'. */
  lhsType?: 'uint8' | 'int8' | undefined;
  rhsType?: 'uint8' | 'int8' | undefined;
  pipeline?: OutputStage[] | undefined;
  dstOrder?: GemmProblem['dstOrder'] | undefined;
  bitDepth?: GemmProblem['bitDepth'] | undefined;
}

export type WarmupItem = WarmupShape | GpuGemmProblem;

const isShape = (x: WarmupItem): x is WarmupShape => 'm' in x && 'n' in x && 'k' in x && !('lhs' in x);

/** The items of ctx.warmup: an array of objects, else an InputError naming `items`. */
export function checkWarmupItems(items: unknown): asserts items is WarmupItem[] {
  if (!Array.isArray(items)) throw new InputError('items', `expected an array of shapes or problems, got ${brief(items)}`);
  for (const [i, x] of items.entries()) {
    if (!x || typeof x !== 'object') throw new InputError(`items[${i}]`, `expected a shape { m, n, k } or a problem, got ${brief(x)}`);
  }
}

/**
 * The problem a warmup item runs: a given problem as it is (checked as any GEMM's), a shape with
 * zero-filled operands; m, n and k positive integers and the types 'uint8' or 'int8', else an InputError
 * naming `${field}.m` (...).
 */
export function warmupProblem(item: WarmupItem, field = 'item'): GpuGemmProblem {
  if (!isShape(item)) return item;
  checkKnownKeys(field, item, ['m', 'n', 'k', 'lhsType', 'rhsType', 'pipeline', 'dstOrder', 'bitDepth']);
  for (const key of ['m', 'n', 'k'] as const) {
    const v = item[key];
    if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < 1) {
      throw new InputError(`${field}.${key}`, `expected a positive integer, got ${brief(v)}`);
    }
  }
  for (const key of ['lhsType', 'rhsType'] as const) {
    const v = item[key];
    if (v !== undefined && v !== 'uint8' && v !== 'int8')
      throw new InputError(`${field}.${key}`, `expected "uint8" or "int8", got ${brief(v)}`);
  }
  const operand = (type: 'uint8' | 'int8' | undefined, rows: number, cols: number) => {
    try {
      return { data: type === 'int8' ? new Int8Array(rows * cols) : new Uint8Array(rows * cols), rows, cols };
    } catch (e) {
      throw allocationLimit(e, `${field}: a ${rows}x${cols} operand`);
    }
  };
  return {
    lhs: operand(item.lhsType, item.m, item.k),
    rhs: operand(item.rhsType, item.k, item.n),
    pipeline: item.pipeline,
    dstOrder: item.dstOrder,
    bitDepth: item.bitDepth,
  };
}
