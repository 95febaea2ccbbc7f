// This project in Node: WebGPU through Dawn (GpuContext, timestamps on; the wall time from calls that ask
// for no GPU time, so resolve no query, and the GPU time of the compute pass from separate timed calls, as
// onnxruntime's comes from a separate profiled session; a few traced calls give each step's share; and in
// `resident`, single calls after a pause, the decode loop's other case) in three modes, and the CPU path: the kernel `backend: 'cpu'` picks
// (src/kernels/registry.ts: WebAssembly SIMD on worker threads where it can, or QGEMM_KERNEL=<id>), timed
// per call from the GemmProblem to the dst array, normalization included. The GPU modes:
//   call:     ctx.gemm with both operands from the CPU: upload + pack both + gemm + output + readback;
//   resident: rhs (the weights) prepacked once outside the timing (ctx.prepack('rhs', ...)); each call
//             uploads lhs, packs it, runs gemm + output and reads dst back: the inference call;
//   device:   lhs also uploaded once (a GpuMatrix) and dst left on the GPU (ctx.gemmOnGpu): GPU work
//             plus submission. Each run's dst is read back after its timing, for verification.
// A convolution layer (ShapeData.conv) runs as the library's conv2d does on WebGPU: one ctx.gemm whose
// lhs is the NHWC input with its patch geometry (src/scheduler/patches.ts: the patches gathered from the
// input by the kernel's staging, or packed from it in the GEMM's own pass; no patch matrix in memory), against the filter (OHWI = the rhs
// [K, O] column-major) with the output stages conv2d derives;
// call: the filter packed inside the GEMM on every call (conv2d's own path); resident: the filter
// prepacked once outside the timing; device: the filter prepacked and the NHWC input uploaded once (a
// GpuMatrix [H * W, C] read where it is), dst left on the GPU (ctx.gemmOnGpu).
// The kernel that ran comes from the context (kernelOf, the one place that asks).

import { gemm } from '../../src/api.ts';
import { readyCpuCaps } from '../../src/kernels/cpu-caps.ts';
import { prepackCpu, wasmRunStats } from '../../src/kernels/cpu-wasm/kernel.ts';
import { selectCpuKernel } from '../../src/kernels/registry.ts';
import { normalizeProblem } from '../../src/problem/problem.ts';
import type { GemmTiming, GemmTrace, GpuContext, GpuMatrix, PackedOperand } from '../../src/scheduler/context.ts';
import { roundUp } from '../../src/gpu/plan.ts';
import type { GemmResult, Operand } from '../../src/types.ts';
import { bitDepthFor, hashBytes, problemFor, type ConvData, type ShapeData } from '../problems.ts';
import { qgemmCall } from '../qgemm-call.ts';
import { afterPause, measure, type RepeatPolicy, stats } from '../timing.ts';
import { bytesOf } from '../verify.ts';
import type { CellOutcome, Mode, RhsBits, Runner, TraceSummary } from './types.ts';

/**
 * The id of the kernel a context ran last (ctx.lastRun.kernel, src/kernels/registry.ts), null where it
 * does not say. The one place that asks (the Chrome page hands back its context's lastRun.kernel).
 */
export function kernelOf(ctx: { lastRun?: { kernel?: string | null } }): string | null {
  return ctx.lastRun?.kernel ?? null;
}

/** One call of a cell: untimed (no timestamp query), timed (`timing` receives its GPU time) or traced. */
type Once = (opts: { timing?: GemmTiming; onTrace?: (t: GemmTrace) => void }) => Promise<{ result: GemmResult; wallMs: number }>;

/** Traced calls per cell (after the timed ones). */
const TRACE_CALLS = 5;

/** The median of each step over `traces`, or undefined without any. */
function summarize(traces: GemmTrace[]): TraceSummary | undefined {
  if (!traces.length) return undefined;
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[xs.length >> 1];
  const steps = traces[0].steps.map(({ step }, i) => ({ step, ms: median(traces.map((t) => t.steps[i].ms)) }));
  const plans = [...new Set(traces.map((t) => t.plan))].join('/');
  return { calls: traces.length, plan: plans, steps, totalMs: median(traces.map((t) => t.totalMs)) };
}

/**
 * A qgemm WebGPU cell: the wall time from untimed calls (measure(): warm-up, then calls back to back);
 * the GPU time from policy.minReps separate calls with timestamp queries (as onnxruntime's comes from a
 * separate profiled session); then TRACE_CALLS traced calls (the trace of the row); and with `paused`,
 * single calls after a pause (the decode loop's other case).
 */
async function qgemmCell(
  policy: RepeatPolicy,
  once: Once,
  { timestamps = false, traced = false, paused = false } = {},
): Promise<CellOutcome> {
  const hashes: string[] = [];
  const m = await measure(
    policy,
    async () => {
      const { result, wallMs } = await once({});
      return { timing: { wallMs, gpuMs: null }, output: result };
    },
    (out) => hashes.push(hashBytes(bytesOf(out.data))),
  );
  const gpus: number[] = [];
  for (let i = 0; timestamps && i < policy.minReps; i++) {
    const timing: GemmTiming = { gpuMs: null };
    await once({ timing });
    if (timing.gpuMs !== null) gpus.push(timing.gpuMs);
  }
  const traces: GemmTrace[] = [];
  for (let i = 0; traced && i < TRACE_CALLS; i++) await once({ onTrace: (t) => traces.push(t) });
  const trace = summarize(traces);
  const pauseHashes: string[] = [];
  const pause = paused
    ? await afterPause(policy, async () => {
        const { result, wallMs } = await once({});
        pauseHashes.push(hashBytes(bytesOf(result.data)));
        return wallMs;
      })
    : undefined;
  return {
    wall: m.wall,
    warm: m.warm,
    gpu: gpus.length && gpus.length === policy.minReps ? stats(gpus) : null,
    output: { data: m.last.data, dtype: m.last.dtype },
    hashes,
    ...(trace ? { trace } : {}),
    ...(pause ? { afterPause: pause, afterPauseHashes: pauseHashes } : {}),
  };
}

/** lhs uploaded once into a storage buffer of the context's device. */
function uploadMatrix(ctx: GpuContext, x: Operand): GpuMatrix {
  const bytes = new Uint8Array(x.data.buffer, x.data.byteOffset, x.data.byteLength);
  const buffer = ctx.device.createBuffer({
    size: roundUp(Math.max(bytes.length, 4), 4),
    usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_DST,
    label: 'bench lhs',
  });
  const padded = new Uint8Array(buffer.size);
  padded.set(bytes);
  ctx.device.queue.writeBuffer(buffer, 0, padded);
  return {
    buffer,
    rows: x.rows,
    cols: x.cols,
    order: x.order ?? 'row-major',
    dtype: x.data instanceof Int8Array ? 'int8' : 'uint8',
    stride: x.order === 'row-major' ? x.cols : x.rows,
  };
}

const MODE_DETAILS: Record<Mode, string> = {
  call: 'ctx.gemm: both operands uploaded and packed on every call',
  resident:
    "rhs prepacked once (ctx.prepack('rhs')), outside the timing; each call uploads lhs, packs it, runs gemm + output, reads dst back",
  device:
    'lhs uploaded once and rhs prepacked once, outside the timing; ctx.gemmOnGpu leaves dst on the GPU (read back after the timing, for verification)',
};

const CONV_MODE_DETAILS: Record<Mode, string> = {
  call: 'each call is one ctx.gemm that packs the filter and takes the patches from the NHWC input in its own pass (gathered by the kernel, else packed first), as conv2d does',
  resident:
    'the filter prepacked once (ctx.prepack), outside the timing; each call is one ctx.gemm that takes the patches from the NHWC input in its own pass (gathered by the kernel, else packed first), runs gemm + output, reads dst back',
  device:
    'the filter prepacked and the NHWC input uploaded once (a GpuMatrix), outside the timing; each call is one ctx.gemmOnGpu that takes the patches from it in its own pass (gathered by the kernel, else packed first) and leaves dst on the GPU (read back after the timing, for verification)',
};

/** Why a runner with `rhsBits`-bit weights runs no convolution layer, or true where it runs them. */
function convolutionIn(rhsBits: RhsBits): true | string {
  if (rhsBits !== 8) return 'convolution layers run with 8-bit filters only';
  return true;
}

/**
 * A convolution layer, as the library's conv2d runs it on a GpuContext: per call, one ctx.gemm whose lhs
 * is the input with its patch geometry (the patches packed in the GEMM's pass) and whose rhs is the filter
 * (prepacked once for `resident` and `device`). Its GPU time is that one pass (timestamp queries): the
 * patch pack, the GEMM and its output stages (in `call` the filter's pack too).
 */
async function convCell(ctx: GpuContext, conv: ConvData, mode: Mode, policy: RepeatPolicy): Promise<CellOutcome> {
  const packed = mode !== 'call' ? await ctx.prepack('rhs', conv.gemm.rhs) : null;
  const g = conv.geometry;
  const input =
    mode === 'device'
      ? uploadMatrix(ctx, { data: conv.input, rows: g.batch * g.height * g.width, cols: g.channels, order: 'row-major' })
      : conv.input;
  try {
    const timestamps = ctx.device.features.has('timestamp-query');
    const lhs = { input, geometry: conv.geometry, zeroPoint: conv.params.input.zeroPoint };
    const problem = { ...conv.gemm, lhs, rhs: packed ?? conv.gemm.rhs };
    const outcome = await qgemmCell(policy, ({ timing, onTrace }) => qgemmCall(ctx, mode, problem, timing, { onTrace }), {
      timestamps,
      traced: mode !== 'device',
    });
    return {
      ...outcome,
      kernel: kernelOf(ctx),
      ...(packed ? { rhsFormat: packed.packFormat } : {}),
      gpuNote: timestamps
        ? `GPU time = the one pass of ${ctx.lastRun.patchesGathered ? 'the GEMM, which gathers the patches from the input itself,' : 'the patch pack, the GEMM'} and its output stages, from ${policy.minReps} separate timed calls; the wall time from untimed calls`
        : 'the device has no timestamp-query',
    };
  } finally {
    packed?.destroy();
    if (!(input instanceof Uint8Array)) input.buffer.destroy();
  }
}

/**
 * rhsBits 4 (--rhs-bits): the GEMM runs with bitDepth {lhs: 8, rhs: 4} (bench/problems.ts bitDepthFor),
 * the rhs prepacked with that bitDepth (two values per byte where the adapter has dot4); `resident` and
 * `device` only (a prepacked rhs is what stores the weights at their bit depth).
 */
export function qgemmWebgpuNode(ctx: GpuContext, adapter: string, computes: string, mode: Mode, rhsBits: RhsBits = 8): Runner {
  if (rhsBits !== 8 && mode === 'call') throw new Error(`${rhsBits}-bit weights need a prepacked rhs: mode resident or device, not call`);
  const timestamps = ctx.device.features.has('timestamp-query');
  const bits = rhsBits === 8 ? '' : `; weights requantized to ${rhsBits} bits (lhs 8, nearest rounding) in ctx.prepack`;
  return {
    impl: 'qgemm',
    backend: 'webgpu',
    runtime: 'node',
    mode,
    rhsBits,
    adapter,
    computes: rhsBits === 8 ? computes : `${computes}, ${rhsBits}-bit weights`,
    details: `Dawn (dawn.node), dot4 ${ctx.dot4}, ${MODE_DETAILS[mode]}${bits}; wall time from calls without timestamp queries; GPU time from timestamp queries in separate calls: ${timestamps ? 'yes' : 'no'}; convolution layers: ${CONV_MODE_DETAILS[mode]}`,
    convolution: convolutionIn(rhsBits),
    run: async (data: ShapeData, policy) => {
      if (data.conv) {
        if (rhsBits !== 8) throw new Error(String(convolutionIn(rhsBits)));
        return convCell(ctx, data.conv, mode, policy);
      }
      const problem = problemFor(data.problem, rhsBits);
      let packed: PackedOperand | null = null;
      let lhs: GpuMatrix | null = null;
      try {
        if (mode !== 'call') packed = await ctx.prepack('rhs', problem.rhs, bitDepthFor(rhsBits));
        if (mode === 'device') lhs = uploadMatrix(ctx, problem.lhs);
        const input = { ...problem, ...(packed ? { rhs: packed } : {}), ...(lhs ? { lhs } : {}) };
        const outcome = await qgemmCell(policy, ({ timing, onTrace }) => qgemmCall(ctx, mode, input, timing, { onTrace }), {
          timestamps,
          traced: mode !== 'device',
          paused: mode === 'resident' && policy.afterPauseRows !== false,
        });
        return {
          ...outcome,
          kernel: kernelOf(ctx),
          ...(packed ? { rhsFormat: packed.packFormat } : {}),
          gpuNote: timestamps
            ? `GPU time from ${policy.minReps} separate calls with timestamp queries; the wall time from calls without any`
            : 'the device has no timestamp-query',
        };
      } finally {
        packed?.destroy();
        lhs?.buffer.destroy();
      }
    },
    close: async () => undefined,
  };
}

const KERNEL_DETAILS: Record<string, string> = {
  'cpu-wasm-relaxed': 'WebAssembly relaxed SIMD (8-bit dot products, proven exact here), 6x8 micro-kernel',
  'cpu-wasm-simd':
    'WebAssembly SIMD, operands widened to 16 bits (i32x4.dot_i16x8_s), 4x8 micro-kernel (up to 8 rows: direct 1x32/2x16/4x8, rhs unpacked)',
  'cpu-js': 'JavaScript: pack with row/column sums, 2x2 register-blocked dot products; one thread',
};

/**
 * The CPU path: `call` runs the kernel the registry picks on both operands; `resident` prepacks the rhs
 * once (prepackCpu, outside the timing) and each call packs only the lhs (where WebAssembly SIMD exists).
 */
export async function qgemmCpuNode(computes: string, mode: 'call' | 'resident' = 'call', rhsBits: RhsBits = 8): Promise<Runner> {
  if (rhsBits !== 8 && mode !== 'resident') throw new Error(`${rhsBits}-bit weights need a prepacked rhs: mode resident, not call`);
  const caps = await readyCpuCaps();
  const kernelFor = (data: ShapeData) => selectCpuKernel(caps, normalizeProblem(data.problem));
  const probe = makeProbe();
  const id = kernelFor(probe).id;
  const threads = id === 'cpu-js' ? 1 : caps.threads;
  const resident = mode === 'resident' && caps.wasmSimd;
  const bits =
    rhsBits === 8
      ? ''
      : `; weights requantized to ${rhsBits} bits (lhs 8, nearest rounding) and stored two per byte by prepackCpu (the 4-bit kernel)`;
  return {
    impl: 'qgemm',
    backend: 'cpu',
    runtime: 'node',
    mode,
    rhsBits,
    adapter: 'cpu',
    computes: rhsBits === 8 ? computes : `${computes}, ${rhsBits}-bit weights`,
    details:
      `${id}: ${KERNEL_DETAILS[id]}; ${resident ? 'rhs prepacked once (prepackCpu, outside the timing); lhs pack' : 'pack'}, GEMM and output stage ${id === 'cpu-js' ? 'in JavaScript' : `in WebAssembly on up to ${threads} thread(s)`}` +
      (id.startsWith('cpu-wasm') ? `; relaxed SIMD: ${caps.relaxedNote}; Node ${process.version}` : '') +
      bits,
    run: async (data, policy) => {
      if (mode === 'resident' && !resident) throw new Error('no WebAssembly SIMD here: nothing to prepack for');
      const problem = problemFor(data.problem, rhsBits);
      const packed = resident ? await prepackCpu(problem.rhs, bitDepthFor(rhsBits)) : null;
      const kernel = kernelFor(data);
      // The call's kernel time (wasmRunStats: pack, gemm and output calls on every thread, hand-off
      // included) next to its wall time: the rest is the call's own overhead.
      const kernelMs: number[] = [];
      const overheadMs: number[] = [];
      try {
        const cell = await qgemmCell(policy, async () => {
          const t0 = performance.now();
          const result = packed
            ? await gemm({ ...problem, rhs: packed }, { backend: 'cpu' })
            : await kernel.run(normalizeProblem(problem), {});
          const wallMs = performance.now() - t0;
          if (packed) {
            kernelMs.push(wasmRunStats.lastKernelMs);
            overheadMs.push(wallMs - wasmRunStats.lastKernelMs);
          }
          return { result, wallMs };
        });
        const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[xs.length >> 1];
        const k = kernelMs.length ? median(kernelMs) : null;
        return {
          ...cell,
          kernel: packed ? packed.kernel : kernel.id,
          gpuNote:
            k === null
              ? 'CPU row'
              : `CPU row; kernel ${k.toFixed(4)} ms median (WebAssembly calls on ${wasmRunStats.lastThreads} thread(s), driver ${wasmRunStats.lastDriver}), call overhead (wall - kernel, per call) ${(median(overheadMs) * 1000).toFixed(1)} µs median`,
        };
      } finally {
        packed?.destroy();
      }
    },
    close: async () => undefined,
  };
}

/** A one-element problem, to name the kernel in the row's details. */
function makeProbe(): ShapeData {
  const one = { data: new Uint8Array(1), rows: 1, cols: 1, order: 'row-major' as const };
  return { problem: { lhs: one, rhs: one } } as ShapeData;
}
