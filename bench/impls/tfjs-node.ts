// tfjs-backend-webgpu's f32 matMul in Node, on the same adapter as this project's Node rows: what people
// use today for matmul on WebGPU. Node has no navigator.gpu, so the backend is registered here by hand
// with a device from the same Dawn adapter (acquireDevice), and a navigator.gpu shim satisfies the
// backend's "is WebGPU supported" check. The operands are (q - zeroPoint) as f32. Modes (one runner each,
// sharing the backend): call = both tensors created (uploaded) on every call, matMul, data() (readback);
// resident = the weights (rhs) a kept tf.Tensor, made outside the timing; device = lhs kept too and no
// readback: matMul, then the backend's queue is flushed and awaited. The GPU time is tf.time()'s
// kernelMs, from the backend's timestamp queries where the device offers them.
// A convolution layer (ShapeData.conv) runs as tf.conv2d in f32: input NHWC [1, H, W, C] and filter HWIO
// (tfjs's layout), (q - zeroPoint) as floats, the same stride and SAME/VALID padding; the modes as above
// with the filter as the weights (resident: a kept tensor) and the input as the lhs.

import * as tf from '@tensorflow/tfjs-core';
import { WebGPUBackend } from '@tensorflow/tfjs-backend-webgpu';
import { acquireDevice } from '../../src/gpu/acquire.ts';
import type { ShapeData } from '../problems.ts';
import { afterPause, measure, type RepeatPolicy, stats } from '../timing.ts';
import type { CellOutcome, Mode, Runner } from './types.ts';

let registered = false;

/** Where a row's two times come from (the Chrome page says the same, bench/chrome-page.ts). */
const tfjsNote = (reps: number) => `kernel time from ${reps} separate tf.time calls; the wall time from plain calls`;

/** The backend internals used to wait for the GPU without a readback (device mode). */
interface BackendQueue {
  commandEncoder?: GPUCommandEncoder | null;
  submitQueue?(): void;
  device: GPUDevice;
}

/**
 * One cell: `op` on the operands, kept tensors where the mode keeps them (the rhs but in `call`, the lhs
 * in `device`), else made per call; the wall time from plain calls back to back, the kernel time from
 * policy.minReps separate tf.time calls (tf.time adds a query resolve and its readback to a call), as
 * qgemm's rows; with `paused`, in `resident`, single calls after a pause.
 */
async function timedCell(
  mode: Mode,
  policy: RepeatPolicy,
  timestamps: boolean,
  make: { lhs: () => tf.Tensor; rhs: () => tf.Tensor },
  op: (lhs: tf.Tensor, rhs: tf.Tensor) => tf.Tensor,
  paused: boolean,
): Promise<CellOutcome> {
  const keptRhs = mode === 'call' ? null : make.rhs();
  const keptLhs = mode === 'device' ? make.lhs() : null;
  const once = async (timed: boolean) => {
    const t0 = performance.now();
    const a = keptLhs ?? make.lhs();
    const b = keptRhs ?? make.rhs();
    let y: tf.Tensor | undefined;
    const timing = timed
      ? await tf.time(() => {
          y = op(a, b);
        })
      : ((y = op(a, b)), null);
    await finish(y!, mode);
    const wallMs = performance.now() - t0;
    tf.dispose([y!, ...(keptLhs ? [] : [a]), ...(keptRhs ? [] : [b])]);
    return { wallMs, gpuMs: typeof timing?.kernelMs === 'number' && timestamps ? timing.kernelMs : null };
  };
  try {
    const r = await measure(policy, async () => ({ timing: await once(false), output: null }));
    const gpus: number[] = [];
    for (let i = 0; timestamps && i < policy.minReps; i++) {
      const ms = (await once(true)).gpuMs;
      if (ms !== null) gpus.push(ms);
    }
    const pause =
      paused && mode === 'resident' && policy.afterPauseRows !== false
        ? await afterPause(policy, async () => (await once(false)).wallMs)
        : undefined;
    return {
      wall: r.wall,
      warm: r.warm,
      gpu: gpus.length && gpus.length === policy.minReps ? stats(gpus) : null,
      ...(pause ? { afterPause: pause } : {}),
      gpuNote: timestamps ? tfjsNote(policy.minReps) : 'the device has no timestamp-query',
    };
  } finally {
    tf.dispose([...(keptLhs ? [keptLhs] : []), ...(keptRhs ? [keptRhs] : [])]);
  }
}

/** One cell of tf.conv2d (f32) on a convolution layer, in `mode` (the filter is the weights, the input the lhs). */
function convCell(data: ShapeData, mode: Mode, policy: RepeatPolicy, timestamps: boolean): Promise<CellOutcome> {
  const c = data.shape.conv!;
  const floats = data.conv!.floats();
  const filterShape: [number, number, number, number] = [c.filterHeight, c.filterWidth, c.channels, c.outChannels];
  const inputShape: [number, number, number, number] = [1, c.height, c.width, c.channels];
  const pad = c.padding === 'SAME' ? 'same' : 'valid';
  const make = { lhs: () => tf.tensor4d(floats.input, inputShape), rhs: () => tf.tensor4d(floats.filter, filterShape) };
  return timedCell(mode, policy, timestamps, make, (x, w) => tf.conv2d(x as tf.Tensor4D, w as tf.Tensor4D, c.stride, pad), false);
}

/** The end of a call: device mode waits for the GPU (the backend's queue flushed and awaited), the others read the result back. */
async function finish(result: tf.Tensor, mode: Mode): Promise<void> {
  if (mode === 'device') {
    const backend = tf.backend() as unknown as BackendQueue;
    if (backend.commandEncoder) backend.submitQueue?.(); // tf.time() has usually flushed it already
    await backend.device.queue.onSubmittedWorkDone();
  } else {
    await result.data();
  }
}

/** Registers tfjs-backend-webgpu on a Dawn device of the adapter; one runner per mode shares it. */
export async function tfjsWebgpuNode(opts: {
  allowSoftware: boolean;
  dawnPath?: string;
  adapter: string;
  modes: readonly Mode[];
}): Promise<Runner[]> {
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
  let open = opts.modes.length;
  return opts.modes.map(
    (mode): Runner => ({
      impl: 'tfjs-webgpu-f32',
      backend: 'webgpu',
      runtime: 'node',
      mode,
      adapter: opts.adapter,
      computes: 'f32 matMul of (q - zeroPoint)',
      details: `@tensorflow/tfjs-backend-webgpu ${tf.version_core}, Dawn device on the same adapter, ${mode === 'call' ? 'both tensors made per call' : mode === 'resident' ? 'rhs a kept tf.Tensor' : 'both operands kept tensors, no readback'}, kernel time from timestamp queries: ${timestamps ? 'yes' : 'no'}; convolution layers: tf.conv2d f32, NHWC input, HWIO filter (${mode === 'call' ? 'both made per call' : mode === 'resident' ? 'the filter a kept tensor' : 'both kept, no readback'})`,
      convolution: true,
      run: async (data: ShapeData, policy) => {
        if (data.conv) return convCell(data, mode, policy, timestamps);
        const { m, n, k } = data.shape;
        const floats = data.floats();
        const make = { lhs: () => tf.tensor2d(floats.lhs, [m, k]), rhs: () => tf.tensor2d(floats.rhs, [k, n]) };
        return timedCell(mode, policy, timestamps, make, (a, b) => tf.matMul(a, b), true);
      },
      close: async () => {
        if (--open > 0) return;
        tf.removeBackend('webgpu');
        registered = false;
        acquired.device.destroy();
      },
    }),
  );
}
