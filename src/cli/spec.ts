// The JSON spec contract of `qgemm run` (README "Spec format"), turned into a GemmProblem for
// pack -> gemm -> output. Every field is type-checked here, strictly: unknown or misspelt keys, a
// string or null where a number belongs, an unknown enum value ("axis": "diag", "rounding": "up") are
// InputErrors naming the spec field (`lhs`, `rhsZeroPoint`, `pipeline[1].multiplier`); value ranges
// are then checked by normalizeProblem, which the CLI calls before any device is acquired. .npy trouble
// is reported against the field that named the file. File access comes through a SpecIo, so tests and
// tools can pass a plain `(path) => bytes` function instead of the CLI's guarded reader.

import { InputError } from '../errors.ts';
import { NpyFormatError, parseNpy, type NpyArray } from '../io/npy.ts';
import type { BitDepth, GemmProblem, Operand, OutputStage, PerChannel } from '../types.ts';
import { STAGE_TYPES, stageDefinition } from '../problem/stages/pipeline.ts';
import type { FieldKind } from '../problem/stages/stage.ts';
import { isInt32, keyField } from '../problem/check.ts';
import { brief } from './json.ts';

export type ReadFile = (path: string) => Uint8Array;

/** How a spec reaches its files: path resolution (with the folder rule) and .npy reading. */
export interface SpecIo {
  resolve(field: string, path: unknown): string;
  readNpy(field: string, fullPath: string): NpyArray;
}

interface GemmSpec {
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
    if (!allowed.includes(key)) {
      throw new InputError(keyField(field, key), `unknown field (expected one of: ${allowed.join(', ')})`);
    }
  }
}

function resolvePath(baseDir: string, p: string): string {
  return p.startsWith('/') || /^[A-Za-z]:[\\/]/.test(p) ? p : `${baseDir.replace(/\/$/, '')}/${p}`;
}

/** A SpecIo over a plain file reader (tests, tools): no folder rule, no size checks. */
function plainSpecIo(baseDir: string, readFile: ReadFile): SpecIo {
  return {
    resolve(field, p) {
      if (typeof p !== 'string' || p === '') throw new InputError(field, `expected a file path, got ${brief(p)}`);
      return resolvePath(baseDir, p);
    },
    readNpy(field, full) {
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
        if (!(e instanceof NpyFormatError)) throw e;
        throw new InputError(field, `${full} is not a valid .npy file: ${e.message}`);
      }
    },
  };
}

export function asSpecIo(baseDir: string, io: ReadFile | SpecIo): SpecIo {
  return typeof io === 'function' ? plainSpecIo(baseDir, io) : io;
}

/** Reads and parses the .npy file that `field` names. */
export function readNpyField(field: string, path: unknown, io: SpecIo): NpyArray {
  return io.readNpy(field, io.resolve(field, path));
}

function readOperand(field: string, path: unknown, io: SpecIo): Operand {
  const arr = readNpyField(field, path, io);
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

/** A JSON integer in int32. */
export function int32(field: string, v: unknown): number {
  if (!isInt32(v)) throw new InputError(field, `expected an int32, got ${brief(v)}`);
  return v;
}

/**
 * A JSON number as the float32 it rounds to; one that rounds to 0 or to an infinity is refused (1e-50 as a
 * scale would have made every output the zero point, without a word).
 */
function float32(field: string, v: unknown): number {
  const x = num(field, v);
  const f = Math.fround(x);
  if ((f === 0 && x !== 0) || !Number.isFinite(f)) {
    throw new InputError(field, `${x} is not a float32 value: it rounds to ${f} (float32 spans 1.4e-45 to 3.4e+38)`);
  }
  return f;
}

/** A JSON number (range checks come in normalizeProblem). */
function num(field: string, v: unknown): number {
  if (typeof v !== 'number') throw new InputError(field, `expected a number, got ${brief(v)}`);
  return v;
}

/** One of `values`, exactly. */
export function oneOf<T extends string>(field: string, v: unknown, values: readonly T[]): T {
  if (typeof v !== 'string' || !(values as readonly string[]).includes(v)) {
    throw new InputError(field, `expected one of ${values.map((x) => JSON.stringify(x)).join(', ')}, got ${brief(v)}`);
  }
  return v as T;
}

function zeroPoint(field: string, v: unknown, io: SpecIo): PerChannel {
  if (v === undefined) return 0;
  if (typeof v === 'string') return int32Vector(field, readNpyField(field, v, io));
  if (!isInt32(v)) throw new InputError(field, `expected an int32 or an .npy path, got ${brief(v)}`);
  return v;
}

/** A JSON number, or an array of int32 (a per-channel vector). */
function scalarOrVector(field: string, v: unknown): PerChannel {
  if (Array.isArray(v)) {
    const out = new Int32Array(v.length);
    v.forEach((x, i) => {
      out[i] = int32(`${field}[${i}]`, x);
    });
    return out;
  }
  return num(field, v);
}

/** obj[key] of a spec object at `field` ('' at the top), else an InputError naming it 'missing'. */
export function required(field: string, obj: Record<string, unknown>, key: string): unknown {
  if (!(key in obj) || obj[key] === undefined) throw new InputError(field ? `${field}.${key}` : key, 'missing');
  return obj[key];
}

const AXES = ['row', 'col'] as const;

/**
 * One stage of the spec's "pipeline", every field typed by the kinds its module declares
 * (src/problem/stages/); value ranges are normalizeProblem's.
 */
function parseStage(field: string, s: unknown): OutputStage {
  if (!isObject(s)) throw new InputError(field, `expected a stage object, got ${brief(s)}`);
  const type = s.type;
  const def = stageDefinition(type);
  if (!def) {
    const what = type === undefined ? 'missing' : `unknown stage type ${brief(type)}`;
    throw new InputError(`${field}.type`, `${what} (expected one of: ${STAGE_TYPES.join(', ')})`);
  }
  const fields = Object.entries(def.fields as Record<string, FieldKind>);
  checkKeys(field, s, ['type', ...fields.map(([key]) => key)]);
  if ('axis' in s) oneOf(`${field}.axis`, s.axis, AXES);
  const stage: Json = { type };
  for (const [key, kind] of fields) {
    const f = `${field}.${key}`;
    if (kind === 'axis?' || (typeof kind === 'object' && kind.default !== undefined)) {
      if (key in s) stage[key] = kind === 'axis?' ? s[key] : oneOf(f, s[key], (kind as { oneOf: readonly string[] }).oneOf);
      else if (typeof kind === 'object') stage[key] = kind.default;
      continue;
    }
    const v = required(field, s, key);
    if (kind === 'int') stage[key] = num(f, v);
    else if (kind === 'perChannel') stage[key] = scalarOrVector(f, v);
    else if (kind === 'float32PerChannel') {
      // a JSON number is rounded to float32 (as TFLite stores scales); an array is one value per channel
      stage[key] = Array.isArray(v) ? Float32Array.from(v, (x, i) => float32(`${f}[${i}]`, x)) : float32(f, v);
    } else if (kind === 'axis') stage[key] = oneOf(f, v, AXES);
    else if (kind === 'vector') {
      if (!Array.isArray(v)) throw new InputError(f, `expected an array of int32, got ${brief(v)}`);
      stage[key] = scalarOrVector(f, v);
    } else stage[key] = oneOf(f, v, kind.oneOf);
  }
  return stage as unknown as OutputStage;
}

/** The stages of a "pipeline" value: an array (missing is []; null is an error). */
function parsePipeline(field: string, v: unknown): OutputStage[] {
  if (v === undefined) return [];
  if (!Array.isArray(v)) throw new InputError(field, `expected an array of stages, got ${brief(v)}`);
  return v.map((s, i) => parseStage(`${field}[${i}]`, s));
}

export const ROUNDINGS = ['nearest', 'probabilistic-addmod', 'probabilistic-xorshift', 'default'] as const;

function parseBitDepth(v: unknown): BitDepth | undefined {
  if (v === undefined) return undefined;
  if (!isObject(v)) throw new InputError('bitDepth', `expected {"lhs": 1..8, "rhs": 1..8, "rounding": ...}, got ${brief(v)}`);
  checkKeys('bitDepth', v, ['lhs', 'rhs', 'rounding']);
  return {
    lhs: num('bitDepth.lhs', required('bitDepth', v, 'lhs')),
    rhs: num('bitDepth.rhs', required('bitDepth', v, 'rhs')),
    rounding: 'rounding' in v ? oneOf('bitDepth.rounding', v.rounding, ROUNDINGS) : 'default',
  };
}

const GEMM_SPEC_KEYS = ['op', 'lhs', 'rhs', 'lhsZeroPoint', 'rhsZeroPoint', 'pipeline', 'bitDepth', 'out'] as const;

/**
 * The "gemm" op of the spec contract. `spec` is the parsed JSON; `io` resolves and reads its files
 * (or a plain reader, paths then resolving against `baseDir`). Fields that need no file are checked
 * before any file is read; `out` is resolved, not checked (the CLI checks it before the operands).
 */
export function parseGemmSpec(spec: Json, baseDir: string, readFile: ReadFile | SpecIo): GemmSpec {
  const io = asSpecIo(baseDir, readFile);
  checkKeys('', spec, GEMM_SPEC_KEYS);
  if (!('out' in spec)) throw new InputError('out', 'missing: the output .npy path');
  const out = io.resolve('out', spec.out);
  const pipeline = parsePipeline('pipeline', spec.pipeline);
  const bitDepth = parseBitDepth(spec.bitDepth);
  if (!('lhs' in spec)) throw new InputError('lhs', 'missing');
  if (!('rhs' in spec)) throw new InputError('rhs', 'missing');
  const problem: GemmProblem = {
    lhs: readOperand('lhs', spec.lhs, io),
    rhs: readOperand('rhs', spec.rhs, io),
    lhsZeroPoint: zeroPoint('lhsZeroPoint', spec.lhsZeroPoint, io),
    rhsZeroPoint: zeroPoint('rhsZeroPoint', spec.rhsZeroPoint, io),
    pipeline,
    dstOrder: 'row-major',
    ...(bitDepth ? { bitDepth } : {}),
  };
  return { op: 'gemm', problem, out };
}
