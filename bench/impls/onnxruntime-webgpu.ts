// onnxruntime-node's own WebGPU execution provider (its own Dawn, in this process) as a peer, in the
// 'resident' mode only: the weights are initializers of the model, so they are uploaded once when the
// session is made and stay on the GPU; each timed call passes A (float32 [M, K]) from the CPU and
// reads Y back, as qgemm's resident call does. Three rows (bench/onnx-model.ts builds the models):
//   onnxruntime-webgpu-matmul-f32    MatMul, W = (rhs - 131) as f32;
//   onnxruntime-webgpu-matmulnbits8  com.microsoft MatMulNBits, bits 8, block 32, accuracy_level 4;
//   onnxruntime-webgpu-matmulnbits4  the same with 4-bit weights (rhs >> 4, zero point 8).
// A is (lhs - 119) as f32 (accuracy_level 4 quantizes it to int8 per block inside the EP).
// Wall time comes from a plain session. GPU time comes from a second, profiled session of the same model
// (onnxruntime's profiler records each WebGPU kernel's timestamp-query time as an "Api" event); it is
// kept apart so that profiling never slows the wall-time runs. Besides the calls back to back, single calls
// after a pause (bench/timing.ts afterPause), as qgemm's resident rows. On SwiftShader the EP needs
// VK_ICD_FILENAMES pointing at it when its Dawn instance is made: the harness sets it for the process.

import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { matMulF32Model, matMulNBitsModel } from '../onnx-model.ts';
import { RHS_ZERO_POINT, type ShapeData } from '../problems.ts';
import { afterPause, measure, stats, type RepeatPolicy, type Stats, type Warmed, warmUp } from '../timing.ts';
import { loadOrt, type Ort, type OrtTensor } from './onnxruntime.ts';
import type { CellOutcome, OrtWebgpuImpl, Runner } from './types.ts';

export function modelFor(impl: OrtWebgpuImpl, data: ShapeData): Uint8Array {
  const { n, k } = data.shape;
  if (impl === 'onnxruntime-webgpu-matmul-f32') return matMulF32Model(data.floats().rhs, k, n);
  if (impl === 'onnxruntime-webgpu-matmulnbits8') return matMulNBitsModel(data.rhs, k, n, 8, RHS_ZERO_POINT);
  return matMulNBitsModel(
    data.rhs.map((v) => v >> 4),
    k,
    n,
    4,
    RHS_ZERO_POINT >> 4,
  );
}

/** Why a shape cannot run on this row (MatMulNBits needs K a multiple of its block), or null. */
export function ortWebgpuUnsupported(impl: OrtWebgpuImpl, k: number): string | null {
  return impl !== 'onnxruntime-webgpu-matmul-f32' && k % 32 !== 0 ? `MatMulNBits needs K a multiple of 32 (K = ${k})` : null;
}

const sessionOptions = (extra: Record<string, unknown> = {}) => ({
  executionProviders: ['webgpu'],
  graphOptimizationLevel: 'all',
  logSeverityLevel: 3,
  ...extra,
});

/** GPU ms per run from a profile: the "Api" events (one per WebGPU kernel) in order, split evenly over the runs. */
export function gpuMsPerRun(events: { cat?: string; ts?: number; dur?: number }[], runs: number): number[] | null {
  const kernels = events.filter((e) => e.cat === 'Api' && typeof e.dur === 'number').sort((a, b) => a.ts! - b.ts!);
  if (runs === 0 || kernels.length === 0 || kernels.length % runs !== 0) return null;
  const per = kernels.length / runs;
  return Array.from({ length: runs }, (_, r) => kernels.slice(r * per, (r + 1) * per).reduce((s, e) => s + e.dur!, 0) / 1000);
}

/**
 * GPU time of the last `runs` calls in a profiled session (its own temp folder for the profile file),
 * after runs back to back until steady (`policy.warmRule`: the clocks rise, as for qgemm's rows).
 */
async function profiledGpu(
  ort: Ort,
  model: Uint8Array,
  feed: () => Record<string, OrtTensor>,
  policy: RepeatPolicy,
): Promise<Stats | null> {
  const dir = mkdtempSync(join(tmpdir(), 'qgemm-ort-profile-'));
  try {
    const session = await ort.InferenceSession.create(model, sessionOptions({ enableProfiling: true, profileFilePrefix: join(dir, 'p') }));
    let warm = 0;
    await warmUp(policy, async () => {
      const t0 = performance.now();
      await session.run(feed());
      warm++;
      return performance.now() - t0;
    });
    const runs = policy.minReps;
    for (let i = 0; i < runs; i++) await session.run(feed());
    session.endProfiling?.();
    await session.release?.();
    const file = readdirSync(dir).find((f) => f.endsWith('.json'));
    if (!file) return null;
    const perRun = gpuMsPerRun(JSON.parse(readFileSync(join(dir, file), 'utf8')), warm + runs)?.slice(warm);
    return perRun ? stats(perRun) : null;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

export async function onnxruntimeWebgpu(impl: OrtWebgpuImpl, adapter: string): Promise<Runner> {
  const ort = loadOrt();
  // Fail here, not in the first cell, when the EP has no adapter (the row then says why).
  const probe = await ort.InferenceSession.create(matMulF32Model(new Float32Array(32 * 4), 32, 4), sessionOptions());
  await probe.run({ A: new ort.Tensor('float32', new Float32Array(32), [1, 32]) });
  await probe.release?.();
  const version = ort.env.versions?.node ?? ort.env.versions?.common ?? '?';
  return {
    impl,
    backend: 'webgpu',
    runtime: 'node',
    mode: 'resident',
    adapter,
    computes:
      impl === 'onnxruntime-webgpu-matmul-f32'
        ? 'f32 MatMul, weights an initializer'
        : `MatMulNBits ${impl.endsWith('8') ? 8 : 4}-bit weights, block 32, accuracy_level 4 (int8 activations, dot4), f32 A and Y`,
    details: `onnxruntime-node ${version}, WebGPU execution provider (its own Dawn), weights as initializers; GPU time from a second, profiled session (its per-kernel timestamps)`,
    run: async (data: ShapeData, policy: RepeatPolicy): Promise<CellOutcome> => {
      const unsupported = ortWebgpuUnsupported(impl, data.shape.k);
      if (unsupported) throw new Error(unsupported);
      const { m, k } = data.shape;
      const model = modelFor(impl, data);
      const a = data.floats().lhs;
      const feed = (): Record<string, OrtTensor> => ({ A: new ort.Tensor('float32', a, [m, k]) });
      const session = await ort.InferenceSession.create(model, sessionOptions());
      let wall: Stats;
      let warmed: Warmed | undefined;
      let paused: Stats | undefined;
      const once = async () => {
        const t0 = performance.now();
        const out = await session.run(feed());
        if (!out.Y || out.Y.dims[0] !== m) throw new Error(`onnxruntime returned ${out.Y?.type} [${out.Y?.dims}]`);
        return performance.now() - t0;
      };
      try {
        ({ wall, warm: warmed } = await measure(policy, async () => ({ timing: { wallMs: await once(), gpuMs: null }, output: null })));
        // The decode loop's other case, measured as qgemm's: single calls, each after a pause.
        if (policy.afterPauseRows !== false) paused = await afterPause(policy, once);
      } finally {
        await session.release?.();
      }
      const gpu = await profiledGpu(ort, model, feed, policy).catch(() => null);
      return {
        wall,
        gpu,
        ...(paused ? { afterPause: paused } : {}),
        warm: warmed,
        ...(gpu ? {} : { gpuNote: "onnxruntime's profile held no WebGPU kernel times" }),
      };
    },
    close: async () => undefined,
  };
}
