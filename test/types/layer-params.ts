// Type-level checks of the layer API (src/layers/layers.ts), compiled by `tsc --noEmit` (tsconfig.json
// includes test/) and never run: parameters written the way a caller writes them type-check. A weights
// object declared before the call has `shape: number[]`, not a tuple; a shape `as const` is a readonly
// tuple; TFLite's zero points are an array (the file's int64 as bigints). Lines marked @ts-expect-error
// must stay errors.

import { conv2d, fullyConnected, runLayers, type Conv2dParams, type FullyConnectedParams, type TensorInput } from '../../src/index.ts';

export async function declaredBeforeTheCall(): Promise<void> {
  const q = { scale: 0.5, zeroPoint: 0 };
  const weights = { data: new Int8Array(24), shape: [3, 8], scale: 0.25 };
  await fullyConnected({ data: new Int8Array(8), shape: [1, 8] }, { input: q, weights, output: q });

  const filter = { data: new Int8Array(16), shape: [2, 1, 1, 8] as const, scale: new Float32Array(2), zeroPoint: [0, 0] };
  const input: TensorInput = { data: new Int8Array(32), shape: [1, 2, 2, 8] as const };
  const stride = [1, 1];
  await conv2d(input, { input: q, filter, stride, dilation: [1, 1] as const, padding: 'SAME', output: q });

  const params: FullyConnectedParams = {
    input: q,
    weights: { data: new Int8Array(24), shape: [3, 8], scale: 0.25, zeroPoint: BigInt64Array.of(0n, 0n, 0n) },
    output: q,
    keepNumDims: true,
  };
  const out = await fullyConnected({ data: new Int8Array(8), shape: [1, 1, 8] }, params);
  const dims: number[] = out.shape;
  await runLayers(
    [{ op: 'fullyConnected', params: { weights, output: q } }],
    { data: new Int8Array(8), shape: dims },
    { inputs: { input: q } },
  );

  const conv: Conv2dParams['filter'] = { data: new Int8Array(1), shape: [1, 1, 1, 1], scale: 1, zeroPoint: Int32Array.of(0) };
  // @ts-expect-error a shape is an array of sizes, not a string
  const bad: Conv2dParams['filter'] = { data: new Int8Array(1), shape: '1x1x1x1', scale: 1 };
  // @ts-expect-error zero points are integers, not strings
  const badZero: FullyConnectedParams['weights'] = { data: new Int8Array(1), shape: [1, 1], scale: 1, zeroPoint: ['0'] };
  void [conv, bad, badZero];
}
