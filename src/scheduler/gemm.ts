// The GEMM path on the GPU (pack -> gemm -> output), as one function over a device's resources: the
// kernel chosen by src/kernels/registry.ts (after its exactness self-test where it needs one), the
// operands that need packing packed by src/pack/pack.ts packOperand, the kernel encoded with the fused
// epilogue (src/epilogue/), then, for gemm(), the copy to a readback buffer: ONE command encoder and
// ONE submission, inside an error scope. Like ruy's trmul it stands above the kernels and the packs;
// ./context.ts calls it while it holds the device.

import { InputError, LimitExceededError } from '../errors.ts';
import type { PlanLimits } from '../gpu/caps.ts';
import { ALL_STAGE_KINDS, epilogueValues } from '../epilogue/epilogue.ts';
import { encodeStages } from '../epilogue/stages.ts';
import { dstLayout, roundUp } from '../gpu/plan.ts';
import { runInErrorScope } from '../gpu/scopes.ts';
import { selectGemmKernel, type TunedChoice } from '../kernels/registry.ts';
import { type GpuGemmKernel, kernelFormats, type PackedPair, type PatchLhs, type RawLhs } from '../kernels/types.ts';
import { PACK_FORMATS, type PackFormat, packedRowBytes } from '../pack/formats.ts';
import { encodePack, operandSource, type PackJob, packEntry, packOperand, packPipelines, requantizationOf, strides } from '../pack/pack.ts';
import { encodePatches, type PatchJob, patchPipeline } from '../pack/patches.ts';
import { normalizeProblem, type NormalizedProblem } from '../problem/problem.ts';
import type { GemmProblem, GemmResult, Operand } from '../types.ts';
import { type GpuMatrix, type GpuOperandInput, isGpuMatrix, isPacked, shapeOf } from './operands.ts';
import {
  type CheckedPatches,
  checkPatches,
  isPatches,
  type PatchOperand,
  patchesAsMatrix,
  patchInput,
  patchJob,
  patchPlan,
} from './patches.ts';
import { type GemmTiming, type LastRun, type PlanBuilder, recordingPass } from './record.ts';

export type { GemmTiming, LastRun };
import type { DeviceResources } from './resources.ts';
import { runSelfTest } from './self-test.ts';
import type { Tracer } from './trace.ts';

export interface GpuGemmProblem extends Omit<GemmProblem, 'lhs' | 'rhs'> {
  /** A convolution's lhs may be given by its input (a PatchOperand): its patches are packed in this call's pass. */
  lhs: GpuOperandInput | PatchOperand;
  rhs: GpuOperandInput;
}

/** How the kernel is chosen on a context. */
export interface KernelChoice {
  /** Run this kernel (an id of src/kernels/registry.ts GPU_KERNELS) instead of the registry's choice. */
  force?: string;
  /** The GPU kernels to choose from instead of the registry's list. */
  kernels?: readonly GpuGemmKernel[];
  /** Where the warning of a kernel disabled by its self-test goes. */
  warn: (message: string) => void;
  /** A tuning table's choice (src/kernels/tuning.ts); none: the registry's rules. */
  tuned?: TunedChoice;
}

/** One encoded GEMM: dst on the GPU, and with readback, its data once the copy lands. */
interface GemmRun {
  dst: GpuMatrix;
  result?: Promise<GemmResult>;
  ran: LastRun;
  /** Where the lhs was uploaded (a CPU lhs, or the CPU input of patches), or the buffer it was read in place from: for a plan. */
  lhsSource?: GPUBuffer;
}

/** How one call runs, besides its problem. */
export interface CallOptions {
  /** Marks the steps of the call (./trace.ts). */
  trace?: Tracer;
  /**
   * Make a plan (./call-plan.ts): every buffer comes from the builder's own pool, arena and staging (none
   * is released after the call) and the pass records its commands.
   */
  plan?: PlanBuilder;
  /**
   * The rhs, a prepacked operand, was checked when the call began (a chain checks every layer's first):
   * destroyed since, it is still used, since destroy() frees it only after the calls already running.
   */
  rhsChecked?: boolean;
}

/** Self-test verdicts per device and kernel id (./self-test.ts). */
const verdictsByDevice = new WeakMap<GPUDevice, Map<string, 'testing' | 'passed' | 'failed'>>();
function selfTests(device: GPUDevice): Map<string, 'testing' | 'passed' | 'failed'> {
  let m = verdictsByDevice.get(device);
  if (!m) verdictsByDevice.set(device, (m = new Map()));
  return m;
}

/**
 * The kernel for p, given the formats of any prepacked operands. A kernel that needs a self-test runs
 * it first, once per device (inside this call, which holds the device); one that fails is disabled on
 * the device with a one-line warning, and the choice is made again without it. One whose self-test this
 * context cannot run (its lowered limits, or out of memory) is left untested on the device and unused
 * by this context (DeviceResources.untested). Whether a kernel gathers a convolution's patches may
 * depend on a context's limits (workgroup memory), so the verdict on its gathering form is kept apart
 * (`${id} gathering`): a convolution on a kernel that passed without gathering, in a context where it
 * gathers, runs the self-test again.
 */
async function kernelFor(
  r: DeviceResources,
  choice: KernelChoice,
  p: NormalizedProblem,
  problem: GpuGemmProblem,
  force = choice.force,
): Promise<GpuGemmKernel> {
  const format = (x: GpuOperandInput | PatchOperand) => (isPacked(x) ? x.packFormat : undefined);
  const verdicts = selfTests(r.device);
  const disabled = new Set(
    [...verdicts]
      .filter(([, v]) => v === 'failed')
      .map(([id]) => id)
      .concat([...r.untested]),
  );
  const kernel = selectGemmKernel(r.caps, p, {
    force,
    lhsPackFormat: format(problem.lhs),
    rhsPackFormat: format(problem.rhs),
    disabled,
    kernels: choice.kernels,
    tuned: choice.tuned,
  });
  if (!kernel.needsSelfTest || verdicts.get(kernel.id) === 'testing') return kernel;
  const gathering = `${kernel.id} gathering`;
  const gathers = async () => (await r.prepare(kernel, ALL_STAGE_KINDS)).patchLhs !== undefined;
  const untestedGather = async () => isPatches(problem.lhs) && verdicts.get(gathering) !== 'passed' && (await gathers());
  if (verdicts.get(kernel.id) === 'passed' && !(await untestedGather())) return kernel;
  verdicts.set(kernel.id, 'testing');
  let gathered = false;
  const result = await runSelfTest(
    async (q) => {
      // Compiled for every stage kind, so the pipeline the self-test passes is the one later calls run.
      await r.prepare(kernel, ALL_STAGE_KINDS);
      // The kernel itself, by its id: a table's kernel may share its id with the registry's own.
      const run = await runGemm(r, { ...choice, kernels: [kernel, ...(choice.kernels ?? [])], force: kernel.id }, q, undefined, true);
      gathered ||= run.ran.patchesGathered;
      try {
        return await run.result!;
      } finally {
        r.pool.release(run.dst.buffer);
      }
    },
    PACK_FORMATS[kernelFormats(kernel).rhs].valueBits, // a '-u4' kernel: its 4-bit problems
  );
  if (result.untested) {
    // This context's limits (or a lack of memory) kept the self-test from running: no verdict for the
    // device, and this context does without the kernel.
    verdicts.delete(kernel.id);
    r.untested.add(kernel.id);
    choice.warn(`qgemm: kernel ${kernel.id} could not run its exactness self-test here and is not used by this context (${result.detail})`);
    return kernelFor(r, choice, p, problem, force);
  }
  verdicts.set(kernel.id, result.ok ? 'passed' : 'failed');
  if (result.ok && gathered) verdicts.set(gathering, 'passed');
  if (result.ok) return kernel;
  choice.warn(
    `qgemm: kernel ${kernel.id} failed its exactness self-test on ${r.summary.description || r.summary.architecture} and is disabled on this device (${result.detail})`,
  );
  return kernelFor(r, choice, p, problem, force);
}

/**
 * Whether a kernel that can read an unpacked lhs (PreparedGemmKernel.rawLhs) may read this one: an 8-bit
 * CPU array or GpuMatrix (not prepacked, not a convolution's patches, not requantized) whose bytes fit
 * one storage binding. (Where compiling is slow the kernel offers no rawLhs form: src/kernels/gemv/kernel.ts.)
 */
function rawLhsReadable(lhs: GpuGemmProblem['lhs'], p: NormalizedProblem, limits: PlanLimits): boolean {
  if (isPacked(lhs) || isPatches(lhs) || requantizationOf(p.bitDepth, 'lhs', p.K).bits !== 8) return false;
  const bytes = isGpuMatrix(lhs) ? lhs.buffer.size : roundUp(lhs.data.byteLength, 4);
  return bytes <= limits.maxStorageBufferBindingSize;
}

/**
 * Packs what needs packing and runs the chosen kernel with the fused epilogue, all in one submission;
 * with `readback`, also copies dst to a mapped buffer (`result` resolves with the data). The caller
 * holds the device.
 */
export async function runGemm(
  r: DeviceResources,
  choice: KernelChoice,
  problem: GpuGemmProblem,
  timing: GemmTiming | undefined,
  readback: boolean,
  call: CallOptions = {},
): Promise<GemmRun> {
  r.checkAlive();
  const { trace, plan } = call;
  const pool = plan?.pool ?? r.pool;
  const staging = plan?.staging ?? r.staging;
  const { device } = r;
  // A convolution's lhs by its input: checked here, its patches packed below in this call's own pass.
  const patches = problem.lhs && typeof problem.lhs === 'object' && isPatches(problem.lhs) ? problem.lhs : null;
  if (problem.rhs && typeof problem.rhs === 'object' && isPatches(problem.rhs)) {
    throw new InputError('rhs', 'convolution patches (input, geometry, zeroPoint) are an lhs');
  }
  const checked: CheckedPatches | null = patches ? checkPatches(r, patches, 'lhs') : null;
  const lhsShape = checked
    ? { data: checked.type === 'int8' ? new Int8Array(0) : new Uint8Array(0), rows: checked.rows, cols: checked.cols }
    : shapeOf(problem.lhs as GpuOperandInput, 'lhs', r);
  const rhsShape = shapeOf(problem.rhs, 'rhs', r, call.rhsChecked);
  const p = normalizeProblem({ ...problem, lhs: lhsShape, rhs: rhsShape }, { shapesOnly: true });
  const { M, N, K } = p;
  if (patches && requantizationOf(p.bitDepth, 'lhs', K).bits !== 8) {
    throw new InputError('bitDepth.lhs', 'convolution patches are packed at 8 bits: give 8, or the patch matrix as a plain lhs');
  }
  // A prepacked operand serves only GEMMs that ask for its bits (and rounding): checked before a kernel is
  // chosen for its format, so that the error names the operand.
  for (const side of ['lhs', 'rhs'] as const) {
    const x = problem[side];
    const requant = requantizationOf(p.bitDepth, side, K);
    if (x && typeof x === 'object' && isPacked(x) && (x.bits !== requant.bits || (x.bits !== 8 && x.rounding !== requant.rounding))) {
      throw new InputError(
        side,
        `prepacked with ${x.bits} bits (${x.rounding}), but this GEMM asks for ${requant.bits} bits (${requant.rounding})`,
      );
    }
  }
  const kernel = await kernelFor(r, choice, p, problem);
  const formats: Record<'lhs' | 'rhs', PackFormat> = {
    lhs: PACK_FORMATS[kernelFormats(kernel).lhs],
    rhs: PACK_FORMATS[kernelFormats(kernel).rhs],
  };
  if (patches && formats.lhs.valueBits !== 8) throw new Error(`internal: ${kernel.id} reads lhs as ${formats.lhs.id}, patches are 8-bit`);
  // An input above one storage binding: a LimitExceededError before anything is acquired.
  const patchDispatches = patches && checked ? patchPlan(patches, checked, formats.lhs, r.limits) : null;
  const layout = dstLayout(p);
  const packedBytes = (side: 'lhs' | 'rhs', outer: number) => roundUp(outer, formats[side].rowAlign) * packedRowBytes(K, formats[side]);
  // A convolution's lhs is checked once it is known whether the kernel gathers it (no packed lhs then).
  if (!patches) r.checkBuffer(packedBytes('lhs', M), 'packed lhs');
  r.checkBuffer(packedBytes('rhs', N), 'packed rhs');
  r.checkBuffer(layout.bytes, 'dst');
  const dispatches = kernel.plan(p, r.limits, r.caps);
  const stages = encodeStages(p);
  const pooled: GPUBuffer[] = [];
  let lhsSource: GPUBuffer | undefined;
  const ran: LastRun = { kernel: kernel.id, packDispatches: 0, gemmDispatches: dispatches.length, patchesGathered: false };
  let dst: GPUBuffer | null = null;
  const dstMatrix = (): GpuMatrix => ({ buffer: dst!, rows: M, cols: N, order: p.dstOrder, dtype: p.dstType, stride: layout.stride });
  let result: Promise<GemmResult> | undefined;
  try {
    // Only the pipelines this call runs: the kernel for its stage kinds, the pack entry of each unpacked operand.
    const packEntries = (side: 'lhs' | 'rhs') => {
      const x = problem[side];
      return isPacked(x) || x === patches ? [] : [packEntry(x as Operand | GpuMatrix, side, formats[side], r.caps)];
    };
    const [base, rhsPack] = await Promise.all([r.prepare(kernel, stages.kinds), packPipelines(device, packEntries('rhs'))]);
    // Patches that are the input itself (a 1x1 filter at stride 1, or one the size of the image; no padding),
    // for a kernel that reads that matrix unpacked (the gemv: no pack dispatch, and no gather to compute)
    // or that does not gather patches (it packs the matrix as any lhs): a plain lhs.
    const asMatrix = patches && checked ? patchesAsMatrix(patches, checked) : null;
    const plain = asMatrix && (!base.patchLhs || (base.rawLhs && rawLhsReadable(asMatrix, p, r.limits))) ? asMatrix : null;
    if (plain) return runGemm(r, choice, { ...problem, lhs: plain }, timing, readback, call);
    // A kernel that gathers a convolution's lhs from its input itself (the gemv, tiled and split-K kernels) skips the patch pack.
    const gather = patches && base.patchLhs && (base.gathers?.(dispatches, r.limits) ?? true) ? await base.patchLhs() : null;
    if (patches && !gather) r.checkBuffer(packedBytes('lhs', M), 'packed lhs');
    const patchPipe = patches && !gather ? await patchPipeline(device) : null;
    // A kernel that reads an unpacked 8-bit lhs itself (the gemv) skips the lhs pack pass.
    const raw =
      base.rawLhs && rawLhsReadable(problem.lhs, p, r.limits)
        ? await base.rawLhs(strides(problem.lhs as Operand | GpuMatrix, 'lhs').depthStride === 1)
        : null;
    const prepared = raw ?? gather ?? base;
    const pipelinesForPack = { ...rhsPack, ...(await packPipelines(device, raw ? [] : packEntries('lhs'))) };
    await runInErrorScope(
      device,
      () => {
        dst = pool.acquire(layout.bytes, 'dst');
        const stagesBuffer = pool.acquire(stages.data.byteLength, 'stages');
        pooled.push(stagesBuffer);
        device.queue.writeBuffer(stagesBuffer, 0, stages.data);

        // Operands: packed ones as they are, the others packed in this same submission.
        const jobs: PackJob[] = [];
        let rawLhs: RawLhs | undefined;
        let patchLhs: PatchLhs | undefined;
        const patchJobs: PatchJob[] = [];
        const operand = (side: 'lhs' | 'rhs', x: GpuOperandInput | PatchOperand, outer: number) => {
          const requant = requantizationOf(p.bitDepth, side, K);
          if (isPacked(x)) return { packed: x.packed, sums: x.sums }; // its bits checked above
          if (side === 'lhs' && raw) {
            const src = operandSource(device, x as Operand | GpuMatrix, side, { pool, pooled });
            rawLhs = {
              buffer: src.buffer,
              bytes: src.bytes,
              outerStride: src.outerStride,
              depthStride: src.depthStride,
              signed: src.signed,
            };
            lhsSource = src.buffer;
            return { packed: src.buffer, sums: src.buffer }; // unread: the kernel reads rawLhs
          }
          if (x === patches && checked && gather) {
            const input = patchInput(device.queue, patches, checked, { pool, pooled });
            patchLhs = { ...input, geometry: patches.geometry, signed: checked.type === 'int8', zeroPoint: patches.zeroPoint };
            ran.patchesGathered = true;
            lhsSource = input.buffer;
            return { packed: r.unreadBuffer(), sums: r.unreadBuffer() }; // unread: the kernel gathers patchLhs and sums its rows
          }
          const format = formats[side];
          const packed = pool.acquire(packedBytes(side, outer), `${side} packed`);
          const sums = pool.acquire(roundUp(outer, format.rowAlign) * 4, `${side} sums`);
          pooled.push(packed, sums);
          if (x === patches && checked && patchDispatches) {
            const job = patchJob(device.queue, patches, checked, format, patchDispatches, { packed, sums }, { pool, pooled });
            patchJobs.push(job);
            lhsSource = job.src; // the input, where a plan writes it on replay
            return { packed, sums };
          }
          jobs.push(
            packOperand(device, x as Operand | GpuMatrix, side, format, requant, r.limits, { packed, sums }, { pool, pooled }, r.caps),
          );
          return { packed, sums };
        };
        trace?.mark('validate');
        const lhs = operand('lhs', problem.lhs, M);
        lhsSource ??= jobs.find((j) => j.side === 'lhs')?.src.buffer;
        trace?.mark('lhsWrite');
        const rhs = operand('rhs', problem.rhs, N);
        const operands: PackedPair = { lhs: lhs.packed, rhs: rhs.packed, rowSums: lhs.sums, colSums: rhs.sums, rawLhs, patchLhs };

        ran.packDispatches = [...jobs, ...patchJobs].reduce((n, j) => n + j.plan.length, 0);
        const slab = (plan?.uniforms ?? r.uniforms).slab();
        const encoder = device.createCommandEncoder({ label: 'qgemm gemm' });
        const realPass = r.staging.beginPass(encoder, !!timing && r.timestamps);
        const pass = plan ? recordingPass(realPass, plan.commands) : realPass;
        for (const job of patchJobs) encodePatches(device, pass, patchPipe!, job, slab);
        for (const job of jobs) encodePack(device, pass, pipelinesForPack, job, r.xorshiftBuffer(), slab);
        const workspace = (bytes: number) => {
          r.checkBuffer(bytes, 'workspace');
          // Bound whole (split-K: every slice's raw sums, and a gathered lhs's row sums behind them).
          if (bytes > r.limits.maxStorageBufferBindingSize) {
            throw new LimitExceededError(
              'maxStorageBufferBindingSize',
              `split-K workspace needs ${bytes} bytes, above a storage binding (${r.limits.maxStorageBufferBindingSize})`,
            );
          }
          const b = pool.acquire(bytes, 'workspace');
          pooled.push(b);
          return b;
        };
        prepared.encode({
          device,
          pass,
          shape: p,
          dispatches,
          operands,
          dst: dst!,
          epilogue: { values: epilogueValues(p, stages, layout.stride), stages: stagesBuffer },
          uniforms: slab,
          workspace,
        });
        const times = r.staging.endPass(encoder, realPass);
        const copied = readback ? staging.copy(encoder, dstMatrix()) : null;
        slab.upload(device.queue);
        const commands = encoder.finish();
        trace?.mark('encode');
        device.queue.submit([commands]);
        trace?.mark('submit');
        if (timing) timing.gpuMs = null;
        const gpuMs = times ? times() : null;
        if (copied) {
          const done = trace ? device.queue.onSubmittedWorkDone().then(() => trace.mark('wait')) : null;
          result = Promise.all([done?.then(() => copied(() => trace?.mark('map'))) ?? copied(), gpuMs]).then(([data, ms]) => {
            if (timing && ms !== null) timing.gpuMs = ms;
            r.checkAlive();
            return data;
          });
          result.catch(() => undefined); // awaited by gemm(); never an unhandled rejection meanwhile
        } else if (gpuMs && timing) {
          // gemmOnGpu: the caller awaits the call, so the GPU time is known when it resolves.
          return gpuMs.then((ms) => {
            timing.gpuMs = ms;
          });
        }
      },
      `gemm ${M}x${N}x${K}`,
    );
  } catch (e) {
    if (dst && !plan) r.release(dst);
    throw await r.lostOr(e);
  } finally {
    if (!plan) for (const b of pooled) r.release(b); // a plan's buffers stay with the plan
  }
  r.checkAlive();
  return { dst: dstMatrix(), result, ran, lhsSource };
}
