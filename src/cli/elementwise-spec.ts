// The elementwise ops of the `qgemm run` spec contract (README "Elementwise ops"), turned into an
// ElementwiseProblem (src/reference/elementwise.ts):
//   {"op": "add"|"sub"|"mul"|"alignedAdd"|"alignedSub",
//    "a": {"data": "a.npy", "scale": 0.05, "zeroPoint": 100},      aligned ops: "scale": [...], "axis": k
//    "b": {"data": "b.npy", "scale": 0.1,  "zeroPoint": 120},
//    "output": {"scale": 0.15, "zeroPoint": 110, "min": 0, "max": 255},   min/max optional
//    "kernelPath": "builtin"|"xnnpack",                             add/sub/mul, optional, default builtin
//    "out": "c.npy"}
// The .npy inputs are uint8 or int8 (the same dtype), 0..4 dimensions, C or Fortran order; the output is
// written in C order with the inputs' dtype and the broadcast shape. Every bad field is an InputError
// naming it (`a.scale`, `b.data`, `output.min`...); the whole problem is validated here, before any
// backend runs, so bad input exits 2 even where no GPU could be had.

import { InputError } from '../errors.ts';
import {
  ELEMENTWISE_OPS,
  MAX_RANK,
  isAlignedOp,
  type ElementwiseOp,
  type ElementwiseOutput,
  type ElementwiseProblem,
  type QuantizedTensor,
} from '../problem/elementwise.ts';
import { prepareElementwise } from '../problem/elementwise-plan.ts';
import { brief } from './json.ts';
import { asSpecIo, checkKeys, isObject, readNpyField, type ReadFile, required, type SpecIo } from './spec.ts';

interface ElementwiseSpec {
  op: ElementwiseOp;
  problem: ElementwiseProblem;
  /** Resolved output path. */
  out: string;
}

const ELEMENTWISE_SPEC_KEYS = ['op', 'a', 'b', 'output', 'kernelPath', 'out'] as const;
const INPUT_KEYS = ['data', 'scale', 'zeroPoint', 'axis'] as const;
const OUTPUT_KEYS = ['scale', 'zeroPoint', 'min', 'max'] as const;

export function isElementwiseOp(op: unknown): op is ElementwiseOp {
  return typeof op === 'string' && (ELEMENTWISE_OPS as readonly string[]).includes(op);
}

function number(field: string, v: unknown): number {
  if (typeof v !== 'number') throw new InputError(field, `expected a number, got ${brief(v)}`);
  return v;
}

function integer(field: string, v: unknown): number {
  if (typeof v !== 'number' || !Number.isInteger(v)) throw new InputError(field, `expected an integer, got ${brief(v)}`);
  return v;
}

function parseInput(field: 'a' | 'b', v: unknown, aligned: boolean, io: SpecIo): QuantizedTensor {
  if (!isObject(v)) throw new InputError(field, `expected {"data": "x.npy", "scale": ..., "zeroPoint": ...}, got ${brief(v)}`);
  checkKeys(field, v, INPUT_KEYS);
  const arr = readNpyField(`${field}.data`, required(field, v, 'data'), io);
  if (arr.dtype !== 'uint8' && arr.dtype !== 'int8') throw new InputError(`${field}.data`, `dtype must be uint8 or int8, got ${arr.dtype}`);
  if (arr.shape.length > MAX_RANK)
    throw new InputError(`${field}.data`, `at most ${MAX_RANK} dimensions, got shape (${arr.shape.join(', ')})`);
  const rawScale = required(field, v, 'scale');
  let scale: number | number[];
  if (Array.isArray(rawScale)) {
    if (!aligned)
      throw new InputError(
        `${field}.scale`,
        'per-axis scales (an array) are only for alignedAdd and alignedSub; add, sub and mul take one number',
      );
    scale = rawScale.map((s, i) => number(`${field}.scale[${i}]`, s));
    if (!('axis' in v)) throw new InputError(`${field}.axis`, 'required with an array of per-axis scales');
  } else {
    scale = number(`${field}.scale`, rawScale);
    if ('axis' in v) throw new InputError(`${field}.axis`, 'only allowed with an array of per-axis scales');
  }
  return {
    data: arr.data as Uint8Array | Int8Array,
    shape: arr.shape,
    fortranOrder: arr.fortranOrder,
    scale,
    zeroPoint: integer(`${field}.zeroPoint`, required(field, v, 'zeroPoint')),
    ...('axis' in v ? { axis: integer(`${field}.axis`, v.axis) } : {}),
  };
}

function parseOutput(v: unknown): ElementwiseOutput {
  if (!isObject(v)) throw new InputError('output', `expected {"scale": ..., "zeroPoint": ..., "min"?: ..., "max"?: ...}, got ${brief(v)}`);
  checkKeys('output', v, OUTPUT_KEYS);
  return {
    scale: number('output.scale', required('output', v, 'scale')),
    zeroPoint: integer('output.zeroPoint', required('output', v, 'zeroPoint')),
    ...('min' in v ? { min: integer('output.min', v.min) } : {}),
    ...('max' in v ? { max: integer('output.max', v.max) } : {}),
  };
}

/** An elementwise op of the spec contract; `spec` is the parsed JSON, `baseDir` the spec file's folder. */
export function parseElementwiseSpec(spec: Record<string, unknown>, baseDir: string, readFile: ReadFile | SpecIo): ElementwiseSpec {
  const io = asSpecIo(baseDir, readFile);
  checkKeys('', spec, ELEMENTWISE_SPEC_KEYS);
  const op = spec.op;
  if (!isElementwiseOp(op)) throw new InputError('op', `expected one of ${ELEMENTWISE_OPS.join(', ')}, got ${brief(op)}`);
  if (!('out' in spec)) throw new InputError('out', 'missing: the output .npy path');
  const out = io.resolve('out', spec.out);
  const output = parseOutput(spec.output);
  const aligned = isAlignedOp(op);
  const problem: ElementwiseProblem = {
    op,
    a: parseInput('a', spec.a, aligned, io),
    b: parseInput('b', spec.b, aligned, io),
    output,
    ...(spec.kernelPath === undefined ? {} : { kernelPath: spec.kernelPath as ElementwiseProblem['kernelPath'] }),
  };
  try {
    prepareElementwise(problem); // every value check (kernelPath's too), before any backend
  } catch (e) {
    // An input's shape is its .npy file's: `b.shape` is the spec's `b.data`.
    if (!(e instanceof InputError)) throw e;
    const m = /^([ab])\.shape$/.exec(e.field);
    if (m) throw new InputError(`${m[1]}.data`, e.message.slice(e.field.length + 2));
    throw e;
  }
  return { op, problem, out };
}
