// Problems for the kernels that read a 4-bit rhs two values per byte (the subgroup-matrix '-u4'
// variants, src/kernels/sgmat/sgmat-rhs-u4.wgsl): seeded shapes at tile edges (1-10, 15-17, 31-33,
// 63-65) with K odd, so the last packed byte holds one value, rhs requantized to 1 to 4 bits under every
// rounding, scalar and per-channel zero points across their range, raw int32 output; then one problem
// of several 64-tiles and k steps. Used by the SwiftShader tier (test/gpu/sgmat-u4.test.ts) and the
// lavapipe tier (test/lavapipe/sgmat.test.ts).

import fc from 'fast-check';
import type { BitDepthRounding, GemmProblem } from '../../src/types.ts';
import { arbProblemOfShape } from './arbitraries.ts';

const EDGES = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 15, 16, 17, 31, 32, 33, 63, 64, 65];
const ROUNDINGS: BitDepthRounding[] = ['nearest', 'probabilistic-addmod', 'probabilistic-xorshift'];

/** Zero points across their range: the int32 ends, the uint8/int8 ends, a per-channel ramp over them. */
function zeroPoint(n: number, i: number): number | Int32Array {
  const scalars = [0, 255, -128, 127, 2147483647, -2147483648];
  if (i % 2 === 0) return scalars[(i / 2) % scalars.length];
  return Int32Array.from({ length: n }, (_, j) => [-128, 255, 0, 7, -2147483648, 2147483647, 131][(j + i) % 7]);
}

/** `count` seeded problems at tile edges (K odd), rhs of 1 to 4 bits, then one of several tiles and k steps. */
export function nibbleProblems(count: number, s: number): GemmProblem[] {
  let x = s >>> 0;
  const pick = (list: number[]) => {
    x = (Math.imul(x, 1664525) + 1013904223) >>> 0;
    return list[x % list.length];
  };
  const shapes: [number, number, number][] = [];
  for (let i = 0; i < count; i++) shapes.push([pick(EDGES), pick(EDGES), pick(EDGES.filter((k) => k % 2 === 1))]);
  shapes.push([130, 129, 257]);
  return shapes.map(([M, N, K], i) => {
    const p = fc.sample(arbProblemOfShape(M, N, K), { numRuns: 1, seed: s + i })[0];
    return {
      ...p,
      lhsZeroPoint: zeroPoint(M, i + 1),
      rhsZeroPoint: zeroPoint(N, i),
      pipeline: [], // raw int32 sums: the strictest check, and one epilogue pipeline per kernel
      bitDepth: { lhs: 8, rhs: 1 + ((i + s) % 4), rounding: ROUNDINGS[i % ROUNDINGS.length] },
    };
  });
}
