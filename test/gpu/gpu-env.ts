// Shared set-up for the GPU tests (test/gpu/*.test.ts): one WebGPU device per test file, acquired with
// acquireDevice({ allowSoftware: true }) from src/gpu/acquire.ts, so that a machine without a GPU runs
// the shaders on SwiftShader (Debian `chromium` + `libvulkan1`). Without any adapter the tests skip
// locally with a visible notice naming the install command, and FAIL in CI (CI=true): there a skipped
// GPU test would hide a broken GPU path. Also: an error-scope wrapper (re-exported from the library)
// and a tiny compute-dispatch helper (upload int32 arrays, run one WGSL entry point, read back).
// QGEMM_BOUNDS_CHECK=1 makes the file's device count every index out of range in the library's pipelines
// (test/support/bounds-check.ts), and releaseGpu fails the file where any was.
//
// Use, at the top of a test file (vitest runs each file in its own process, so "once per file"):
//   const gpu = await getGpu();
//   describe.skipIf(!gpu)('...', () => { ... gpu!.device ... });
//   afterAll(releaseGpu);

import { acquireDevice, type AcquiredDevice } from '../../src/gpu/acquire.ts';
import { describeAdapter } from '../../src/gpu/adapter.ts';
import { INSTALL_HINT } from '../../src/gpu/dawn.ts';
import { runInErrorScope } from '../../src/gpu/scopes.ts';
import { expect } from 'vitest';
import { type BoundsCheck, boundsCheckDevice } from '../support/bounds-check.ts';
import { DeviceLostError, GpuValidationError, NoAdapterError } from '../../src/errors.ts';

export { runInErrorScope };

let acquired: Promise<AcquiredDevice | null> | undefined;
let bounds: BoundsCheck | undefined;
/** Errors that escaped every error scope (reported by the device's 'uncapturederror' event). */
export const uncapturedErrors: string[] = [];

/**
 * The device for this test file, or null (skip) when there is none and CI is not 'true'.
 * In CI a missing adapter throws, so the test file fails instead of skipping.
 */
export function getGpu(): Promise<AcquiredDevice | null> {
  acquired ??= (async () => {
    const t0 = performance.now();
    try {
      const gpu = await acquireDevice({ allowSoftware: true });
      if (process.env.QGEMM_BOUNDS_CHECK === '1') bounds = boundsCheckDevice(gpu.device);
      gpu.device.addEventListener('uncapturederror', (ev) => {
        uncapturedErrors.push((ev as GPUUncapturedErrorEvent).error.message);
      });
      void gpu.device.lost.then((info) => {
        if (info.reason !== 'destroyed') console.warn(`[gpu-env] device lost: ${info.reason} ${info.message}`);
      });
      if (process.env.QGEMM_TEST_VERBOSE) {
        console.log(
          `[gpu-env] ${describeAdapter(gpu.summary)} via ${gpu.source}, dot4=${gpu.hasDot4}, ${(performance.now() - t0).toFixed(0)} ms`,
        );
      }
      return gpu;
    } catch (e) {
      const msg = (e as Error).message;
      if (process.env.CI === 'true') {
        throw new NoAdapterError(`GPU tests cannot run in CI without a WebGPU adapter (install: \`${INSTALL_HINT}\`). ${msg}`);
      }
      console.warn(
        `\n[gpu-env] SKIPPING the GPU tests of this file: no WebGPU adapter. Install SwiftShader and the Vulkan ` +
          `loader with \`${INSTALL_HINT}\` (Debian, as root) to run them on the CPU.\n  ${msg}\n`,
      );
      return null;
    }
  })();
  return acquired;
}

/** Destroys this file's device (for afterAll). */
export async function releaseGpu(): Promise<void> {
  const gpu = await acquired?.catch(() => null);
  // A file that lost its device cannot read the counters: said, not failed. Mutants (test/gpu/sgmat.test.ts)
  // are kernels made wrong on purpose: their counts are said, not failed.
  const counts =
    gpu && bounds ? await bounds.take().catch((e: Error) => (console.warn(`[gpu-env] bounds counters unread: ${e.message}`), {})) : {};
  const outOfRange = Object.fromEntries(Object.entries(counts).filter(([label]) => !label.includes('-mutant-')));
  if (bounds) {
    const skipped = bounds.uncompiled.length ? `; not compiled when checked, so unchecked: ${bounds.uncompiled.join(', ')}` : '';
    const mutants = Object.keys(counts).length - Object.keys(outOfRange).length;
    console.log(
      `[gpu-env] bounds-checked: ${bounds.modules} modules, ${Object.keys(outOfRange).length} counters over 0${mutants ? ` (and ${mutants} of mutants)` : ''}${skipped}`,
    );
  }
  gpu?.device.destroy();
  acquired = undefined;
  bounds = undefined;
  expect(outOfRange, 'indices out of range (QGEMM_BOUNDS_CHECK)').toEqual({});
}

/**
 * Each call of a context destroyed while they ran: resolved (it finished first) or rejected with a
 * DeviceLostError (it did not), never another error.
 */
export async function expectResolvedOrDeviceLost(calls: Promise<unknown>[]): Promise<void> {
  for (const c of calls) {
    const outcome = await c.then(
      () => 'resolved',
      (e) => e,
    );
    if (outcome !== 'resolved') expect(outcome).toBeInstanceOf(DeviceLostError);
  }
}

export type IntArray = Int32Array | Uint32Array;

export interface ComputeSpec {
  /** Full WGSL source (e.g. a library such as fixedpoint.wgsl concatenated with a test entry point). */
  code: string;
  entryPoint?: string;
  /** Pipeline-overridable constants. */
  constants?: Record<string, number>;
  /** Bound at @group(0) @binding(0..k-1) as var<storage, read>. */
  inputs: IntArray[];
  /** Element (int32) counts of the outputs, bound at @binding(k..) as var<storage, read_write>, zero-filled. */
  outputs: number[];
  /** Workgroup counts; default: ceil(outputs[0] / 64) in x. */
  workgroups?: number | [number, number?, number?];
  label?: string;
}

const moduleCache = new WeakMap<GPUDevice, Map<string, GPUShaderModule>>();

/**
 * Uploads the inputs, runs one dispatch, reads the outputs back as Int32Arrays. Everything runs inside
 * the validation and out-of-memory error scopes; a compile error or an uncaptured error also throws.
 */
export async function runCompute(device: GPUDevice, spec: ComputeSpec): Promise<Int32Array[]> {
  const label = spec.label ?? spec.entryPoint ?? 'test';
  let modules = moduleCache.get(device);
  if (!modules) moduleCache.set(device, (modules = new Map()));
  const before = uncapturedErrors.length;
  const buffers: GPUBuffer[] = [];
  try {
    const result = await runInErrorScope(
      device,
      async () => {
        let module = modules.get(spec.code);
        if (!module) {
          module = device.createShaderModule({ code: spec.code, label });
          const info = await module.getCompilationInfo();
          const errors = info.messages.filter((m) => m.type === 'error');
          if (errors.length) {
            throw new GpuValidationError(
              `${label}: WGSL compile errors:\n` + errors.map((m) => `  line ${m.lineNum}:${m.linePos} ${m.message}`).join('\n'),
            );
          }
          modules.set(spec.code, module);
        }
        const entries: GPUBindGroupLayoutEntry[] = [];
        const bindings: GPUBindGroupEntry[] = [];
        const make = (byteLength: number, usage: number): GPUBuffer => {
          const b = device.createBuffer({ size: Math.max(4, Math.ceil(byteLength / 4) * 4), usage, label }); // exact: arrayLength() = n
          buffers.push(b);
          return b;
        };
        spec.inputs.forEach((data, i) => {
          const b = make(data.byteLength, GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_DST);
          if (data.byteLength) device.queue.writeBuffer(b, 0, data.buffer, data.byteOffset, data.byteLength);
          entries.push({ binding: i, visibility: GPUShaderStage.COMPUTE, buffer: { type: 'read-only-storage' } });
          bindings.push({ binding: i, resource: { buffer: b } });
        });
        const outs = spec.outputs.map((n, j) => {
          const binding = spec.inputs.length + j;
          const b = make(n * 4, GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC);
          entries.push({ binding, visibility: GPUShaderStage.COMPUTE, buffer: { type: 'storage' } });
          bindings.push({ binding, resource: { buffer: b } });
          return b;
        });
        const layout = device.createBindGroupLayout({ entries, label });
        // createComputePipelineAsync reports a bad pipeline by rejecting (GPUPipelineError), not in a scope.
        const pipeline = await device
          .createComputePipelineAsync({
            layout: device.createPipelineLayout({ bindGroupLayouts: [layout] }),
            compute: { module, entryPoint: spec.entryPoint ?? 'main', constants: spec.constants ?? {} },
            label,
          })
          .catch((e: Error) => {
            throw new GpuValidationError(`${label}: pipeline creation failed: ${e.message}`);
          });
        const reads = spec.outputs.map((n) => make(n * 4, GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST));
        const enc = device.createCommandEncoder({ label });
        const pass = enc.beginComputePass({ label });
        pass.setPipeline(pipeline);
        pass.setBindGroup(0, device.createBindGroup({ layout, entries: bindings, label }));
        const wg = spec.workgroups ?? Math.ceil((spec.outputs[0] ?? 0) / 64);
        const [x, y = 1, z = 1] = typeof wg === 'number' ? [wg] : wg;
        pass.dispatchWorkgroups(x, y, z);
        pass.end();
        outs.forEach((b, j) => {
          enc.copyBufferToBuffer(b, 0, reads[j], 0, reads[j].size);
        });
        device.queue.submit([enc.finish()]);
        return Promise.all(
          reads.map(async (r, j) => {
            await r.mapAsync(GPUMapMode.READ);
            const copy = new Int32Array(r.getMappedRange(0, r.size).slice(0, spec.outputs[j] * 4));
            r.unmap();
            return copy;
          }),
        );
      },
      label,
    );
    if (uncapturedErrors.length > before) {
      throw new GpuValidationError(`${label}: uncaptured GPU error(s): ${uncapturedErrors.slice(before).join('; ')}`);
    }
    return result;
  } finally {
    for (const b of buffers) b.destroy();
  }
}

/** Workgroup counts for n invocations of a 1-D kernel with workgroup size wg, within 65535 per dimension. */
export function grid1D(n: number, wg = 64): [number, number, number] {
  const groups = Math.max(1, Math.ceil(n / wg));
  if (groups <= 65535) return [groups, 1, 1];
  const y = Math.ceil(groups / 65535);
  return [Math.ceil(groups / y), y, 1];
}
