// The normative CPU evaluation of the elementwise ops (TFLite add/sub/mul, on the builtin or the XNNPACK
// kernel path, and alignedAdd/alignedSub): the per-element formulas specified in src/problem/elementwise.ts, applied naively to every output element of
// a prepared plan. It is also the CPU backend of the elementwise ops (there is no faster CPU path), and
// the reference that the WebGPU kernel (src/elementwise/gpu.ts) is checked against bit for bit.

import { requantizeFloat32 } from '../quant/float32.ts';
import { multiplyByQuantizedMultiplier } from '../quant/fixedpoint.ts';
import type { QuantizedMultiplier } from '../quant/quantize.ts';
import type { ElementwisePlan, ElementwiseProblem, ElementwiseResult } from '../problem/elementwise.ts';
import { prepareElementwise } from '../problem/elementwise-plan.ts';

/** The value of one output element from its two inputs and their channels (the per-element formulas above). */
function evalElement(p: ElementwisePlan, qa: number, qb: number, channelA: number, channelB: number): number {
  const mbqm = (x: number, m: QuantizedMultiplier) => multiplyByQuantizedMultiplier(x, m.multiplier, m.shift, 'double');
  let raw: number;
  const x = p.xnnpack;
  if (x) {
    // XNNPACK: add/sub in integers, floor shift (|sum| < 2^31, exact); mul through float32, ties to even.
    const out =
      p.op === 'mul'
        ? requantizeFloat32((qa - p.zeroA) * (qb - p.zeroB), x.scale, p.zeroOut)
        : Math.floor((2 ** (x.shift - 1) + x.aMultiplier * (qa - p.zeroA) + x.bMultiplier * (qb - p.zeroB)) / 2 ** x.shift) + p.zeroOut;
    return out < p.min ? p.min : Math.min(out, p.max);
  }
  switch (p.op) {
    case 'add':
    case 'sub': {
      const x = (qa - p.zeroA) * (1 << p.leftShift);
      const y = (qb - p.zeroB) * (1 << p.leftShift);
      raw = mbqm((mbqm(x, p.input1) + p.sign * mbqm(y, p.input2)) | 0, p.output);
      break;
    }
    case 'mul':
      raw = mbqm(Math.imul(qa - p.zeroA, qb - p.zeroB), p.output);
      break;
    default: {
      const ta = Math.imul(qa - p.zeroA, p.alignA!.mantissa[channelA]) << p.alignA!.shift[channelA];
      const tb = Math.imul(qb - p.zeroB, p.alignB!.mantissa[channelB]) << p.alignB!.shift[channelB];
      raw = mbqm((ta + p.sign * tb) | 0, p.output);
    }
  }
  const out = (raw + p.zeroOut) | 0;
  return out < p.min ? p.min : Math.min(out, p.max);
}

/** Runs a prepared plan on the CPU: the normative reference for every backend. */
export function runElementwisePlan(p: ElementwisePlan): ElementwiseResult {
  const out = p.dtype === 'uint8' ? new Uint8Array(p.count) : new Int8Array(p.count);
  if (p.count === 0) return { data: out, shape: [...p.shape], dtype: p.dtype }; // a [2^40, 0] output is no loop of 2^40
  const [d0, d1, d2, d3] = p.dims4;
  const [a0, a1, a2, a3] = p.aStrides4;
  const [b0, b1, b2, b3] = p.bStrides4;
  let o = 0;
  const idx = [0, 0, 0, 0];
  for (idx[0] = 0; idx[0] < d0; idx[0]++) {
    for (idx[1] = 0; idx[1] < d1; idx[1]++) {
      for (idx[2] = 0; idx[2] < d2; idx[2]++) {
        for (idx[3] = 0; idx[3] < d3; idx[3]++) {
          const ia = idx[0] * a0 + idx[1] * a1 + idx[2] * a2 + idx[3] * a3;
          const ib = idx[0] * b0 + idx[1] * b1 + idx[2] * b2 + idx[3] * b3;
          const ca = p.aChannelDim4 < 0 ? 0 : idx[p.aChannelDim4];
          const cb = p.bChannelDim4 < 0 ? 0 : idx[p.bChannelDim4];
          out[o++] = evalElement(p, p.a[ia], p.b[ib], ca, cb);
        }
      }
    }
  }
  return { data: out, shape: [...p.shape], dtype: p.dtype };
}

/** One elementwise op on the CPU (validation included): the reference the WebGPU kernel is checked against. */
export function elementwiseReference(problem: ElementwiseProblem): ElementwiseResult {
  return runElementwisePlan(prepareElementwise(problem));
}
