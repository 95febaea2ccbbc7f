// GPU tier for the TFLite layers (src/layers/): fullyConnected and conv2d on WebGPU (SwiftShader on
// machines without a GPU) against the oracle of test/support/layer-oracle.ts, for every kernel path
// (XNNPACK's float32 requantization in integers in WGSL, the optimized kernels' 'double-up', the
// reference paths), int8 per-tensor and per-channel, legacy uint8, SAME and VALID, strides 1 and 2.

import { afterAll, describe, test } from 'vitest';
import { CASES, PATHS, checkConv, checkFc } from '../support/layer-oracle.ts';
import { getGpu, releaseGpu } from './gpu-env.ts';

const gpu = await getGpu();
afterAll(releaseGpu);

describe.skipIf(!gpu)('TFLite layers on WebGPU == the oracle of each kernel path', () => {
  for (const c of CASES)
    for (const path of PATHS) {
      test(`fullyConnected ${c.name} ${path}`, async () => {
        for (let seed = 1; seed <= 2; seed++) await checkFc(c, path, 'webgpu', seed * 17 + c.name.length);
      });
      test(`conv2d ${c.name} ${path}`, async () => {
        let seed = 300;
        for (const padding of ['SAME', 'VALID'] as const)
          for (const stride of [1, 2]) await checkConv(c, path, 'webgpu', seed++, padding, stride, stride);
      });
    }
});
