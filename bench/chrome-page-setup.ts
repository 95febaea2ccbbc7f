// The Chrome benchmark page's setup (bench/impls/chrome.ts serves the page and calls pageSetup once,
// through page.evaluate, before any cell of bench/chrome-page.ts): the page's HTML, which loads this
// project's browser bundle (dist/browser/qgemm.js) as `window.qgemm`, tfjs's UMD bundles as `window.tf`
// and onnxruntime-web's ES module as `window.ort`; then, in the page, qgemm's GpuContext (as `__ctx`),
// verifyDevice() where asked, the CPU caps, tfjs's webgpu backend and onnxruntime-web's two EPs, each
// tried once so that a row that cannot start says why. pageSetup is sent as source text, so it is
// self-contained.

/** The page's HTML: the tfjs UMD bundles and onnxruntime-web's module (when available) and qgemm's ES module as window globals. */
export function pageHtml(opts: { tfjs: boolean; ort: boolean }): string {
  return `<!doctype html>
<html><head><meta charset="utf-8"><title>qgemm-webgpu bench</title><link rel="icon" href="data:,">
${opts.tfjs ? '<script src="./tf-core.js"></script>\n<script src="./tf-backend-webgpu.js"></script>' : ''}
<script type="module">
import * as qgemm from './dist/browser/qgemm.js';
window.qgemm = qgemm;
${opts.ort ? "try { window.ort = await import('./ort/ort.webgpu.min.mjs'); } catch (e) { window.__ortError = String(e && e.message || e); }" : ''}
window.__ready = true;
</script></head><body>qgemm-webgpu benchmark page</body></html>`;
}

/** verifyDevice() in the page before any cell: on a hardware adapter ('hardware'), or on any ('always'); kernels: a subset (default all). */
export interface PageVerifyPlan {
  when: 'hardware' | 'always';
  kernels?: string[];
}

/** The page's verifyDevice() report, shortened (src/verify.ts VerifyReport), or why it could not run. */
export type PageVerifyResult =
  | {
      ok: boolean;
      device: string;
      ms: number;
      rows: { kernel: string; configuration: string; problems: number; mismatches: number; detail: string }[];
    }
  | { error: string };

export interface PageSetupResult {
  qgemm: { adapter: Record<string, unknown>; features: string[]; dot4: string; timestamps: boolean } | { error: string };
  cpu: { kernel: string; threads: number; wasmSimd: boolean; sharedMemory: boolean; relaxedNote: string } | { error: string };
  tfjs: { backend: string; version: string; timestamps: boolean } | { error: string } | null;
  ort: { version: string; numThreads: number; webgpu: boolean; webgpuError?: string } | { error: string } | null;
  crossOriginIsolated: boolean;
  hardwareConcurrency: number;
  /** verifyDevice() on the page's device (PageVerifyPlan), null where it did not run. */
  verify: PageVerifyResult | null;
}

/**
 * In the page: create qgemm's GpuContext (timestamps on), run verifyDevice() on its device where `verify`
 * asks (every GPU kernel forced over the exactness suite, the subgroup-matrix kernel at the adapter's own
 * configuration included, before any timed cell), read the CPU caps, start tfjs's webgpu backend and
 * onnxruntime-web, once.
 */
export async function pageSetup(verify: PageVerifyPlan | null = null): Promise<PageSetupResult> {
  // biome-ignore lint/suspicious/noExplicitAny: the page's globals (__ctx, __gen, ...) are set by this file, untyped
  const w = window as any;
  const err = (e: unknown) => String((e as Error)?.message ?? e);
  const out: PageSetupResult = {
    qgemm: { error: 'not tried' },
    cpu: { error: 'not tried' },
    tfjs: null,
    ort: null,
    crossOriginIsolated: self.crossOriginIsolated,
    hardwareConcurrency: navigator.hardwareConcurrency,
    verify: null,
  };
  try {
    w.__ctx = await w.qgemm.GpuContext.create({ timestamps: true });
    const s = w.__ctx.summary;
    out.qgemm = {
      adapter: {
        vendor: s.vendor,
        architecture: s.architecture,
        description: s.description,
        device: s.device,
        isSoftware: s.isSoftware,
        // The subgroup-matrix configurations the context read (adapter.info.subgroupMatrixConfigs, u8/i8 only):
        // empty where the feature or the configurations are missing, and then no tensor-core kernel runs.
        subgroupMatrix: w.__ctx.caps.subgroupMatrix,
      },
      features: [...w.__ctx.device.features].map(String).sort(),
      dot4: w.__ctx.dot4,
      timestamps: w.__ctx.device.features.has('timestamp-query'),
    };
  } catch (e) {
    out.qgemm = { error: err(e) };
  }
  if (verify && !('error' in out.qgemm) && (verify.when === 'always' || !out.qgemm.adapter.isSoftware)) {
    const t0 = performance.now();
    try {
      const report = await w.qgemm.verifyDevice({ device: w.__ctx.device, ...(verify.kernels ? { kernels: verify.kernels } : {}) });
      out.verify = {
        ok: report.ok,
        device: report.device,
        ms: performance.now() - t0,
        rows: report.rows.map((r: { kernel: string; configuration: string; problems: number; mismatches: number; detail: string }) => ({
          kernel: r.kernel,
          configuration: r.configuration,
          problems: r.problems,
          mismatches: r.mismatches,
          detail: r.detail,
        })),
      };
    } catch (e) {
      out.verify = { error: err(e) };
    }
  }
  try {
    const caps = await w.qgemm.readyCpuCaps();
    // The kernel the registry picks (src/kernels/registry.ts, first supported): relaxed SIMD, SIMD, JavaScript.
    w.__cpuKernel = caps.relaxedSimd ? 'cpu-wasm-relaxed' : caps.wasmSimd ? 'cpu-wasm-simd' : 'cpu-js';
    out.cpu = {
      kernel: w.__cpuKernel,
      threads: caps.threads,
      wasmSimd: caps.wasmSimd,
      sharedMemory: caps.sharedMemory,
      relaxedNote: caps.relaxedNote,
    };
  } catch (e) {
    out.cpu = { error: err(e) };
  }
  if (w.tf) {
    try {
      const ok = await w.tf.setBackend('webgpu');
      await w.tf.ready();
      if (!ok || w.tf.getBackend() !== 'webgpu') throw new Error(`tf.setBackend('webgpu') gave ${w.tf.getBackend()}`);
      const device = w.tf.backend().device as GPUDevice;
      out.tfjs = { backend: w.tf.getBackend(), version: w.tf.version_core, timestamps: device.features.has('timestamp-query') };
    } catch (e) {
      out.tfjs = { error: err(e) };
    }
  }
  if (w.__ortError) out.ort = { error: w.__ortError };
  else if (w.ort) {
    const ort = w.ort;
    try {
      // As many threads as qgemm's CPU kernel takes (onnxruntime-web's default is half the cores).
      ort.env.wasm.numThreads = self.crossOriginIsolated ? navigator.hardwareConcurrency : 1;
      ort.env.wasm.proxy = false;
      ort.env.logLevel = 'error';
      // A tiny MatMul on each EP: fail here (the rows then say why), not in the first cell.
      const tiny = w.__tinyModel as Uint8Array;
      const feed = { A: new ort.Tensor('float32', new Float32Array(32), [1, 32]) };
      const cpu = await ort.InferenceSession.create(tiny, { executionProviders: ['wasm'] });
      await cpu.run(feed);
      await cpu.release();
      let webgpu = true;
      let webgpuError: string | undefined;
      try {
        const gpu = await ort.InferenceSession.create(tiny, { executionProviders: ['webgpu'] });
        await gpu.run(feed);
        await gpu.release();
      } catch (e) {
        webgpu = false;
        webgpuError = err(e);
      }
      out.ort = {
        version: ort.env.versions?.web ?? ort.env.versions?.common ?? '?',
        numThreads: ort.env.wasm.numThreads,
        webgpu,
        webgpuError,
      };
    } catch (e) {
      out.ort = { error: err(e) };
    }
  }
  return out;
}
