// Error scopes and per-device serialization (GPU plumbing under the scheduler of pack -> gemm -> output):
// every GPU call of this library runs inside validation and out-of-memory error scopes, one call per
// device at a time, so that a GPU error is never silent and scopes never interleave. (The tuner's heater,
// ./heater.ts, submits without taking the device: its scopes open and close in one synchronous run.)

import { GpuOutOfMemoryError, GpuValidationError } from '../errors.ts';

const deviceQueues = new WeakMap<GPUDevice, Promise<unknown>>();

/**
 * Runs fn with the device to itself: GPU work of this library on one device (every GpuContext on it,
 * elementwise kernels too) runs one call at a time, because error scopes belong to the device, and two
 * interleaved calls could pop each other's scopes. fn must not call withDevice on the same device.
 */
export function withDevice<T>(device: GPUDevice, fn: () => Promise<T>): Promise<T> {
  const run = (deviceQueues.get(device) ?? Promise.resolve()).then(fn, fn);
  deviceQueues.set(
    device,
    run.catch(() => undefined),
  );
  return run;
}

/**
 * Runs fn (GPU calls, typically encode + submit) inside 'validation' and 'out-of-memory' error scopes
 * and throws GpuValidationError / GpuOutOfMemoryError when one fires, so that a GPU error never
 * passes silently. The scopes are popped even when fn throws.
 */
export async function runInErrorScope<T>(device: GPUDevice, fn: () => T | Promise<T>, what = 'GPU work'): Promise<T> {
  device.pushErrorScope('validation');
  device.pushErrorScope('out-of-memory');
  let outcome: { ok: true; value: T } | { ok: false; error: unknown };
  try {
    outcome = { ok: true, value: await fn() };
  } catch (error) {
    outcome = { ok: false, error };
  }
  // Both scopes are popped in any case, together (one turn of Dawn's event processing, not two); a GPU
  // error they caught explains a failure of fn best.
  const [oom, validation] = await Promise.all([device.popErrorScope(), device.popErrorScope()]);
  if (oom) throw new GpuOutOfMemoryError(`${what}: out of GPU memory: ${oom.message}`);
  if (validation) throw new GpuValidationError(`${what}: WebGPU validation error: ${validation.message}`);
  if (!outcome.ok) throw outcome.error;
  return outcome.value;
}

/**
 * The validation and out-of-memory scopes of runInErrorScope, opened now and closed by the returned
 * function, whose two pops are awaited together (one turn of Dawn's event processing, not two): a call
 * that submits can close them while its map is pending, so that they add no wait of their own.
 * The close throws GpuOutOfMemoryError / GpuValidationError when a scope caught an error.
 */
export function openErrorScope(device: GPUDevice, what: string): () => Promise<void> {
  device.pushErrorScope('validation');
  device.pushErrorScope('out-of-memory');
  return async () => {
    const [oom, validation] = await Promise.all([device.popErrorScope(), device.popErrorScope()]);
    if (oom) throw new GpuOutOfMemoryError(`${what}: out of GPU memory: ${oom.message}`);
    if (validation) throw new GpuValidationError(`${what}: WebGPU validation error: ${validation.message}`);
  };
}

/** How long an aborted map waits for device.lost before it is taken for what it says (lossSettled). */
const LOSS_WAIT_MS = 1000;

/**
 * Resolves once a failure `e` on `device` can be told apart from a loss: Chrome rejects a pending mapAsync
 * (an AbortError, "unmapped before mapping was resolved") as the device is destroyed, before device.lost
 * resolves; such an error waits for device.lost, LOSS_WAIT_MS at most. Any other resolves at once. A
 * caller's own device.lost handler (DeviceResources' lostReason), registered earlier, has run by then.
 */
export async function lossSettled(device: GPUDevice, e: unknown): Promise<void> {
  if ((e as { name?: unknown } | null)?.name !== 'AbortError') return;
  let timer: ReturnType<typeof setTimeout> | undefined;
  await Promise.race([device.lost, new Promise((resolve) => (timer = setTimeout(resolve, LOSS_WAIT_MS)))]);
  clearTimeout(timer);
}
