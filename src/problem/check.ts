// The field checks of the spec (pack -> gemm -> output's inputs), shared by the problem's validation
// (./problem.ts) and each output stage's (./stages/): every failure is an InputError naming the field.

import { InputError } from '../errors.ts';
import { type Axis, INT32_MAX, INT32_MIN, type PerChannel } from '../types.ts';
import { brief } from './echo.ts';

export function isInt32(v: unknown): v is number {
  return typeof v === 'number' && Number.isInteger(v) && v >= INT32_MIN && v <= INT32_MAX;
}

export function checkInt32(field: string, v: unknown): number {
  if (!isInt32(v)) throw new InputError(field, `expected an int32, got ${brief(v)}`);
  return v;
}

/**
 * Whether ok(x) holds for every index of v. Array.prototype.every (like some, map and forEach) skips a
 * sparse array's holes (`[1, , 3]`: JSON cannot write one, a caller's code can); here a hole reads as
 * undefined, so a check fails on it and its InputError names the field.
 */
export function everyItem(v: readonly unknown[], ok: (x: unknown) => boolean): boolean {
  for (let i = 0; i < v.length; i++) if (!ok(v[i])) return false;
  return true;
}

/** A call's problem that is not an object (null, a number, an array): an InputError naming `problem`. */
export function checkProblemObject(problem: unknown, what = 'a GemmProblem'): void {
  if (!problem || typeof problem !== 'object' || Array.isArray(problem))
    throw new InputError('problem', `expected ${what} object, got ${brief(problem)}`);
}

/** The most characters of a key named whole in a field (a longer one is cut, and its length said). */
const KEY_CHARS = 200;

/**
 * The field of `key` in `field`: `field.key` (`key` at the top), or `field["a.b"]` (`[""]` at the top)
 * where the key is not an identifier, so that no key reads as another field or as none; the key whole up
 * to KEY_CHARS characters, so that two names are two fields, and no key makes a message of megabytes.
 */
export function keyField(field: string, key: string): string {
  if (key.length > KEY_CHARS) return `${field}[${JSON.stringify(key.slice(0, KEY_CHARS))}... (${key.length} characters)]`;
  return /^[A-Za-z_$][\w$]*$/.test(key) ? (field ? `${field}.${key}` : key) : `${field}[${JSON.stringify(key)}]`;
}

/**
 * A key of `of` that `known` lacks: an InputError naming it (keyField), since a misspelt optional field
 * (`rhsZeropoint`, `roundng`) would otherwise be ignored and its default used. A key whose value is
 * undefined is absent.
 */
export function checkKnownKeys(field: string, of: object, known: readonly string[]): void {
  for (const [key, v] of Object.entries(of)) {
    if (v !== undefined && !known.includes(key)) {
      throw new InputError(keyField(field, key), `unknown key; known: ${known.join(', ')}`);
    }
  }
}

/**
 * The keys a result of the library carries besides its data and shape (a GemmResult, an ElementwiseResult,
 * parseNpy's array), taken where an operand or a tensor is, so a result can be the next call's input:
 * `dtype` (checked against the data by checkDtypeKey) and `backend` (where it ran; ignored).
 */
export const RESULT_KEYS = ['dtype', 'backend'] as const;

/** A `dtype` given beside data of type `actual` ('uint8', 'int8'): it must be that type. */
export function checkDtypeKey(field: string, dtype: unknown, actual: string): void {
  if (dtype !== undefined && dtype !== actual) {
    throw new InputError(`${field}.dtype`, `${brief(dtype)} does not match the data (${actual})`);
  }
}

/** An optional callback: undefined, or a function. */
export function checkFunction(field: string, v: unknown): void {
  if (v !== undefined && typeof v !== 'function') throw new InputError(field, `expected a function, got ${brief(v)}`);
}

export function checkRange(field: string, v: unknown, lo: number, hi: number): number {
  if (typeof v !== 'number' || !Number.isInteger(v) || v < lo || v > hi) {
    throw new InputError(field, `expected an integer in ${lo}..${hi}, got ${brief(v)}`);
  }
  return v;
}

/** A scalar, or an Int32Array of exactly `length` elements. */
export function checkPerChannel(field: string, v: unknown, length: number, what: string): PerChannel {
  if (v instanceof Int32Array) {
    if (v.length !== length) throw new InputError(field, `vector has length ${v.length}, expected ${length} (${what})`);
    return v;
  }
  return checkInt32(field, v);
}

export function checkAxis(field: string, axis: unknown): Axis {
  if (axis !== 'row' && axis !== 'col') throw new InputError(field, `expected "row" or "col", got ${brief(axis)}`);
  return axis;
}
