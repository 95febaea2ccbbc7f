// GPU tier: src/wgsl/float32.wgsl (XNNPACK's fp32 requantization in integers only) and the 'double-up'
// multiplier of src/wgsl/fixedpoint.wgsl, run on a real WebGPU device (SwiftShader on machines without a
// GPU) and compared bit for bit with the BigInt/rational oracle of test/oracle/bigint-float32.ts, on the
// edge cases of test/support/float32-cases.ts (|acc| > 2^24, ties at each rounding, subnormal and huge
// scales) and seeded random ones. A mismatch reports how many differ and a few examples.

import { afterAll, describe, expect, test } from 'vitest';
import fixedpointWgsl from '../../src/wgsl/fixedpoint.wgsl?raw';
import float32Wgsl from '../../src/wgsl/float32.wgsl?raw';
import harnessWgsl from './float32-harness.wgsl?raw';
import { mbqmDoubleUpBig, requantizeFloat32Big } from '../oracle/bigint-float32.ts';
import { float32Cases, multiplierCases } from '../support/float32-cases.ts';
import { getGpu, grid1D, releaseGpu, runCompute } from './gpu-env.ts';

const gpu = await getGpu();
afterAll(releaseGpu);

const CODE = [fixedpointWgsl, float32Wgsl, harnessWgsl].join('\n');

async function gpuEval(op: number, a: number[], b: number[], c: number[]): Promise<Int32Array> {
  const [out] = await runCompute(gpu!.device, {
    code: CODE,
    constants: { OP: op },
    inputs: [Int32Array.from(a), Int32Array.from(b), Int32Array.from(c)],
    outputs: [a.length],
    workgroups: grid1D(a.length),
    label: `float32 OP ${op}`,
  });
  return out;
}

function expectSame(name: string, got: Int32Array, want: (i: number) => number, args: (i: number) => string) {
  let count = 0;
  const examples: string[] = [];
  for (let i = 0; i < got.length; i++) {
    const w = want(i);
    if (got[i] !== w) {
      count++;
      if (examples.length < 8) examples.push(`${name}(${args(i)}): gpu ${got[i]}, oracle ${w}`);
    }
  }
  if (count) expect.fail(`${name}: ${count} of ${got.length} differ\n${examples.join('\n')}`);
}

describe.skipIf(!gpu)('float32.wgsl and the double-up multiplier on the GPU, bit for bit with the oracle', () => {
  test('requantizeFloat32 in integers equals IEEE float32 arithmetic', async () => {
    const c = float32Cases(20000, 5);
    const got = await gpuEval(0, c.x, c.scaleBits, c.zeroPoint);
    expectSame(
      'requantizeFloat32',
      got,
      (i) => requantizeFloat32Big(c.x[i], c.scaleBits[i], c.zeroPoint[i]),
      (i) => `${c.x[i]}, 0x${(c.scaleBits[i] >>> 0).toString(16)}, ${c.zeroPoint[i]}`,
    );
  });

  test('multiplyByQuantizedMultiplierDoubleUp equals ruy', async () => {
    const c = multiplierCases(20000, 3);
    const got = await gpuEval(1, c.x, c.m, c.shift);
    expectSame(
      'double-up',
      got,
      (i) => mbqmDoubleUpBig(c.x[i], c.m[i], c.shift[i]),
      (i) => `${c.x[i]}, ${c.m[i]}, ${c.shift[i]}`,
    );
  });
});
