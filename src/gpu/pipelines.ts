// Compiled compute pipelines, cached per device in a WeakMap (so a lost or destroyed device takes its
// pipelines with it) under keys built by one function from the kernel's id and its override values,
// LRU-bounded. Every kernel of pack -> gemm -> output (and the elementwise ops) gets its pipeline here.

import { GpuValidationError } from '../errors.ts';
import { warmReflection } from './reflect.ts';

export type Overrides = Record<string, number>;

/** The one place pipeline cache keys are made: the id names the source, the overrides the constants. */
function pipelineKey(id: string, overrides: Overrides): string {
  const o = Object.keys(overrides)
    .sort()
    .map((k) => `${k}=${overrides[k]}`)
    .join(',');
  return `${id}/${o}`;
}

const MAX_PIPELINES = 48;
const pipelineCaches = new WeakMap<GPUDevice, Map<string, Promise<GPUComputePipeline>>>();

/** What a pipeline is made of. `id` must name `source` uniquely (it is the cache key). */
interface PipelineSpec {
  id: string;
  source: string;
  entryPoint: string;
  overrides: Overrides;
  /**
   * The WGSL the host code will reflect for this pipeline's layouts and bindings (./reflect.ts). On a
   * cache miss it is parsed while the pipeline compiles on Dawn's threads: a cold parse of a kernel's
   * source takes about 0.1 s, which a first call would otherwise wait for after the compile.
   */
  reflect?: readonly string[];
}

/** A compute pipeline, compiled once per device and key (LRU-bounded). */
export function getPipeline(device: GPUDevice, spec: PipelineSpec): Promise<GPUComputePipeline> {
  let cache = pipelineCaches.get(device);
  if (!cache) pipelineCaches.set(device, (cache = new Map()));
  const key = pipelineKey(spec.id, spec.overrides);
  const hit = cache.get(key);
  if (hit) {
    cache.delete(key); // refresh LRU position
    cache.set(key, hit);
    return hit;
  }
  const created = createPipeline(device, spec, key); // the compile is under way once this returns
  created.catch(() => cache!.delete(key)); // never cache a failure
  cache.set(key, created);
  if (cache.size > MAX_PIPELINES) cache.delete(cache.keys().next().value!);
  // After the caller's synchronous part, which may start other compiles first (a GEMM's packs).
  if (spec.reflect) queueMicrotask(() => spec.reflect!.forEach(warmReflection));
  return created;
}

async function createPipeline(device: GPUDevice, spec: PipelineSpec, key: string): Promise<GPUComputePipeline> {
  // A module that does not compile (a kernel on a driver that rejects it) is reported here, in the
  // thrown error, not as an uncaptured error on the device: push and pop happen before any await.
  device.pushErrorScope('validation');
  const module = device.createShaderModule({ code: spec.source, label: `qgemm ${spec.id}` });
  const moduleError = device.popErrorScope();
  try {
    const pipeline = await device.createComputePipelineAsync({
      label: `qgemm ${key}`,
      layout: 'auto',
      compute: { module, entryPoint: spec.entryPoint, constants: spec.overrides },
    });
    const error = await moduleError;
    if (error) throw new Error(error.message);
    return pipeline;
  } catch (e) {
    const info = await module.getCompilationInfo();
    const messages = info.messages.filter((m) => m.type === 'error').map((m) => `${m.lineNum}:${m.linePos} ${m.message}`);
    throw new GpuValidationError(
      `cannot create the ${spec.id} pipeline: ${(e as Error).message}${messages.length ? ` (${messages.join('; ')})` : ''}`,
    );
  }
}
