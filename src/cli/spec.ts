// The JSON spec contract of `qgemm run` (README "Spec format"), turned into a GemmProblem for
// pack -> gemm -> output. Paths resolve against the spec's folder. Every error is an InputError naming
// the spec field (`lhs`, `rhsZeroPoint`, `pipeline[1].multiplier`); .npy trouble is reported against the
// field that named the file. Reading files is injected so the same code can serve tests and tools.

import { InputError } from '../errors.ts';
import { parseNpy, type NpyArray } from '../io/npy.ts';
import type { BitDepth, GemmProblem, Operand, OutputStage, PerChannel } from '../types.ts';
import { isInt32 } from '../spec/problem.ts';

export type ReadFile = (path: string) => Uint8Array;

export interface GemmSpec {
  op: 'gemm';
  problem: GemmProblem;
  /** Resolved output path. */
  out: string;
}

type Json = Record<string, unknown>;

export function isObject(v: unknown): v is Json {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Rejects keys outside `allowed`: a misspelt optional field must not be silently ignored. */
export function checkKeys(field: string, obj: Json, allowed: readonly string[]): void {
  for (const key of Object.keys(obj)) {
    if (!allowed.includes(key)) throw new InputError(field ? `${field}.${key}` : key, `unknown field (expected one of: ${allowed.join(', ')})`);
  }
}

export function resolvePath(baseDir: string, p: string): string {
  return p.startsWith('/') || /^[A-Za-z]:[\\/]/.test(p) ? p : `${baseDir.replace(/\/$/, '')}/${p}`;
}

/** Reads and parses an .npy file named by `field`; any failure is an InputError on that field. */
export function readNpyField(field: string, path: unknown, baseDir: string, readFile: ReadFile): NpyArray {
  if (typeof path !== 'string' || path === '') throw new InputError(field, 'expected a path to an .npy file');
  const full = resolvePath(baseDir, path);
  let bytes: Uint8Array;
  try {
    bytes = readFile(full);
  } catch (e) {
    const code = (e as { code?: string }).code;
    throw new InputError(field, `cannot read ${full}${code ? ` (${code})` : ''}`);
  }
  try {
    return parseNpy(bytes);
  } catch (e) {
    throw new InputError(field, `${full} is not a valid .npy file: ${(e as Error).message}`);
  }
}

function readOperand(field: string, path: unknown, baseDir: string, readFile: ReadFile): Operand {
  const arr = readNpyField(field, path, baseDir, readFile);
  if (arr.dtype !== 'uint8' && arr.dtype !== 'int8') throw new InputError(field, `dtype must be uint8 or int8, got ${arr.dtype}`);
  if (arr.shape.length !== 2) throw new InputError(field, `expected a 2-D array, got shape (${arr.shape.join(', ')})`);
  const [rows, cols] = arr.shape;
  if (rows === 0 || cols === 0) throw new InputError(field, `empty matrix, shape (${rows}, ${cols})`);
  return { data: arr.data as Uint8Array | Int8Array, rows, cols, order: arr.fortranOrder ? 'col-major' : 'row-major' };
}

/** Any integer .npy vector (numpy's default int64 included) as Int32Array, each value range-checked. */
export function int32Vector(field: string, arr: NpyArray): Int32Array {
  if (arr.shape.length !== 1) throw new InputError(field, `expected a 1-D vector, got shape (${arr.shape.join(', ')})`);
  if (arr.dtype.startsWith('float') || arr.dtype === 'bool') throw new InputError(field, `expected an integer dtype, got ${arr.dtype}`);
  const out = new Int32Array(arr.data.length);
  for (let i = 0; i < out.length; i++) {
    const v = Number(arr.data[i]);
    if (!isInt32(v)) throw new InputError(`${field}[${i}]`, `value ${String(arr.data[i])} does not fit in int32`);
    out[i] = v;
  }
  return out;
}

function zeroPoint(field: string, v: unknown, baseDir: string, readFile: ReadFile): PerChannel {
  if (v === undefined) return 0;
  if (typeof v === 'string') return int32Vector(field, readNpyField(field, v, baseDir, readFile));
  if (!isInt32(v)) throw new InputError(field, `expected an int32 or an .npy path, got ${JSON.stringify(v)}`);
  return v;
}

/** A JSON number, or an array of numbers (a per-channel vector). Range checks come in normalizeProblem. */
function scalarOrVector(field: string, v: unknown): PerChannel {
  if (Array.isArray(v)) {
    const out = new Int32Array(v.length);
    v.forEach((x, i) => {
      if (!isInt32(x)) throw new InputError(`${field}[${i}]`, `expected an int32, got ${JSON.stringify(x)}`);
      out[i] = x;
    });
    return out;
  }
  if (v === undefined) throw new InputError(field, 'missing');
  return v as number;
}

function required(field: string, obj: Json, key: string): unknown {
  if (!(key in obj)) throw new InputError(`${field}.${key}`, 'missing');
  return obj[key];
}

const STAGE_KEYS: Record<string, readonly string[]> = {
  bias: ['axis', 'values'],
  quantizeDownInt32ToUint8Scale: ['offset', 'multiplier', 'shift', 'axis'],
  quantizeDownInt32ByFixedPoint: ['multiplier', 'shift', 'offsetAfterShift'],
  scaleInt32ByFixedPointAndExponent: ['multiplier', 'exponent', 'offsetAfterShift', 'rounding', 'axis'],
  clamp: ['min', 'max'],
  saturatingCast: ['to'],
  truncatingCast: ['to'],
  tanh: ['realZeroAsInt32', 'realAmplitudeAsInt32'],
};

/** One stage of the spec's "pipeline"; values are range-checked later by normalizeProblem. */
export function parseStage(field: string, s: unknown): OutputStage {
  if (!isObject(s)) throw new InputError(field, 'expected a stage object');
  const type = s.type;
  if (typeof type !== 'string' || !(type in STAGE_KEYS)) {
    throw new InputError(`${field}.type`, `unknown stage type ${JSON.stringify(type)} (expected one of: ${Object.keys(STAGE_KEYS).join(', ')})`);
  }
  checkKeys(field, s, ['type', ...STAGE_KEYS[type]]);
  const get = (key: string) => required(field, s, key);
  switch (type) {
    case 'bias': {
      const values = get('values');
      if (!Array.isArray(values)) throw new InputError(`${field}.values`, 'expected an array of int32');
      return { type, axis: get('axis') as 'row', values: scalarOrVector(`${field}.values`, values) as Int32Array };
    }
    case 'quantizeDownInt32ToUint8Scale':
      return {
        type,
        offset: scalarOrVector(`${field}.offset`, get('offset')),
        multiplier: scalarOrVector(`${field}.multiplier`, get('multiplier')),
        shift: get('shift') as number,
        ...('axis' in s ? { axis: s.axis as 'row' } : {}),
      };
    case 'quantizeDownInt32ByFixedPoint':
      return { type, multiplier: get('multiplier') as number, shift: get('shift') as number, offsetAfterShift: get('offsetAfterShift') as number };
    case 'scaleInt32ByFixedPointAndExponent':
      return {
        type,
        multiplier: scalarOrVector(`${field}.multiplier`, get('multiplier')),
        exponent: scalarOrVector(`${field}.exponent`, get('exponent')),
        offsetAfterShift: get('offsetAfterShift') as number,
        rounding: (s.rounding ?? 'double') as 'double',
        ...('axis' in s ? { axis: s.axis as 'row' } : {}),
      };
    case 'clamp':
      return { type, min: get('min') as number, max: get('max') as number };
    case 'tanh':
      return { type, realZeroAsInt32: get('realZeroAsInt32') as number, realAmplitudeAsInt32: get('realAmplitudeAsInt32') as number };
    case 'saturatingCast':
      return { type, to: get('to') as 'uint8' };
    default:
      return { type: 'truncatingCast', to: get('to') as 'uint8' };
  }
}

function parseBitDepth(v: unknown): BitDepth | undefined {
  if (v === undefined) return undefined;
  if (!isObject(v)) throw new InputError('bitDepth', 'expected {"lhs": 1..8, "rhs": 1..8, "rounding": ...}');
  checkKeys('bitDepth', v, ['lhs', 'rhs', 'rounding']);
  return { lhs: v.lhs as number, rhs: v.rhs as number, rounding: (v.rounding ?? 'default') as BitDepth['rounding'] };
}

export const GEMM_SPEC_KEYS = ['op', 'lhs', 'rhs', 'lhsZeroPoint', 'rhsZeroPoint', 'pipeline', 'bitDepth', 'out'] as const;

/** The "gemm" op of the spec contract. `spec` is the parsed JSON; `baseDir` the spec file's folder. */
export function parseGemmSpec(spec: Json, baseDir: string, readFile: ReadFile): GemmSpec {
  checkKeys('', spec, GEMM_SPEC_KEYS);
  if (typeof spec.out !== 'string' || spec.out === '') throw new InputError('out', 'expected an output .npy path');
  const pipeline = spec.pipeline ?? [];
  if (!Array.isArray(pipeline)) throw new InputError('pipeline', 'expected an array of stages');
  const bitDepth = parseBitDepth(spec.bitDepth);
  const problem: GemmProblem = {
    lhs: readOperand('lhs', spec.lhs, baseDir, readFile),
    rhs: readOperand('rhs', spec.rhs, baseDir, readFile),
    lhsZeroPoint: zeroPoint('lhsZeroPoint', spec.lhsZeroPoint, baseDir, readFile),
    rhsZeroPoint: zeroPoint('rhsZeroPoint', spec.rhsZeroPoint, baseDir, readFile),
    pipeline: pipeline.map((s, i) => parseStage(`pipeline[${i}]`, s)),
    dstOrder: 'row-major',
    ...(bitDepth ? { bitDepth } : {}),
  };
  return { op: 'gemm', problem, out: resolvePath(baseDir, spec.out) };
}
