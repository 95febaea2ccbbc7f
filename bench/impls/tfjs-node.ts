// tfjs-backend-webgpu's f32 matMul in Node, on the same adapter as this project's Node rows: what people
// use today for matmul on WebGPU. Node has no navigator.gpu, so the backend is registered here by hand
// with a device from the same Dawn adapter (acquireDevice), and a navigator.gpu shim satisfies the
// backend's "is WebGPU supported" check. The operands are (q - zeroPoint) as f32. Wall time covers
// tensor creation (upload), matMul and data() (readback); the GPU time is tf.time()'s kernelMs, from the
// backend's timestamp queries where the device offers them.

import * as tf from '@tensorflow/tfjs-core';
import { WebGPUBackend } from '@tensorflow/tfjs-backend-webgpu';
import { acquireDevice } from '../../src/gpu/acquire.ts';
import type { ShapeData } from '../problems.ts';
import { measure } from '../timing.ts';
import type { Runner } from './types.ts';

let registered = false;

export async function tfjsWebgpuNode(opts: { allowSoftware: boolean; dawnPath?: string; adapter: string }): Promise<Runner> {
  const acquired = await acquireDevice({ allowSoftware: opts.allowSoftware, ...(opts.dawnPath ? { dawnPath: opts.dawnPath } : {}) });
  const g = globalThis as { navigator?: { gpu?: unknown } };
  if (!g.navigator) Object.defineProperty(globalThis, 'navigator', { value: {}, configurable: true, writable: true });
  if (!g.navigator!.gpu) Object.defineProperty(g.navigator!, 'gpu', { value: { shim: 'qgemm-bench' }, configurable: true });
  if (registered) tf.removeBackend('webgpu');
  const info = acquired.adapter?.info;
  tf.registerBackend('webgpu', () => new WebGPUBackend(acquired.device, info as GPUAdapterInfo), 3);
  registered = true;
  if (!(await tf.setBackend('webgpu'))) throw new Error('tfjs: setBackend("webgpu") failed');
  await tf.ready();
  const timestamps = acquired.device.features.has('timestamp-query');
  return {
    impl: 'tfjs-webgpu-f32',
    backend: 'webgpu',
    runtime: 'node',
    adapter: opts.adapter,
    computes: 'f32 matMul of (q - zeroPoint)',
    details: `@tensorflow/tfjs-backend-webgpu ${tf.version_core}, Dawn device on the same adapter, kernel time from timestamp queries: ${timestamps ? 'yes' : 'no'}`,
    run: async (data: ShapeData, policy) => {
      const { m, n, k } = data.shape;
      const floats = data.floats();
      const r = await measure(policy, async () => {
        const t0 = performance.now();
        const a = tf.tensor2d(floats.lhs, [m, k]);
        const b = tf.tensor2d(floats.rhs, [k, n]);
        let c: tf.Tensor | undefined;
        const timing = await tf.time(() => {
          c = tf.matMul(a, b);
        });
        const output = await c!.data();
        const wallMs = performance.now() - t0;
        tf.dispose([a, b, c!]);
        const kernelMs = typeof timing.kernelMs === 'number' && timestamps ? timing.kernelMs : null;
        return { timing: { wallMs, gpuMs: kernelMs }, output };
      });
      return { wall: r.wall, gpu: r.gpu };
    },
    close: async () => {
      tf.removeBackend('webgpu');
      registered = false;
      acquired.device.destroy();
    },
  };
}
