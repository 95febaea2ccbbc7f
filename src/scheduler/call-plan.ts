// Call plans: the decode call (a repeated GEMM whose rhs is prepacked and whose lhs comes from the CPU),
// and a convolution layer's call (its patches gathered from its input), made once and replayed (pack ->
// gemm -> output, with its readback). The first such call runs through ./gemm.ts runGemm as any other,
// but into buffers that the plan owns (the lhs upload or the convolution's input, the packed lhs and its
// sums, the stage values, dst, the uniform slab, a workspace, the readback buffer) and through a compute
// pass that records its commands, pipelines and bind groups included (./record.ts); ./plans.ts keeps the
// plan. A later call whose problem equals it in everything but the lhs data (src/problem/snapshot.ts, as
// the CPU path's plan cache; patches by their geometry, zero point and input's shape) writes its lhs into
// the plan's upload buffer, replays the commands into a new pass, and submits and maps once; a GpuMatrix
// lhs, or patches of a GpuMatrix input, is read where it is (no write: the plan serves that buffer only).
// Anything that differs (a shape, a zero point, a per-channel vector edited in place, the stages, the
// order, the bit depth) misses and makes a new plan. gemmOnGpu's plans (./plans.ts GpuCallPlan) replay
// the same way without the readback, into the dst the plan owns and hands out.

import { InputError } from '../errors.ts';
import { openErrorScope } from '../gpu/scopes.ts';
import { writeOperandBytes } from '../gpu/write.ts';
import type { GemmResult, Operand } from '../types.ts';
import type { GpuGemmProblem } from './gemm.ts';
import { checkMatrix, type GpuMatrix, isGpuMatrix, isPacked, type PackedOperand } from './operands.ts';
import { isPatches, type PatchOperand } from './patches.ts';
import type { CallPlan, LhsMatrix } from './plans.ts';
import type { GemmTiming } from './record.ts';
import type { DeviceResources } from './resources.ts';
import type { Tracer } from './trace.ts';

/** The descriptor of every replay: made once, not per call. */
const ENCODER: GPUCommandEncoderDescriptor = { label: 'qgemm gemm' };

/**
 * A convolution's patches whose input a plan can take: a CPU array (written into the plan's upload buffer
 * on each replay) or a GpuMatrix (read where it is). Anything else runs without a plan, and runGemm's
 * checks name it.
 */
function plannablePatches(lhs: PatchOperand): boolean {
  const { input } = lhs;
  return input instanceof Uint8Array || input instanceof Int8Array || (!!input && typeof input === 'object' && isGpuMatrix(input));
}

/**
 * The calls a plan serves (gemm's and gemmOnGpu's): a prepacked rhs, and a CPU lhs, a GpuMatrix one, or a
 * convolution's patches of a CPU or GpuMatrix input (not a prepacked lhs).
 */
export function plannable(problem: GpuGemmProblem): problem is GpuGemmProblem & { lhs: PlannedLhs; rhs: PackedOperand } {
  const { lhs, rhs } = problem;
  if (!lhs || !rhs || typeof lhs !== 'object' || !isPacked(rhs) || isPacked(lhs)) return false;
  return !isPatches(lhs) || plannablePatches(lhs);
}

/** The lhs of a planned call: a CPU operand, a GpuMatrix, or a convolution's patches of either. */
export type PlannedLhs = Operand | GpuMatrix | PatchOperand;

/**
 * The GpuMatrix a plan would read where it is (the lhs, or the input of patches), checked as runGemm
 * checks it (a released or another context's matrix is refused), as a plan compares it; null for a CPU
 * lhs or input.
 */
export function inPlaceMatrix(r: DeviceResources, lhs: PlannedLhs): LhsMatrix {
  const m = isPatches(lhs) ? (ArrayBuffer.isView(lhs.input) ? null : lhs.input) : isGpuMatrix(lhs) ? lhs : null;
  if (!m) return null;
  checkMatrix(r, m, isPatches(lhs) ? 'lhs.input' : 'lhs');
  return { buffer: m.buffer, dtype: m.dtype, stride: m.stride };
}

/** The bytes a replay writes into the plan's upload buffer: a CPU lhs's data, or the CPU input of patches. */
function lhsBytes(lhs: PlannedLhs): Uint8Array | Int8Array {
  return isPatches(lhs) ? (lhs.input as Uint8Array | Int8Array) : (lhs as Operand).data;
}

/**
 * One call through a plan: the lhs written into the plan's upload buffer (none where the plan reads a
 * GpuMatrix where it is: plan.lhsMatrix), the recorded commands replayed
 * into a new pass (with timestamp queries only when `timing` asks and the context records them), the
 * readback copy, one submit and one map; the error scopes are closed while the map is pending. The
 * caller holds the device. Nothing is awaited between the check of the rhs and the submit.
 */
export async function replay(
  r: DeviceResources,
  plan: CallPlan,
  lhs: PlannedLhs,
  timing: GemmTiming | undefined,
  tracer: Tracer | undefined,
): Promise<GemmResult> {
  return (await replayPlan(r, plan, lhs, timing, tracer, true)) as GemmResult;
}

/**
 * One gemmOnGpu call through its plan: as replay() without the readback (one submit, the error scope and
 * any GPU time awaited); the lhs written as replay() writes it. The plan's dst holds the result.
 */
export async function replayOnGpu(
  r: DeviceResources,
  plan: CallPlan,
  lhs: PlannedLhs,
  timing: GemmTiming | undefined,
  tracer: Tracer | undefined,
): Promise<void> {
  await replayPlan(r, plan, lhs, timing, tracer, false);
}

async function replayPlan(
  r: DeviceResources,
  plan: CallPlan,
  lhs: PlannedLhs,
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
    if (!plan.lhsMatrix) writeOperandBytes(device.queue, plan.lhsSource, lhsBytes(lhs));
    tracer?.mark('lhsWrite');
    const encoder = device.createCommandEncoder(ENCODER);
    const pass = r.staging.beginPass(encoder, !!timing && r.timestamps);
    const calls = pass as unknown as Record<string, (...args: unknown[]) => unknown>;
    for (const [name, args] of plan.commands) calls[name](...args);
    const times = r.staging.endPass(encoder, pass);
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
      throw await r.lostOr(gpuError); // a GPU error explains the failure best
    }
    throw await r.lostOr(e);
  }
  const closed = close();
  closed.catch(() => undefined); // awaited below; never an unhandled rejection meanwhile
  if (tracer) {
    await device.queue.onSubmittedWorkDone();
    tracer.mark('wait');
  }
  const [scope, data, ms] = await Promise.allSettled([closed, finish?.(() => tracer?.mark('map')) ?? null, gpuMs]);
  if (scope.status === 'rejected') throw await r.lostOr(scope.reason);
  if (data.status === 'rejected') throw await r.lostOr(data.reason);
  if (timing) timing.gpuMs = ms.status === 'fulfilled' && ms.value !== null ? ms.value : null;
  r.checkAlive();
  if (readback) tracer?.mark('copyOut'); // gemmOnGpu's caller marks the rest as its wait
  return data.value;
}
