// Code that runs INSIDE the benchmark's Chrome page (bench/impls/chrome.ts serves it and calls these
// through page.evaluate). Puppeteer sends a function's source text, so each function here is
// self-contained: it reaches this project's browser bundle (dist/browser/qgemm.js) as `window.qgemm`,
// tfjs as `window.tf` (the tfjs-core and tfjs-backend-webgpu UMD bundles), and three helpers injected
// from Node by source: __gen (bench/problems.ts generateOperands: the same operands as in Node),
// __hash (hashBytes) and __moreReps (bench/timing.ts moreReps: the same repeat policy). Timing happens
// in the page, with the page's performance.now(), so no DevTools round trip is inside a timed region.

import type { RepeatPolicy } from './timing.ts';

/** The page's HTML: the tfjs UMD bundles (when available) and qgemm's ES module as window globals. */
export function pageHtml(withTfjs: boolean): string {
  return `<!doctype html>
<html><head><meta charset="utf-8"><title>qgemm-webgpu bench</title><link rel="icon" href="data:,">
${withTfjs ? '<script src="./tf-core.js"></script>\n<script src="./tf-backend-webgpu.js"></script>' : ''}
<script type="module">
import * as qgemm from './qgemm.js';
window.qgemm = qgemm;
window.__ready = true;
</script></head><body>qgemm-webgpu benchmark page</body></html>`;
}

export interface PageCellArgs {
  impl: 'qgemm' | 'tfjs-webgpu-f32';
  seed: number;
  m: number;
  n: number;
  k: number;
  lhsZeroPoint: number;
  rhsZeroPoint: number;
  /** bench/problems.ts pipelineToJson: Int32Arrays as {int32: number[]}. */
  pipeline: Record<string, unknown>[];
  policy: RepeatPolicy;
}

export interface PageCellResult {
  walls: number[];
  gpus: (number | null)[];
  hashes: string[];
  /** qgemm: the last timed output's bytes, base64, and its dtype. */
  outputBase64?: string;
  dtype?: string;
  /** qgemm: the kernel the page's context ran last (ctx.lastRun.kernel), null where it does not say. */
  kernel?: string | null;
  error?: string;
}

export interface PageSetupResult {
  qgemm: { adapter: Record<string, unknown>; dot4: string; timestamps: boolean } | { error: string };
  tfjs: { backend: string; version: string; timestamps: boolean } | { error: string } | null;
}

/** In the page: create qgemm's GpuContext (timestamps on) and tfjs's webgpu backend, once. */
export async function pageSetup(): Promise<PageSetupResult> {
  // biome-ignore lint/suspicious/noExplicitAny: the page's globals (__ctx, __gen, ...) are set by this file, untyped
  const w = window as any;
  const out: PageSetupResult = { qgemm: { error: 'not tried' }, tfjs: null };
  try {
    w.__ctx = await w.qgemm.GpuContext.create({ timestamps: true });
    const s = w.__ctx.summary;
    out.qgemm = {
      adapter: { vendor: s.vendor, architecture: s.architecture, description: s.description, device: s.device, isSoftware: s.isSoftware },
      dot4: w.__ctx.dot4,
      timestamps: w.__ctx.device.features.has('timestamp-query'),
    };
  } catch (e) {
    out.qgemm = { error: String((e as Error)?.message ?? e) };
  }
  if (w.tf) {
    try {
      const ok = await w.tf.setBackend('webgpu');
      await w.tf.ready();
      if (!ok || w.tf.getBackend() !== 'webgpu') throw new Error(`tf.setBackend('webgpu') gave ${w.tf.getBackend()}`);
      const device = w.tf.backend().device as GPUDevice;
      out.tfjs = { backend: w.tf.getBackend(), version: w.tf.version_core, timestamps: device.features.has('timestamp-query') };
    } catch (e) {
      out.tfjs = { error: String((e as Error)?.message ?? e) };
    }
  }
  return out;
}

/** In the page: warm-up and timed runs of one implementation at one shape. */
export async function pageRunCell(args: PageCellArgs): Promise<PageCellResult> {
  // biome-ignore lint/suspicious/noExplicitAny: the page's globals (__ctx, __gen, ...) are set by this file, untyped
  const w = window as any;
  const { m, n, k, policy } = args;
  const { lhs, rhs } = w.__gen(args.seed, m, n, k) as { lhs: Uint8Array; rhs: Uint8Array };
  const walls: number[] = [];
  const gpus: (number | null)[] = [];
  const hashes: string[] = [];
  let once: () => Promise<{ wallMs: number; gpuMs: number | null; bytes: Uint8Array | null; dtype?: string }>;
  if (args.impl === 'qgemm') {
    const pipeline = args.pipeline.map((stage) => {
      const s: Record<string, unknown> = {};
      for (const [key, value] of Object.entries(stage)) {
        s[key] =
          value && typeof value === 'object' && 'int32' in (value as object)
            ? Int32Array.from((value as { int32: number[] }).int32)
            : value;
      }
      return s;
    });
    const problem = {
      lhs: { data: lhs, rows: m, cols: k, order: 'row-major' },
      rhs: { data: rhs, rows: k, cols: n, order: 'row-major' },
      lhsZeroPoint: args.lhsZeroPoint,
      rhsZeroPoint: args.rhsZeroPoint,
      pipeline,
    };
    once = async () => {
      const timing = { gpuMs: null as number | null };
      const t0 = performance.now();
      const r = await w.__ctx.gemm(problem, timing);
      const wallMs = performance.now() - t0;
      return { wallMs, gpuMs: timing.gpuMs, bytes: new Uint8Array(r.data.buffer, r.data.byteOffset, r.data.byteLength), dtype: r.dtype };
    };
  } else {
    const tf = w.tf;
    const a32 = Float32Array.from(lhs, (v) => v - args.lhsZeroPoint);
    const b32 = Float32Array.from(rhs, (v) => v - args.rhsZeroPoint);
    const timestamps = (tf.backend().device as GPUDevice).features.has('timestamp-query');
    once = async () => {
      const t0 = performance.now();
      const a = tf.tensor2d(a32, [m, k]);
      const b = tf.tensor2d(b32, [k, n]);
      let c: { data(): Promise<Float32Array> } | undefined;
      const timing = await tf.time(() => {
        c = tf.matMul(a, b);
      });
      await c!.data();
      const wallMs = performance.now() - t0;
      tf.dispose([a, b, c]);
      return { wallMs, gpuMs: timestamps && typeof timing.kernelMs === 'number' ? timing.kernelMs : null, bytes: null };
    };
  }
  try {
    for (let i = 0; i < policy.warmup; i++) await once();
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
    const result: PageCellResult = { walls, gpus, hashes };
    if (args.impl === 'qgemm') result.kernel = w.__ctx.lastRun?.kernel ?? null;
    if (last.bytes) {
      let text = '';
      for (let i = 0; i < last.bytes.length; i += 0x8000) text += String.fromCharCode(...last.bytes.subarray(i, i + 0x8000));
      result.outputBase64 = btoa(text);
      result.dtype = last.dtype;
    }
    return result;
  } catch (e) {
    return { walls, gpus, hashes, error: String((e as Error)?.stack ?? e) };
  }
}
