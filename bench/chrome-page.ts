// Code that runs INSIDE the benchmark's Chrome page (bench/impls/chrome.ts serves it and calls these
// through page.evaluate). Puppeteer sends a function's source text, so each function here is
// self-contained: it reaches this project's browser bundle (dist/browser/qgemm.js) as `window.qgemm`,
// tfjs as `window.tf` (the tfjs-core and tfjs-backend-webgpu UMD bundles), onnxruntime-web as
// `window.ort` (its ES module, whose .wasm/.mjs files the same local server serves from node_modules),
// and helpers injected from Node by source: __gen (bench/problems.ts generateOperands: the same
// operands as in Node), __hash (hashBytes), __moreReps and __pausedCalls (bench/timing.ts: the same
// repeat policy and the same after-pause rule), __warmUntilSteady (src/tune-measure.ts: the same clock
// warm-up), and __qgemmCall (bench/qgemm-call.ts: one qgemm call in
// its mode, timed as in Node). The page's HTML and its one-time setup (qgemm's context
// as __ctx, tfjs, onnxruntime-web) are bench/chrome-page-setup.ts. Timing happens in the page, with the
// page's performance.now(), so no DevTools round trip is inside a timed region. The page is cross-origin
// isolated (COOP/COEP from the server), so qgemm's WebAssembly CPU kernel and onnxruntime-web's WASM EP
// run on worker threads. Each `resident` WebGPU GEMM row also makes the decode loop's after-pause calls.
//
// The modes are Node's (bench/README.md's table):
//   qgemm WebGPU  call: ctx.gemm with both operands; resident: rhs prepacked once (ctx.prepack('rhs'));
//                 device: lhs uploaded once too, ctx.gemmOnGpu leaves dst on the GPU (read back after the
//                 timing, for verification);
//   qgemm CPU     call: gemm(p, {backend: 'cpu'}); resident: rhs prepacked once (prepackCpu);
//   tfjs f32      call: both tensors per call, data(); resident: rhs a kept tensor; device: both kept,
//                 no readback (the backend's queue flushed and awaited);
//   onnxruntime-web WebGPU EP (`onnxruntime-web/webgpu`, ort.webgpu.min.mjs: the same C++ WebGPU EP as
//                 onnxruntime-node's, which runs MatMulNBits with 8- and 4-bit weights; the older JSEP
//                 build, ort.min.mjs, takes 2 and 4 bits only): weights as initializers (resident), each
//                 call feeds A and reads Y; GPU time from its profiler in a second, profiled session;
//   onnxruntime-web WASM EP MatMulInteger: call (A and B fed) and resident (B an initializer).
// A convolution layer (args.conv) runs as in Node: one ctx.gemm (device: ctx.gemmOnGpu) per call whose
// lhs is the NHWC input with its patch geometry (the patches gathered by the kernel, or packed in the
// GEMM's own pass), against the OHWI filter (the rhs [K, O] column-major; resident: prepacked once;
// device: the input also kept on the GPU, dst left there), in every mode, as tfjs's tf.conv2d in f32
// (input NHWC, filter HWIO).
// The input and the filter are __gen(seed, H*W, O*KH*KW, C)'s lhs and rhs (bench/problems.ts convOperands).

import type { PackFormatId } from '../src/pack/formats.ts';
import type { ConvLayer } from './shapes.ts';
import type { RepeatPolicy } from './timing.ts';

/** Who runs in a cell: qgemm on WebGPU or CPU, tfjs, onnxruntime-web's WebGPU or WASM EP. */
export type PageImpl = 'qgemm' | 'qgemm-cpu' | 'tfjs-webgpu-f32' | 'ort-webgpu' | 'ort-wasm';

export interface PageCellArgs {
  impl: PageImpl;
  mode: 'call' | 'resident' | 'device';
  seed: number;
  m: number;
  n: number;
  k: number;
  lhsZeroPoint: number;
  rhsZeroPoint: number;
  /** bench/problems.ts pipelineToJson: Int32Arrays as {int32: number[]}, Float32Arrays as {float32: number[]}. */
  pipeline: Record<string, unknown>[];
  policy: RepeatPolicy;
  /**
   * The decode loop's after-pause calls (resident WebGPU rows): policy.minReps single calls, each after
   * this many ms with nothing running (bench/timing.ts pausedCalls, injected as __pausedCalls); absent: none.
   */
  pauseMs?: number;
  /** onnxruntime rows: the model's URL on the page's server (bench/onnx-model.ts bytes). */
  model?: string;
  /** onnxruntime WebGPU rows: the profiled session's run count (GPU time); 0 = none. */
  profiledRuns?: number;
  /** qgemm WebGPU resident: 4 = the weights requantized to 4 bits in ctx.prepack (bench/problems.ts bitDepthFor). */
  rhsBits?: 4;
  /**
   * A convolution layer (bench/shapes.ts ConvLayer, batch 1) and its patch geometry (bench/problems.ts
   * convPatchGeometry); m x n x k is its GEMM, lhsZeroPoint the input's, rhsZeroPoint the filter's.
   */
  conv?: {
    layer: ConvLayer;
    geometry: Record<string, number>;
  };
}

export interface PageCellResult {
  walls: number[];
  gpus: (number | null)[];
  hashes: string[];
  /** qgemm: the last timed output's bytes, base64, and its dtype. */
  outputBase64?: string;
  dtype?: string;
  /** qgemm: the kernel that ran last (ctx.lastRun.kernel, or the CPU kernel's id), null where it does not say. */
  kernel?: string | null;
  /** With args.pauseMs: each after-pause call's wall time, and (qgemm) its output's hash. */
  pausedWalls?: number[];
  pausedHashes?: string[];
  /** Why gpus are null, where the page knows. */
  gpuNote?: string;
  /** qgemm resident/device: the layout of the prepacked rhs (PackedOperand.packFormat). */
  rhsFormat?: PackFormatId;
  /** onnxruntime-web WebGPU: the profiled session ran and printed its profile to the console. */
  profiled?: boolean;
  /** Runs of the profiled session before its `profiledRuns` (the warm-up: their profile events come first). */
  profiledWarm?: number;
  /** The clock warm-up before the timed runs, where the policy has one (bench/timing.ts Warmed). */
  warm?: { ms: number; steady: boolean };
  error?: string;
}

/** In the page: warm-up and timed runs of one implementation, in one mode, at one shape. */
export async function pageRunCell(args: PageCellArgs): Promise<PageCellResult> {
  // biome-ignore lint/suspicious/noExplicitAny: the page's globals (__ctx, __gen, ...) are set by this file, untyped
  const w = window as any;
  const { m, n, k, policy, mode } = args;
  const conv = args.conv;
  // A convolution layer: lhs = the NHWC input, rhs = the OHWI filter (convOperands); else the GEMM's operands.
  const { lhs, rhs } = (
    conv
      ? w.__gen(
          args.seed,
          conv.layer.height * conv.layer.width,
          conv.layer.outChannels * conv.layer.filterHeight * conv.layer.filterWidth,
          conv.layer.channels,
        )
      : w.__gen(args.seed, m, n, k)
  ) as { lhs: Uint8Array; rhs: Uint8Array };
  const walls: number[] = [];
  const gpus: (number | null)[] = [];
  const hashes: string[] = [];
  const result: PageCellResult = { walls, gpus, hashes };
  /** One call; `timed`: qgemm's GEMM rows ask for GPU time only then (its wall time comes from untimed calls). */
  type Once = (timed?: boolean) => Promise<{ wallMs: number; gpuMs: number | null; bytes: Uint8Array | null; dtype?: string }>;
  let once: Once;
  /** GPU time from policy.minReps separate timed calls after the wall-time ones (qgemm's GEMM rows). */
  let separateGpu = false;
  const cleanups: (() => unknown)[] = [];
  const asBytes = (d: ArrayBufferView) => new Uint8Array(d.buffer, d.byteOffset, d.byteLength);
  /** `bytes` in a storage buffer of the page's device (padded to 4), destroyed with the cell: a device-mode operand. */
  const uploadBytes = (device: GPUDevice, bytes: Uint8Array, label: string): GPUBuffer => {
    const buffer = device.createBuffer({
      size: Math.max(4, Math.ceil(bytes.length / 4) * 4),
      usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_DST,
      label,
    });
    const padded = new Uint8Array(buffer.size);
    padded.set(bytes);
    device.queue.writeBuffer(buffer, 0, padded);
    cleanups.push(() => buffer.destroy());
    return buffer;
  };
  // q - zeroPoint as f32 in a loop: Float32Array.from(q, fn) collects into a JS array first (out of heap at 11008^2).
  // As tfjs in Node (bench/impls/tfjs-node.ts): the wall time from plain calls, the kernel time from separate tf.time calls.
  const tfjsNote = (reps: number) => `kernel time from ${reps} separate tf.time calls; the wall time from plain calls`;
  const centered = (q: Uint8Array, zeroPoint: number) => {
    const out = new Float32Array(q.length);
    for (let i = 0; i < q.length; i++) out[i] = q[i] - zeroPoint;
    return out;
  };
  try {
    if (args.impl === 'qgemm' || args.impl === 'qgemm-cpu') {
      const pipeline = args.pipeline.map((stage) => {
        const s: Record<string, unknown> = {};
        for (const [key, value] of Object.entries(stage)) {
          s[key] =
            value && typeof value === 'object' && 'int32' in (value as object)
              ? Int32Array.from((value as { int32: number[] }).int32)
              : value && typeof value === 'object' && 'float32' in (value as object)
                ? Float32Array.from((value as { float32: number[] }).float32)
                : value;
        }
        return s;
      });
      // As bench/problems.ts bitDepthFor: 4-bit weights, lhs 8, nearest rounding.
      const bitDepth = args.rhsBits === 4 ? { lhs: 8, rhs: 4, rounding: 'nearest' } : undefined;
      const problem = {
        lhs: { data: lhs, rows: m, cols: k, order: 'row-major' },
        rhs: { data: rhs, rows: k, cols: n, order: 'row-major' },
        lhsZeroPoint: args.lhsZeroPoint,
        rhsZeroPoint: args.rhsZeroPoint,
        pipeline,
        ...(bitDepth ? { bitDepth } : {}),
      };
      if (args.impl === 'qgemm-cpu') {
        const packed = mode === 'resident' ? await w.qgemm.prepackCpu(problem.rhs) : null;
        if (packed) cleanups.push(() => packed.destroy());
        const input = packed ? { ...problem, rhs: packed } : problem;
        result.kernel = packed ? packed.kernel : w.__cpuKernel;
        const options = packed ? { backend: 'cpu' } : { backend: 'cpu', kernel: w.__cpuKernel };
        once = async () => {
          const t0 = performance.now();
          const r = await w.qgemm.gemm(input, options);
          const wallMs = performance.now() - t0;
          return { wallMs, gpuMs: null, bytes: asBytes(r.data), dtype: r.dtype };
        };
        result.gpuNote = 'CPU row';
      } else if (conv) {
        const ctx = w.__ctx;
        if (bitDepth) throw new Error('convolution layers run with 8-bit filters');
        const filter = { data: rhs, rows: k, cols: n, order: 'col-major' };
        const packed = mode === 'call' ? null : await ctx.prepack('rhs', filter);
        if (packed) {
          cleanups.push(() => packed.destroy());
          result.rhsFormat = packed.packFormat;
        }
        // device: the NHWC input kept on the GPU as a GpuMatrix [pixels, channels], read where it is, as a
        // Sequential's layer reads the previous layer's output; dst left on the GPU.
        let input: Uint8Array | Record<string, unknown> = lhs;
        if (mode === 'device') {
          const g = conv.geometry;
          const [rows, cols] = [g.batch * g.height * g.width, g.channels];
          input = {
            buffer: uploadBytes(ctx.device, lhs, 'bench conv input'),
            rows,
            cols,
            order: 'row-major',
            dtype: 'uint8',
            stride: cols,
          };
        }
        const patches = { input, geometry: conv.geometry, zeroPoint: args.lhsZeroPoint };
        // As the GEMM rows: the wall time from calls that ask for no GPU time (no timestamp query), the GPU
        // time from separate timed calls.
        const call = { ...problem, lhs: patches, rhs: packed ?? filter };
        once = async (timed) => {
          const timing = timed ? { gpuMs: null as number | null } : undefined;
          const { result: r, wallMs } = await w.__qgemmCall(ctx, mode, call, timing);
          if (separateGpu) result.gpuNote = convGpuNote(ctx.lastRun.patchesGathered);
          return { wallMs, gpuMs: timing?.gpuMs ?? null, bytes: asBytes(r.data), dtype: r.dtype };
        };
        // As in Node (bench/impls/qgemm-node.ts convCell): GPU time = the one pass of the GEMM with its patches.
        const convGpuNote = (gathered: boolean) =>
          `GPU time = the one pass of ${gathered ? 'the GEMM, which gathers the patches from the input itself,' : 'the patch pack, the GEMM'} and its output stages, from ${policy.minReps} separate calls with timestamp queries; the wall time from calls without any`;
        if (!ctx.device.features.has('timestamp-query')) result.gpuNote = 'the device has no timestamp-query';
        else {
          separateGpu = true;
          result.gpuNote = convGpuNote(false);
        }
      } else {
        const ctx = w.__ctx;
        if (bitDepth && mode === 'call') throw new Error('4-bit weights need a prepacked rhs: mode resident or device, not call');
        const packed = mode === 'call' ? null : await ctx.prepack('rhs', problem.rhs, bitDepth);
        if (packed) {
          cleanups.push(() => packed.destroy());
          result.rhsFormat = packed.packFormat;
        }
        let lhsMatrix: Record<string, unknown> | null = null;
        if (mode === 'device') {
          lhsMatrix = {
            buffer: uploadBytes(ctx.device, lhs, 'bench lhs'),
            rows: m,
            cols: k,
            order: 'row-major',
            dtype: 'uint8',
            stride: k,
          };
        }
        const input = { ...problem, ...(packed ? { rhs: packed } : {}), ...(lhsMatrix ? { lhs: lhsMatrix } : {}) };
        if (!ctx.device.features.has('timestamp-query')) result.gpuNote = 'the device has no timestamp-query';
        else {
          separateGpu = true;
          result.gpuNote = `GPU time from ${policy.minReps} separate calls with timestamp queries; the wall time from calls without any`;
        }
        once = async (timed) => {
          const timing = timed ? { gpuMs: null as number | null } : undefined;
          const { result: r, wallMs } = await w.__qgemmCall(ctx, mode, input, timing);
          return { wallMs, gpuMs: timing?.gpuMs ?? null, bytes: asBytes(r.data), dtype: r.dtype };
        };
      }
    } else if (args.impl === 'tfjs-webgpu-f32' && conv) {
      const tf = w.tf;
      const c = conv.layer;
      const x32 = centered(lhs, args.lhsZeroPoint);
      // OHWI [O, K] -> HWIO [K, O], less the zero point.
      const f32 = new Float32Array(k * n);
      for (let kk = 0; kk < k; kk++) for (let o = 0; o < n; o++) f32[kk * n + o] = rhs[o * k + kk] - args.rhsZeroPoint;
      const xShape = [1, c.height, c.width, c.channels];
      const fShape = [c.filterHeight, c.filterWidth, c.channels, c.outChannels];
      const backend = tf.backend();
      const timestamps = (backend.device as GPUDevice).features.has('timestamp-query');
      result.gpuNote = timestamps ? tfjsNote(policy.minReps) : 'the device has no timestamp-query';
      separateGpu = timestamps;
      const keptF = mode === 'call' ? null : tf.tensor4d(f32, fShape);
      const keptX = mode === 'device' ? tf.tensor4d(x32, xShape) : null;
      cleanups.push(() => tf.dispose([...(keptX ? [keptX] : []), ...(keptF ? [keptF] : [])]));
      once = async (timed) => {
        const t0 = performance.now();
        const x = keptX ?? tf.tensor4d(x32, xShape);
        const f = keptF ?? tf.tensor4d(f32, fShape);
        let y: { data(): Promise<Float32Array> } | undefined;
        const conv2d = () => {
          y = tf.conv2d(x, f, c.stride, c.padding === 'SAME' ? 'same' : 'valid');
        };
        const timing = timed ? await tf.time(conv2d) : (conv2d(), null);
        if (mode === 'device') {
          if (backend.commandEncoder) backend.submitQueue?.();
          await (backend.device as GPUDevice).queue.onSubmittedWorkDone();
        } else {
          await y!.data();
        }
        const wallMs = performance.now() - t0;
        tf.dispose([y, ...(keptX ? [] : [x]), ...(keptF ? [] : [f])]);
        return { wallMs, gpuMs: timestamps && typeof timing?.kernelMs === 'number' ? timing.kernelMs : null, bytes: null };
      };
    } else if (args.impl === 'tfjs-webgpu-f32') {
      const tf = w.tf;
      const a32 = centered(lhs, args.lhsZeroPoint);
      const b32 = centered(rhs, args.rhsZeroPoint);
      const backend = tf.backend();
      const timestamps = (backend.device as GPUDevice).features.has('timestamp-query');
      result.gpuNote = timestamps ? tfjsNote(policy.minReps) : 'the device has no timestamp-query';
      separateGpu = timestamps;
      const keptB = mode === 'call' ? null : tf.tensor2d(b32, [k, n]);
      const keptA = mode === 'device' ? tf.tensor2d(a32, [m, k]) : null;
      cleanups.push(() => tf.dispose([...(keptA ? [keptA] : []), ...(keptB ? [keptB] : [])]));
      once = async (timed) => {
        const t0 = performance.now();
        const a = keptA ?? tf.tensor2d(a32, [m, k]);
        const b = keptB ?? tf.tensor2d(b32, [k, n]);
        let c: { data(): Promise<Float32Array> } | undefined;
        const matMul = () => {
          c = tf.matMul(a, b);
        };
        const timing = timed ? await tf.time(matMul) : (matMul(), null);
        if (mode === 'device') {
          if (backend.commandEncoder) backend.submitQueue?.();
          await (backend.device as GPUDevice).queue.onSubmittedWorkDone();
        } else {
          await c!.data();
        }
        const wallMs = performance.now() - t0;
        tf.dispose([c, ...(keptA ? [] : [a]), ...(keptB ? [] : [b])]);
        return { wallMs, gpuMs: timestamps && typeof timing?.kernelMs === 'number' ? timing.kernelMs : null, bytes: null };
      };
    } else {
      const ort = w.ort;
      const wasm = args.impl === 'ort-wasm';
      const options = { executionProviders: [wasm ? 'wasm' : 'webgpu'], graphOptimizationLevel: 'all', logSeverityLevel: 3 };
      const feed = wasm
        ? () => ({
            A: new ort.Tensor('uint8', lhs, [m, k]),
            ...(mode === 'call' ? { B: new ort.Tensor('uint8', rhs, [k, n]) } : {}),
            a_zero_point: new ort.Tensor('uint8', Uint8Array.of(args.lhsZeroPoint), []),
            ...(mode === 'call' ? { b_zero_point: new ort.Tensor('uint8', Uint8Array.of(args.rhsZeroPoint), []) } : {}),
          })
        : (() => {
            const a = centered(lhs, args.lhsZeroPoint);
            return () => ({ A: new ort.Tensor('float32', a, [m, k]) });
          })();
      const session = await ort.InferenceSession.create(args.model, options);
      cleanups.push(() => session.release());
      result.gpuNote = wasm ? 'CPU row' : "onnxruntime-web's profile held no WebGPU kernel times";
      once = async () => {
        const t0 = performance.now();
        const out = await session.run(feed());
        const wallMs = performance.now() - t0;
        if (!out.Y || out.Y.dims[0] !== m || out.Y.dims[1] !== n)
          throw new Error(`onnxruntime-web returned ${out.Y?.type} [${out.Y?.dims}]`);
        for (const t of Object.values(out) as { dispose?(): void }[]) t.dispose?.();
        return { wallMs, gpuMs: null, bytes: null };
      };
    }
    for (let i = 0; i < policy.warmup; i++) await once();
    if (policy.warmRule) {
      const { ms, steady } = await w.__warmUntilSteady(async () => (await once()).wallMs, performance, policy.warmRule);
      result.warm = { ms, steady };
    }
    let total = 0;
    let last: { bytes: Uint8Array | null; dtype?: string } = { bytes: null };
    while (w.__moreReps(policy, walls.length, total)) {
      const r = await once();
      walls.push(r.wallMs);
      gpus.push(r.gpuMs);
      total += r.wallMs;
      if (r.bytes) hashes.push(w.__hash(r.bytes));
      last = r;
    }
    if (separateGpu) {
      gpus.length = 0;
      for (let i = 0; i < policy.minReps; i++) gpus.push((await once(true)).gpuMs);
    }
    // The decode loop's other case, as in Node (bench/timing.ts afterPause): single untimed calls, each
    // after a pause; qgemm's outputs hashed, to be checked against the back-to-back calls'.
    if (args.pauseMs !== undefined) {
      const pausedHashes: string[] = [];
      result.pausedWalls = await w.__pausedCalls(policy.minReps, args.pauseMs, async () => {
        const r = await once();
        if (r.bytes) pausedHashes.push(w.__hash(r.bytes));
        return r.wallMs;
      });
      if (pausedHashes.length) result.pausedHashes = pausedHashes;
    }
    if (args.impl === 'qgemm') result.kernel = w.__ctx.lastRun?.kernel ?? null;
    if (last.bytes) {
      let text = '';
      for (let i = 0; i < last.bytes.length; i += 0x8000) text += String.fromCharCode(...last.bytes.subarray(i, i + 0x8000));
      result.outputBase64 = btoa(text);
      result.dtype = last.dtype;
    }
    // onnxruntime-web WebGPU: GPU time from a second, profiled session of the same model (kept apart so
    // that profiling never slows the wall-time runs). Its WebGPU EP prints the profile to the console at
    // endProfiling(), one JSON event a line; the "Api" events are its kernels' timestamp-query times. Node
    // catches those lines (bench/impls/chrome.ts) and reads them as it reads onnxruntime-node's profile.
    if (args.impl === 'ort-webgpu' && args.profiledRuns) {
      const ort = w.ort;
      const a = centered(lhs, args.lhsZeroPoint);
      const profiled = await ort.InferenceSession.create(args.model, {
        executionProviders: ['webgpu'],
        graphOptimizationLevel: 'all',
        logSeverityLevel: 3,
        enableProfiling: true,
      });
      const runOnce = async () => {
        const out = await profiled.run({ A: new ort.Tensor('float32', a, [m, k]) });
        for (const t of Object.values(out) as { dispose?(): void }[]) t.dispose?.();
      };
      try {
        // Runs back to back first, as before the wall-time runs (the clocks rise); their events are sliced off.
        let warm = 0;
        if (policy.warmRule) {
          await w.__warmUntilSteady(
            async () => {
              const t0 = performance.now();
              await runOnce();
              warm++;
              return performance.now() - t0;
            },
            performance,
            policy.warmRule,
          );
        }
        for (let i = 0; i < args.profiledRuns; i++) await runOnce();
        await profiled.endProfiling();
        result.profiledWarm = warm;
      } finally {
        await profiled.release();
      }
      result.profiled = true;
    }
    return result;
  } catch (e) {
    return { walls, gpus, hashes, error: String((e as Error)?.stack ?? e) };
  } finally {
    for (const c of cleanups.reverse()) {
      try {
        await c();
      } catch {
        // best effort
      }
    }
  }
}
