// The fixed problem suite of `qgemm verify` and verifyDevice() (./verify.ts): the self-test problems
// (src/scheduler/self-test.ts) plus a small deterministic sweep (every operand type, storage order,
// zero-point form and stage kind; odd shapes; several 64-tiles; less-than-8-bit operands), the
// prepacked few-row suite of the CPU path, and convolution layers whose lhs the GPU reads from the NHWC
// input (a PatchOperand: patches gathered by the kernel or packed in its pass). Pure data: pack -> gemm
// -> output runs in ./verify.ts.

import { im2col, type PatchGeometry } from './pack/patches.ts';
import { selfTestProblems } from './scheduler/self-test.ts';
import type { GemmProblem, Operand, OutputStage } from './types.ts';
/** n deterministic bytes of operand set `seed` (an LCG's high bytes), never all zeros; the tuner's operands too. */
export function lcgBytes(n: number, seed: number): Uint8Array {
  const out = new Uint8Array(n);
  let s = (seed * 2654435761) >>> 0;
  for (let i = 0; i < n; i++) {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    out[i] = s >>> 24;
  }
  return out;
}

/** Deterministic operand bytes (lcgBytes; edge values at both ends). */
function operand(rows: number, cols: number, signed: boolean, order: Operand['order'], seed: number): Operand {
  const n = rows * cols;
  const bytes = lcgBytes(n, seed);
  const data = signed ? new Int8Array(bytes.buffer) : bytes;
  for (let i = 0; i < Math.min(n, 4); i++) data[i] = signed ? (i % 2 ? 127 : -128) : i % 2 ? 255 : 0;
  return { data, rows, cols, order };
}

const ramp = (n: number, f: (i: number) => number) => Int32Array.from({ length: n }, (_, i) => f(i));

/** Output pipelines cycled through by the sweep: none (raw int32 results) every other problem, then each stage kind. */
function pipeline(i: number, M: number, N: number): OutputStage[] {
  const kinds: OutputStage[][] = [
    [],
    [{ type: 'bias', axis: 'col', values: ramp(N, (j) => j * 977 - 30000) }],
    [],
    [
      { type: 'quantizeDownInt32ToUint8Scale', offset: ramp(M, (j) => j * 13 - 500), multiplier: 3, shift: 7, axis: 'row' },
      { type: 'truncatingCast', to: 'uint8' },
    ],
    [],
    [
      { type: 'quantizeDownInt32ByFixedPoint', multiplier: 1518500250, shift: 11, offsetAfterShift: 7 },
      { type: 'clamp', min: -20000, max: 20000 },
      { type: 'saturatingCast', to: 'int16' },
    ],
    [],
    [
      {
        type: 'scaleInt32ByFixedPointAndExponent',
        multiplier: ramp(N, (j) => 1073741824 + j * 7919),
        exponent: ramp(N, (j) => -6 - (j % 4)),
        offsetAfterShift: -3,
        rounding: 'single',
        axis: 'col',
      },
      { type: 'saturatingCast', to: 'int8' },
    ],
    [],
    [
      { type: 'tanh', realZeroAsInt32: 100, realAmplitudeAsInt32: 50000 },
      { type: 'saturatingCast', to: 'uint8' },
    ],
  ];
  return kinds[i % kinds.length];
}

/** The sweep's shapes (M, N, K): odd edges, several 64-tiles, two or more 64-byte k steps. */
const SWEEP: [number, number, number][] = [
  [1, 1, 1],
  [5, 4, 3],
  [17, 33, 65],
  [64, 64, 128],
  [65, 130, 130],
  [130, 65, 200],
  [33, 129, 257],
  [128, 192, 320],
  [63, 65, 192],
  [3, 200, 130],
];

/** The fixed suite: the self-test problems, then the sweep (and two less-than-8-bit problems). */
export function verifyProblems(): GemmProblem[] {
  const sweep = SWEEP.map(
    ([M, N, K], i): GemmProblem => ({
      lhs: operand(M, K, i % 2 === 1, i % 3 === 0 ? 'col-major' : 'row-major', 2 * i + 1),
      rhs: operand(K, N, (i >> 1) % 2 === 1, i % 4 < 2 ? 'col-major' : 'row-major', 2 * i + 2),
      lhsZeroPoint: i % 3 === 1 ? ramp(M, (j) => (j % 9) - 4) : i === 4 ? -2147483648 : 3 - i,
      rhsZeroPoint: i % 3 === 2 ? ramp(N, (j) => (j % 7) - 3) : 128 + i,
      pipeline: pipeline(i, M, N),
      dstOrder: i % 4 === 3 ? 'col-major' : 'row-major',
    }),
  );
  const lowBit: GemmProblem[] = [
    { ...sweep[4], pipeline: [], bitDepth: { lhs: 8, rhs: 4, rounding: 'nearest' } },
    { ...sweep[6], pipeline: [], bitDepth: { lhs: 5, rhs: 3, rounding: 'probabilistic-xorshift' } },
  ];
  return [...selfTestProblems(), ...sweep, ...lowBit];
}

/**
 * The prepacked suite (the CPU's few-row path, `prepackCpu` + `gemm`): every problem of the fixed suite
 * (`suite`) whose rhs prepackCpu stores (8 bits, or at most 4), then a few lhs rows against prepacked 8-bit and
 * 4-bit weights, for the few-row kernels (byte lanes, widening, 4-bit, dot7 and relaxed 8-bit shapes):
 * 1, 2, 3, 5, 7 and 9 rows, K = 275 (8 blocks of 8 quads, then 5 quads, the last one partial), per-channel zero points,
 * the sweep's non-empty pipelines in turn (per-column bias, per-row offsets, a fixed-point scale, per-column
 * exponents).
 */
export function verifyPrepackedProblems(suite: readonly GemmProblem[] = verifyProblems()): GemmProblem[] {
  const [N, K] = [130, 275];
  const fewRows = [1, 2, 3, 5, 7, 9].flatMap((M, i): GemmProblem[] =>
    [undefined, { lhs: 8, rhs: 4, rounding: 'probabilistic-addmod' } as const].map((bitDepth, b) => ({
      lhs: operand(M, K, (i + b) % 2 === 1, i % 2 ? 'col-major' : 'row-major', 101 + 2 * i + b),
      rhs: operand(K, N, i % 3 === 2, b ? 'row-major' : 'col-major', 201 + 2 * i + b),
      lhsZeroPoint: b ? 7 - i : ramp(M, (j) => j * 5 - 9),
      rhsZeroPoint: ramp(N, (j) => (j % 11) - 5 + (b ? 8 : 128)),
      pipeline: pipeline(1 + 2 * ((2 * i + b) % 4), M, N),
      ...(bitDepth ? { bitDepth } : {}),
    })),
  );
  return [...suite.filter((p) => !p.bitDepth || p.bitDepth.rhs <= 4), ...fewRows];
}

/**
 * A convolution layer of the suite: `gemm` is its GEMM over the im2col rows (what the reference and the
 * CPU compute), `patches` the same lhs as the GPU takes it (the NHWC input, its geometry and zero point).
 */
export interface ConvVerifyProblem {
  gemm: GemmProblem;
  patches: { input: Uint8Array | Int8Array; geometry: PatchGeometry; zeroPoint: number };
}

/** A SAME or VALID layer of `filter` x `filter` on a batch x size x size x channels input. */
function layer(
  batch: number,
  size: number,
  channels: number,
  filter: number,
  stride: number,
  dilation: number,
  same: boolean,
): PatchGeometry {
  const extent = (filter - 1) * dilation + 1;
  const out = same ? Math.ceil(size / stride) : Math.floor((size - extent) / stride) + 1;
  const pad = same ? Math.floor(Math.max(0, (out - 1) * stride + extent - size) / 2) : 0;
  return {
    ...{ batch, height: size, width: size, channels, filterHeight: filter, filterWidth: filter },
    ...{ strideHeight: stride, strideWidth: stride, dilationHeight: dilation, dilationWidth: dilation },
    ...{ padTop: pad, padLeft: pad, outHeight: out, outWidth: out },
  };
}

/**
 * The suite's convolution layers: both ways a patch word is read (four channels of one tap where the
 * channels are a multiple of 4; bytes otherwise), padding, stride and dilation 2, batch 2, uint8 and int8
 * input, per-channel and scalar filter zero points (so the lhs row sums count), several 32- and 64-tiles
 * of rows and columns, and a uint8 output stage as conv2d's.
 */
export function verifyConvProblems(): ConvVerifyProblem[] {
  const layers: [PatchGeometry, number, boolean][] = [
    [layer(1, 11, 8, 3, 1, 1, true), 70, false], // 121 rows, K 72: whole words, 2 column tiles of 64
    [layer(2, 9, 3, 3, 2, 2, true), 33, true], // bytes: 3 channels, stride and dilation 2, batch 2
    [layer(1, 10, 16, 2, 1, 1, false), 17, false], // VALID 2x2 on 16 channels: 81 rows, 16-byte pieces of one tap
  ];
  return layers.map(([g, O], i) => {
    const signed = layers[i][2];
    const n = g.batch * g.height * g.width * g.channels;
    const input = operand(n, 1, signed, 'row-major', 301 + i).data as Uint8Array | Int8Array;
    const zeroPoint = signed ? -11 + 9 * i : 5 + 60 * i;
    const K = g.filterHeight * g.filterWidth * g.channels;
    const M = g.batch * g.outHeight * g.outWidth;
    const gemm: GemmProblem = {
      lhs: { data: im2col(input, g, zeroPoint), rows: M, cols: K },
      rhs: operand(K, O, false, 'col-major', 311 + i),
      lhsZeroPoint: zeroPoint,
      rhsZeroPoint: i === 1 ? 131 : ramp(O, (j) => 100 + (j % 37)),
      pipeline: i === 2 ? [] : pipeline(7, M, O),
    };
    return { gemm, patches: { input, geometry: g, zeroPoint } };
  });
}
