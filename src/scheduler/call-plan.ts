// Call plans: the decode call (a repeated GEMM whose rhs is prepacked and whose lhs comes from the CPU)
// made once and replayed (pack -> gemm -> output, with its readback). The first such call runs through
// ./gemm.ts runGemm as any other, but into buffers that the plan owns (the lhs upload, the packed lhs
// and its sums, the stage values, dst, the uniform slab, a workspace, the readback buffer) and through a
// compute pass that records its commands (pipelines and bind groups included). A later call whose
// problem equals it in everything but the lhs data (src/problem/snapshot.ts, as
// the CPU path's plan cache) writes its lhs into the plan's upload buffer, replays the commands into a
// new pass, and submits and maps once. Anything that differs (a shape, a zero point, a per-channel
// vector edited in place, the stages, the order, the bit depth) misses and makes a new plan.

import { InputError } from '../errors.ts';
import { BufferPool } from '../gpu/pool.ts';
import { Staging } from '../gpu/readback.ts';
import { openErrorScope } from '../gpu/scopes.ts';
import { UniformArena } from '../gpu/uniforms.ts';
import { writeOperandBytes } from '../gpu/write.ts';
import { type ProblemSnapshot, sameProblem, snapshotProblem } from '../problem/snapshot.ts';
import type { GemmResult, Operand } from '../types.ts';
import type { GpuGemmProblem, GemmTiming, LastRun } from './gemm.ts';
import { type GpuMatrix, isGpuMatrix, isPacked, type PackedOperand } from './operands.ts';
import type { DeviceResources } from './resources.ts';
import type { Tracer } from './trace.ts';

/** Plans kept per prepacked rhs (e.g. one M for decode, one for prefill); the oldest goes first. */
const PLANS_PER_RHS = 2;

/** A command of a compute pass: the method and its arguments. */
type Command = [name: string, args: unknown[]];

/** What a plan owns while it is being made (./gemm.ts runGemm allocates through it). */
export interface PlanBuilder {
  readonly pool: BufferPool;
  readonly uniforms: UniformArena;
  readonly staging: Staging;
  readonly commands: Command[];
}

/** A made plan: what it serves (`input`, `rhs`) and what it replays. */
export interface CallPlan extends PlanBuilder {
  readonly rhs: PackedOperand;
  readonly input: ProblemSnapshot;
  readonly ran: LastRun;
  readonly lhsSource: GPUBuffer;
  readonly dst: GpuMatrix;
  readonly label: string;
}

/** A CPU lhs with a prepacked rhs, read back: the calls a plan serves. */
export function plannable(problem: GpuGemmProblem, readback: boolean): problem is GpuGemmProblem & { lhs: Operand; rhs: PackedOperand } {
  const { lhs, rhs } = problem;
  return readback && !!lhs && !!rhs && typeof lhs === 'object' && isPacked(rhs) && !isPacked(lhs) && !isGpuMatrix(lhs);
}

/** A compute pass that records every command it forwards, for replay into a later call's pass. */
export function recordingPass(pass: GPUComputePassEncoder, commands: Command[]): GPUComputePassEncoder {
  return new Proxy(pass, {
    get(target, prop) {
      const value = Reflect.get(target, prop, target);
      if (typeof value !== 'function') return value;
      return (...args: unknown[]) => {
        commands.push([String(prop), args]);
        return value.apply(target, args);
      };
    },
  });
}

/** The plans of one device's resources, by prepacked rhs. */
export class CallPlans {
  private readonly byRhs = new Map<PackedOperand, CallPlan[]>();
  constructor(private readonly device: GPUDevice) {}

  /** The plan that serves `problem` exactly, or null. */
  find(problem: GpuGemmProblem & { lhs: Operand; rhs: PackedOperand }): CallPlan | null {
    const list = this.byRhs.get(problem.rhs);
    if (!list || problem.rhs.destroyed) return null;
    return list.find((plan) => sameProblem(problem, plan.input)) ?? null;
  }

  /** Empty owned resources for a plan of `problem`. */
  builder(): PlanBuilder {
    return {
      pool: new BufferPool(this.device, 0),
      uniforms: new UniformArena(this.device),
      staging: new Staging(this.device),
      commands: [],
    };
  }

  /** Keeps the plan that `b` made for `problem` (the oldest of its rhs goes past PLANS_PER_RHS). */
  add(
    b: PlanBuilder,
    problem: GpuGemmProblem & { lhs: Operand; rhs: PackedOperand },
    made: { ran: LastRun; lhsSource: GPUBuffer; dst: GpuMatrix; label: string },
  ): void {
    if (problem.rhs.destroyed) {
      free(b);
      return;
    }
    const list = this.byRhs.get(problem.rhs) ?? [];
    list.push({ ...b, ...made, rhs: problem.rhs, input: snapshotProblem(problem) });
    while (list.length > PLANS_PER_RHS) free(list.shift()!);
    this.byRhs.set(problem.rhs, list);
  }

  /** Frees what a builder holds, when its call failed or made no plan. */
  discard(b: PlanBuilder): void {
    free(b);
  }

  /** Frees the plans of `rhs` (it is being destroyed). */
  drop(rhs: PackedOperand): void {
    for (const plan of this.byRhs.get(rhs) ?? []) free(plan);
    this.byRhs.delete(rhs);
  }

  /** Plans held, in all (for tests). */
  get size(): number {
    let n = 0;
    for (const list of this.byRhs.values()) n += list.length;
    return n;
  }

  destroy(): void {
    for (const list of this.byRhs.values()) for (const plan of list) free(plan);
    this.byRhs.clear();
  }
}

function free(b: PlanBuilder): void {
  b.pool.destroy();
  b.uniforms.destroy();
  b.staging.destroy();
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
  r.checkAlive();
  if (plan.rhs.destroyed) throw new InputError('rhs', 'this prepacked operand was destroyed');
  tracer?.mark('validate');
  const { device } = r;
  const close = openErrorScope(device, plan.label);
  let finish: (onMapped?: () => void) => Promise<GemmResult>;
  let gpuMs: Promise<number> | null = null;
  try {
    writeOperandBytes(device.queue, plan.lhsSource, lhs.data);
    tracer?.mark('lhsWrite');
    const encoder = device.createCommandEncoder({ label: 'qgemm gemm' });
    const querySet = timing && r.timestamps ? r.staging.querySet() : null;
    const pass = encoder.beginComputePass(
      querySet ? { timestampWrites: { querySet, beginningOfPassWriteIndex: 0, endOfPassWriteIndex: 1 } } : {},
    ) as unknown as Record<string, (...args: unknown[]) => unknown>;
    for (const [name, args] of plan.commands) pass[name](...args);
    (pass as unknown as GPUComputePassEncoder).end();
    const times = querySet ? r.staging.timestamps(encoder) : null;
    finish = plan.staging.copy(encoder, plan.dst);
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
  const [scope, data, ms] = await Promise.allSettled([closed, finish(() => tracer?.mark('map')), gpuMs]);
  if (scope.status === 'rejected') throw r.lostOr(scope.reason);
  if (data.status === 'rejected') throw r.lostOr(data.reason);
  if (timing) timing.gpuMs = ms.status === 'fulfilled' && ms.value !== null ? ms.value : null;
  r.checkAlive();
  tracer?.mark('copyOut');
  return data.value;
}
