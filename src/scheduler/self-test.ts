// The built-in exactness self-test of kernels that CI cannot run (pack -> gemm -> output on hardware that
// SwiftShader lacks, such as the subgroup-matrix tensor cores): a fixed set of problems with edge values,
// odd shapes, every zero-point form, int32 wrap and output stages, run through the kernel and compared
// bit for bit with the normative reference (src/reference/gemm.ts). The context runs it once per device
// before the kernel's first use; a kernel that fails is disabled there, never trusted. A kernel that reads
// a rhs of at most 4 bits (two values per byte: sgmat's '-u4') runs the same problems with the rhs
// requantized to 1 to 4 bits, under each rounding. Two convolution layers follow, their lhs given as the
// NHWC input, so a kernel that gathers the patches into its staging (a pipeline of its own) is tested in
// that form too.

import { DeviceLostError, GpuOutOfMemoryError, LimitExceededError } from '../errors.ts';
import { im2col, type PatchGeometry, patchShape } from '../pack/patches.ts';
import { differences, referenceGemm } from '../reference/gemm.ts';
import { type BitDepthRounding, type GemmProblem, type GemmResult, type Operand, type Order, TYPE_RANGE } from '../types.ts';
import type { PatchOperand } from './patches.ts';

/** Deterministic bytes: 0, 255 (or -128, 127) edges at the ends, a mixed sequence between. */
function operand(rows: number, cols: number, signed: boolean, order: Order, seed: number): Operand {
  const n = rows * cols;
  const data = signed ? new Int8Array(n) : new Uint8Array(n);
  let s = seed >>> 0;
  for (let i = 0; i < n; i++) {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    data[i] = signed ? (s >>> 24) - 128 : s >>> 24;
  }
  const [lo, hi] = TYPE_RANGE[signed ? 'int8' : 'uint8'];
  for (let i = 0; i < Math.min(n, 8); i++) data[i] = i % 2 ? hi : lo;
  for (let i = Math.max(0, n - 8); i < n; i++) data[i] = i % 2 ? lo : hi;
  return { data, rows, cols, order };
}

const vector = (n: number, f: (i: number) => number) => Int32Array.from({ length: n }, (_, i) => f(i));

/**
 * The self-test problems: odd shapes around the 64-row tiles, every type and order, every zero-point form,
 * wrap, stages, and a depth that split-K kernels cut into uneven slices over two tiles; for a kernel
 * reading rhs values of `rhsBits` <= 4, the same with rhs bit depths 1 to 4.
 */
export function selfTestProblems(rhsBits = 8): GemmProblem[] {
  const problems = eightBitProblems();
  if (rhsBits > 4) return problems;
  // The 40000-deep problem keeps 4 bits (the largest values): its zero-point terms still wrap int32.
  const bits = [3, 2, 4, 1, 2];
  const rounding: BitDepthRounding[] = ['nearest', 'probabilistic-addmod', 'nearest', 'probabilistic-xorshift', 'nearest'];
  if (bits.length !== problems.length) throw new Error('selfTestProblems: a rhs bit depth for every problem');
  return problems.map((p, i) => ({ ...p, bitDepth: { lhs: 8, rhs: Math.min(rhsBits, bits[i]), rounding: rounding[i] } }));
}

function eightBitProblems(): GemmProblem[] {
  const filled = (rows: number, cols: number, v: number): Operand => ({
    data: new Uint8Array(rows * cols).fill(v),
    rows,
    cols,
    order: 'row-major',
  });
  return [
    {
      // int8 x uint8, per-row lhs zero points, per-column requantization to int8.
      lhs: operand(67, 97, true, 'row-major', 1),
      rhs: operand(97, 45, false, 'col-major', 2),
      lhsZeroPoint: vector(67, (i) => (i % 7) - 3),
      rhsZeroPoint: 131,
      pipeline: [
        {
          type: 'scaleInt32ByFixedPointAndExponent',
          multiplier: vector(45, (i) => 1073741824 + i * 9973),
          exponent: vector(45, (i) => -8 - (i % 3)),
          offsetAfterShift: 3,
          rounding: 'double',
          axis: 'col',
        },
        { type: 'saturatingCast', to: 'int8' },
      ],
    },
    {
      // uint8 x int8, per-column rhs zero points, bias + fixed-point requantization + clamp, col-major dst.
      lhs: operand(130, 129, false, 'col-major', 3),
      rhs: operand(129, 131, true, 'row-major', 4),
      lhsZeroPoint: 119,
      rhsZeroPoint: vector(131, (i) => (i % 5) - 2),
      pipeline: [
        { type: 'bias', axis: 'row', values: vector(130, (i) => i * 37 - 2000) },
        { type: 'quantizeDownInt32ByFixedPoint', multiplier: 1518500250, shift: 9, offsetAfterShift: 128 },
        { type: 'clamp', min: 10, max: 245 },
        { type: 'saturatingCast', to: 'uint8' },
      ],
      dstOrder: 'col-major',
    },
    // int32 wrap: 40000 products of 255 * 255 pass 2^32; extreme zero points.
    { lhs: filled(64, 40000, 255), rhs: { ...filled(40000, 64, 255), order: 'col-major' }, lhsZeroPoint: -2147483648, rhsZeroPoint: 7 },
    // Small and skinny, int8 x int8, int16 output through tanh.
    {
      lhs: operand(5, 33, true, 'row-major', 5),
      rhs: operand(33, 70, true, 'col-major', 6),
      lhsZeroPoint: -128,
      rhsZeroPoint: 127,
      pipeline: [
        { type: 'tanh', realZeroAsInt32: 0, realAmplitudeAsInt32: 2000 },
        { type: 'saturatingCast', to: 'int16' },
      ],
    },
    // Two 64 x 64 tiles, 9 k steps of 64 bytes: 2 uneven slices for a split-K kernel on any adapter
    // (src/kernels/splitk/partition.ts), int8 lhs with a per-row zero point, raw int32 sums.
    {
      lhs: operand(64, 520, true, 'col-major', 7),
      rhs: operand(520, 70, false, 'row-major', 8),
      lhsZeroPoint: vector(64, (i) => (i % 11) - 5),
      rhsZeroPoint: 201,
    },
  ];
}

/** A GEMM whose lhs is a convolution's patches, given by the layer's input. */
export type PatchProblem = Omit<GemmProblem, 'lhs'> & { lhs: PatchOperand & { input: Uint8Array | Int8Array } };

/** A 3 x 3 SAME layer of `channels` on batch x size x size, at `stride`. */
function sameLayer(batch: number, size: number, channels: number, stride: number): PatchGeometry {
  const out = Math.ceil(size / stride);
  const pad = Math.floor(Math.max(0, (out - 1) * stride + 3 - size) / 2);
  return {
    ...{ batch, height: size, width: size, channels, filterHeight: 3, filterWidth: 3 },
    ...{ strideHeight: stride, strideWidth: stride, dilationHeight: 1, dilationWidth: 1 },
    ...{ padTop: pad, padLeft: pad, outHeight: out, outWidth: out },
  };
}

/**
 * The self-test's convolution layers: 16 int8 channels (whole 16-byte pieces of one tap) with per-channel
 * filter zero points and a uint8 output stage, as conv2d runs it, over two 64-column tiles; 3 uint8
 * channels at stride 2, batch 2 (bytes), raw sums; 160 int8 channels on a 4 x 4 image, 16 rows deep
 * enough that a split-K kernel's plan cuts them into slices, each gathering and summing its own k range.
 * For a kernel reading rhs values of `rhsBits` <= 4,
 * the filter requantized to 4 bits.
 */
export function selfTestConvProblems(rhsBits = 8): PatchProblem[] {
  const layers: [PatchGeometry, number, boolean, number][] = [
    [sameLayer(1, 9, 16, 1), 70, true, -5],
    [sameLayer(2, 7, 3, 2), 9, false, 200],
    [sameLayer(1, 4, 160, 1), 24, true, 77], // deep and one tile: split-K cuts its 1440 k into slices
  ];
  return layers.map(([g, O, signed, zeroPoint], i) => {
    const K = patchShape(g).cols;
    const input = operand(g.batch * g.height * g.width * g.channels, 1, signed, 'row-major', 21 + i).data as Uint8Array | Int8Array;
    const p: PatchProblem = {
      lhs: { input, geometry: g, zeroPoint },
      rhs: operand(K, O, false, 'col-major', 23 + i),
      lhsZeroPoint: zeroPoint,
      rhsZeroPoint: i === 1 ? 131 : vector(O, (j) => 100 + (j % 37)),
      pipeline:
        i === 0
          ? [
              { type: 'quantizeDownInt32ByFixedPoint', multiplier: 1518500250, shift: 12, offsetAfterShift: 7 },
              { type: 'saturatingCast', to: 'uint8' },
            ]
          : [],
    };
    return rhsBits > 4 ? p : { ...p, bitDepth: { lhs: 8, rhs: Math.min(rhsBits, 4), rounding: 'nearest' } };
  });
}

/** The GEMM a patch problem computes, over the host's im2col rows: what the reference is given. */
export function patchReference(p: PatchProblem): GemmProblem {
  const { rows, cols } = patchShape(p.lhs.geometry);
  return { ...p, lhs: { data: im2col(p.lhs.input, p.lhs.geometry, p.lhs.zeroPoint), rows, cols } };
}

interface SelfTestResult {
  ok: boolean;
  /**
   * Not run to the end for a reason of the caller's, not the kernel's: a problem above the context's own
   * limits (LimitExceededError) or GPU memory running out. No verdict on the kernel.
   */
  untested?: boolean;
  /** What failed, in one line (empty when ok). */
  detail: string;
}

/** One self-test problem, the GEMM its reference computes, and that reference's result once computed. */
interface SelfTestCase {
  problem: GemmProblem | PatchProblem;
  reference: GemmProblem;
  want: GemmResult | null;
}

/**
 * The self-test's problems per rhs bit depth, each reference result computed at its first use and kept for
 * the process: every kernel's self-test on every device checks the same problems, and the reference of the
 * 40000-deep one alone takes about a second. At most one list per bit depth.
 */
const CASES = new Map<number, SelfTestCase[]>();

function selfTestCases(rhsBits: number): SelfTestCase[] {
  let cases = CASES.get(rhsBits);
  if (!cases) {
    cases = [
      ...selfTestProblems(rhsBits).map((p) => ({ problem: p, reference: p, want: null })),
      ...selfTestConvProblems(rhsBits).map((p) => ({ problem: p, reference: patchReference(p), want: null })),
    ];
    CASES.set(rhsBits, cases);
  }
  return cases;
}

/**
 * Runs every self-test problem (those for a kernel reading `rhsBits`-bit rhs values), then the convolution
 * layers, through `run` and compares bit for bit with the reference.
 */
export async function runSelfTest(run: (p: GemmProblem | PatchProblem) => Promise<GemmResult>, rhsBits = 8): Promise<SelfTestResult> {
  const cases = selfTestCases(rhsBits);
  for (let i = 0; i < cases.length; i++) {
    const c = cases[i];
    const { problem: p, reference } = c;
    const shape = `${reference.lhs.rows}x${reference.rhs.cols}x${reference.lhs.cols}${p === reference ? '' : ', convolution'}`;
    let got: GemmResult;
    try {
      got = await run(p);
    } catch (e) {
      if (e instanceof DeviceLostError) throw e; // the call reports it, not the kernel
      const untested = e instanceof LimitExceededError || e instanceof GpuOutOfMemoryError;
      return { ok: false, ...(untested ? { untested } : {}), detail: `problem ${i} (${shape}) threw ${(e as Error).message}` };
    }
    c.want ??= referenceGemm(reference);
    const differs = differences(got, c.want);
    if (differs) return { ok: false, detail: `problem ${i} (${shape}): ${differs}` };
  }
  return { ok: true, detail: '' };
}
