// Call plans: the decode call (a repeated GEMM whose rhs is prepacked and whose lhs comes from the CPU)
// made once and replayed (pack -> gemm -> output, with its readback). The first such call runs through
// ./gemm.ts runGemm as any other, but into buffers that the plan owns (the lhs upload, the packed lhs
// and its sums, the stage values, dst, the uniform slab, a workspace, the readback buffer) and through a
// compute pass that records its commands, pipelines and bind groups included (./record.ts); ./plans.ts
// keeps the plan. A later call whose problem equals it in everything but the lhs data
// (src/problem/snapshot.ts, as the CPU path's plan cache) writes its lhs into the plan's upload buffer,
// replays the commands into a new pass, and submits and maps once. Anything that differs (a shape, a
// zero point, a per-channel vector edited in place, the stages, the order, the bit depth) misses and
// makes a new plan. gemmOnGpu's plans (./plans.ts GpuCallPlan) replay the same way without the readback,
// into the dst the plan owns and hands out; with a GpuMatrix lhs they read it where it is (no write).

import { InputError } from '../errors.ts';
import { openErrorScope } from '../gpu/scopes.ts';
import { writeOperandBytes } from '../gpu/write.ts';
import type { GemmResult, Operand } from '../types.ts';
import type { GpuGemmProblem } from './gemm.ts';
import { type GpuMatrix, isGpuMatrix, isPacked, type PackedOperand } from './operands.ts';
import { isPatches } from './patches.ts';
import type { CallPlan } from './plans.ts';
import type { GemmTiming } from './record.ts';
import type { DeviceResources } from './resources.ts';
import type { Tracer } from './trace.ts';

/** The descriptors of every replay: made once, not per call. */
const ENCODER: GPUCommandEncoderDescriptor = { label: 'qgemm gemm' };
const UNTIMED_PASS: GPUComputePassDescriptor = {};

/** gemmOnGpu's calls a plan serves: a prepacked rhs, and a CPU lhs or a GpuMatrix one (not prepacked, not patches). */
export function plannableOnGpu(problem: GpuGemmProblem): problem is GpuGemmProblem & { lhs: Operand | GpuMatrix; rhs: PackedOperand } {
  const { lhs, rhs } = problem;
  return !!lhs && !!rhs && typeof lhs === 'object' && isPacked(rhs) && !isPacked(lhs) && !isPatches(lhs);
}

/** A CPU lhs (not a convolution's patches) with a prepacked rhs, read back: the calls a plan serves. */
export function plannable(problem: GpuGemmProblem, readback: boolean): problem is GpuGemmProblem & { lhs: Operand; rhs: PackedOperand } {
  const { lhs, rhs } = problem;
  return readback && !!lhs && !!rhs && typeof lhs === 'object' && isPacked(rhs) && !isPacked(lhs) && !isGpuMatrix(lhs) && !isPatches(lhs);
}

/**
 * One call through a plan: the lhs written into the plan's upload buffer, the recorded commands replayed
 * into a new pass (with timestamp queries only when `timing` asks and the context records them), the
 * readback copy, one submit and one map; the error scopes are closed while the map is pending. The
 * caller holds the device. Nothing is awaited between the check of the rhs and the submit.
 */
export async function replay(
  r: DeviceResources,
  plan: CallPlan,
  lhs: Operand,
  timing: GemmTiming | undefined,
  tracer: Tracer | undefined,
): Promise<GemmResult> {
  return (await replayPlan(r, plan, lhs, timing, tracer, true)) as GemmResult;
}

/**
 * One gemmOnGpu call through its plan: as replay() without the readback (one submit, the error scope and
 * any GPU time awaited); `lhs` null where the plan reads a GpuMatrix lhs where it is. The plan's dst holds
 * the result.
 */
export async function replayOnGpu(r: DeviceResources, plan: CallPlan, lhs: Operand | null, timing: GemmTiming | undefined): Promise<void> {
  await replayPlan(r, plan, lhs, timing, undefined, false);
}

async function replayPlan(
  r: DeviceResources,
  plan: CallPlan,
  lhs: Operand | null,
  timing: GemmTiming | undefined,
  tracer: Tracer | undefined,
  readback: boolean,
): Promise<GemmResult | null> {
  r.checkAlive();
  if (plan.rhs.destroyed) throw new InputError('rhs', 'this prepacked operand was destroyed');
  tracer?.mark('validate');
  const { device } = r;
  const close = openErrorScope(device, plan.label);
  let finish: ((onMapped?: () => void) => Promise<GemmResult>) | null;
  let gpuMs: Promise<number> | null = null;
  try {
    if (lhs) writeOperandBytes(device.queue, plan.lhsSource, lhs.data);
    tracer?.mark('lhsWrite');
    const encoder = device.createCommandEncoder(ENCODER);
    const querySet = timing && r.timestamps ? r.staging.querySet() : null;
    const pass = encoder.beginComputePass(
      querySet ? { timestampWrites: { querySet, beginningOfPassWriteIndex: 0, endOfPassWriteIndex: 1 } } : UNTIMED_PASS,
    ) as unknown as Record<string, (...args: unknown[]) => unknown>;
    for (const [name, args] of plan.commands) pass[name](...args);
    (pass as unknown as GPUComputePassEncoder).end();
    const times = querySet ? r.staging.timestamps(encoder) : null;
    finish = readback ? plan.staging.copy(encoder, plan.dst) : null;
    const commands = encoder.finish();
    tracer?.mark('encode');
    device.queue.submit([commands]);
    gpuMs = times ? times() : null;
    tracer?.mark('submit');
  } catch (e) {
    try {
      await close();
    } catch (gpuError) {
      throw r.lostOr(gpuError); // a GPU error explains the failure best
    }
    throw r.lostOr(e);
  }
  const closed = close();
  closed.catch(() => undefined); // awaited below; never an unhandled rejection meanwhile
  if (tracer) {
    await device.queue.onSubmittedWorkDone();
    tracer.mark('wait');
  }
  const [scope, data, ms] = await Promise.allSettled([closed, finish?.(() => tracer?.mark('map')) ?? null, gpuMs]);
  if (scope.status === 'rejected') throw r.lostOr(scope.reason);
  if (data.status === 'rejected') throw r.lostOr(data.reason);
  if (timing) timing.gpuMs = ms.status === 'fulfilled' && ms.value !== null ? ms.value : null;
  r.checkAlive();
  tracer?.mark('copyOut');
  return data.value;
}
