// The Chrome runtime: headless Chromium driven by puppeteer-core (tools/chromium.ts, which holds the
// WebGPU flags), on a page served from 127.0.0.1 (a secure context, so navigator.gpu exists) by the
// bench's own loopback server, with COOP/COEP headers (cross-origin isolated: SharedArrayBuffer, so
// WebAssembly runs on worker threads). The page loads this project's browser bundle (dist/browser/),
// tfjs-core + tfjs-backend-webgpu's UMD bundles and onnxruntime-web's ES module with its .wasm/.mjs
// files, all from node_modules; nothing comes from the internet. Rows, in the modes of bench/README.md:
//   qgemm / webgpu / chrome       call, resident, device (every one verified, as in Node);
//   qgemm / cpu / chrome          call, resident (the WebAssembly kernel on the page's threads);
//   tfjs-webgpu-f32 / webgpu      call, resident, device;
//   onnxruntime-webgpu-* / chrome MatMul f32, MatMulNBits 8 and 4 bits on onnxruntime-web's WebGPU EP,
//                                 resident (weights as initializers; models from bench/onnx-model.ts,
//                                 served to the page as files);
//   onnxruntime-web-matmulinteger / cpu / chrome   MatMulInteger on its WASM EP, call and resident.
// Every resident WebGPU GEMM row (qgemm's and the peers') has an after-pause row beside it, as in Node:
// single calls, each after bench/timing.ts PAUSE_MS, made in the page (./chrome-outcome.ts).
// Convolution layers (shape.conv): qgemm WebGPU in every mode (one ctx.gemm or gemmOnGpu on the input, verified) and
// tfjs's conv2d f32 in every mode, as in Node; the other rows are GEMMs and do not run them.
// The in-page code is bench/chrome-page.ts.

import { execFileSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import {
  chromeProfile,
  chromiumArgs,
  launchChromium,
  launchNotes,
  openPage,
  serveStatic,
  type Browser,
  type ChromeProfile,
  type Page,
} from '../../tools/chromium.ts';
import { pageRunCell, type PageCellResult, type PageImpl } from '../chrome-page.ts';
import { pageHtml, pageSetup, type PageSetupResult, type PageVerifyPlan, type PageVerifyResult } from '../chrome-page-setup.ts';
import { matMulF32Model, matMulIntegerModel, matMulIntegerWeightsModel } from '../onnx-model.ts';
import { adapterSlug, repoRoot, rootRequire } from '../environment.ts';
import { LHS_ZERO_POINT, RHS_ZERO_POINT, generateOperands, hashBytes, pipelineToJson, type ShapeData } from '../problems.ts';
import { warmUntilSteady } from '../../src/tune-measure.ts';
import { moreReps, PAUSE_MS, pausedCalls, type RepeatPolicy } from '../timing.ts';
import { qgemmCall } from '../qgemm-call.ts';
import { pageOutcome } from './chrome-outcome.ts';
import { modelFor, ortWebgpuUnsupported } from './onnxruntime-webgpu.ts';
import {
  convolutionRows,
  ORT_WEBGPU_IMPLS,
  rowKey,
  type CellOutcome,
  type Mode,
  type OrtWebgpuImpl,
  type RowId,
  type Runner,
} from './types.ts';

export interface ChromeSession {
  runners: Runner[];
  /** The page's adapter as qgemm saw it (null when qgemm could not start in the page). */
  adapter: Record<string, unknown> | null;
  version: string;
  notes: string[];
  /** The command-line flags Chromium was launched with (tools/chromium.ts chromiumArgs, profile folder elided). */
  flags: string[];
  /** tools/chromium.ts's flag profile: swiftshader or hardware (env QGEMM_CHROMIUM_ADAPTER, else as Node's adapter). */
  profile: ChromeProfile;
  /** verifyDevice() in the page before the cells (verifyPlan), null where it did not run. */
  verify: PageVerifyResult | null;
  /** Whether the page is cross-origin isolated (COOP/COEP), and its navigator.hardwareConcurrency. */
  crossOriginIsolated: boolean;
  close(): Promise<void>;
}

function newestMtime(dir: string): number {
  let newest = 0;
  if (!existsSync(dir)) return newest;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, entry.name);
    newest = Math.max(newest, entry.isDirectory() ? newestMtime(p) : statSync(p).mtimeMs);
  }
  return newest;
}

/**
 * dist/browser/qgemm.js, rebuilt first when it is missing or older than src/ or shaders/ and vite is
 * at hand (`npm run bench` builds only the Node bundle).
 */
export function browserBundle(log: (line: string) => void): string {
  const root = repoRoot();
  const bundle = join(root, 'dist/browser/qgemm.js');
  const sourcesNewer = () => Math.max(newestMtime(join(root, 'src')), newestMtime(join(root, 'shaders'))) > statSync(bundle).mtimeMs;
  const vite = join(root, 'node_modules/vite/bin/vite.js');
  if ((!existsSync(bundle) || sourcesNewer()) && existsSync(vite)) {
    log(`building the browser bundle (dist/browser/qgemm.js is ${existsSync(bundle) ? 'older than src/' : 'missing'})`);
    execFileSync(process.execPath, [vite, 'build', '--mode', 'browser', '--logLevel', 'error'], { cwd: root, stdio: 'inherit' });
  }
  if (!existsSync(bundle)) throw new Error(`${bundle} is missing: run \`npm run build\``);
  return bundle;
}

/** onnxruntime-web's dist/ folder (ort.webgpu.min.mjs and its .wasm/.mjs files), or null when it is not installed. */
function ortDist(): string | null {
  try {
    // Its exports map has no ./package.json: its CommonJS entry (dist/ort.min.js) names the folder.
    const dir = dirname(rootRequire().resolve('onnxruntime-web'));
    return existsSync(join(dir, 'ort.webgpu.min.mjs')) ? dir : null;
  } catch {
    return null;
  }
}

/** The tfjs UMD bundles, or null when tfjs is not installed (a bare dist/ on another machine). */
function tfjsBundles(): { core: string; webgpu: string } | null {
  try {
    const req = rootRequire();
    const core = join(dirname(req.resolve('@tensorflow/tfjs-core/package.json')), 'dist/tf-core.es2017.min.js');
    const webgpu = join(dirname(req.resolve('@tensorflow/tfjs-backend-webgpu/package.json')), 'dist/tf-backend-webgpu.es2017.min.js');
    return existsSync(core) && existsSync(webgpu) ? { core, webgpu } : null;
  } catch {
    return null;
  }
}

export interface ChromeOptions {
  swiftshader: boolean;
  seed: number;
  /** The Chrome rows asked for (runtime 'chrome'); those that cannot start are left out with a note. */
  rows: RowId[];
  computes: string;
  log: (line: string) => void;
}

const QGEMM_MODE_DETAILS: Record<Mode, string> = {
  call: 'ctx.gemm: both operands uploaded and packed on every call',
  resident:
    "rhs prepacked once (ctx.prepack('rhs')), outside the timing; each call uploads lhs, packs it, runs gemm + output, reads dst back",
  device:
    'lhs uploaded once and rhs prepacked once, outside the timing; ctx.gemmOnGpu leaves dst on the GPU (read back after the timing, for verification)',
};

/** Convolution layers in the page: qgemm WebGPU in every mode with 8-bit filters, as in Node, and tfjs in every mode. */
function convolutionOf(id: RowId): true | string {
  if (id.impl !== 'qgemm') return true;
  if (id.rhsBits === 4) return 'convolution layers run with 8-bit filters only';
  return true;
}

/**
 * When the page runs verifyDevice() before its cells: env QGEMM_CHROME_VERIFY = 'off', 'all' (on any
 * adapter, SwiftShader too: minutes there), or a comma list of kernel ids (those, on any adapter); unset:
 * every kernel, on a hardware adapter only.
 */
export function verifyPlan(env: string | undefined = process.env.QGEMM_CHROME_VERIFY): PageVerifyPlan | null {
  if (!env) return { when: 'hardware' };
  if (env === 'off') return null;
  if (env === 'all') return { when: 'always' };
  return {
    when: 'always',
    kernels: env
      .split(',')
      .map((k) => k.trim())
      .filter(Boolean),
  };
}

/** The page-side name of a row's implementation. */
function pageImpl(id: RowId): PageImpl {
  if (id.impl === 'qgemm') return id.backend === 'cpu' ? 'qgemm-cpu' : 'qgemm';
  if (id.impl === 'tfjs-webgpu-f32') return 'tfjs-webgpu-f32';
  if (id.impl === 'onnxruntime-web-matmulinteger') return 'ort-wasm';
  return 'ort-webgpu';
}

export async function startChrome(opts: ChromeOptions): Promise<ChromeSession> {
  const notes: string[] = [];
  const site = mkdtempSync(join(tmpdir(), 'qgemm-bench-page-'));
  const cleanups: (() => Promise<void> | void)[] = [() => rmSync(site, { recursive: true, force: true })];
  const closeAll = async () => {
    for (const c of cleanups.reverse()) await Promise.resolve(c()).catch(() => undefined);
  };
  const wants = (impl: RowId['impl']) => opts.rows.some((r) => r.impl === impl);
  const wantsOrt = opts.rows.some((r) => r.impl.startsWith('onnxruntime'));
  try {
    const bundle = browserBundle(opts.log);
    mkdirSync(join(site, 'dist'));
    symlinkSync(dirname(bundle), join(site, 'dist/browser'), 'dir');
    const tfjs = wants('tfjs-webgpu-f32') ? tfjsBundles() : null;
    if (wants('tfjs-webgpu-f32') && !tfjs) notes.push('tfjs is not installed: no tfjs-webgpu-f32 rows in Chrome');
    if (tfjs) {
      copyFileSync(tfjs.core, join(site, 'tf-core.js'));
      copyFileSync(tfjs.webgpu, join(site, 'tf-backend-webgpu.js'));
    }
    const ort = wantsOrt ? ortDist() : null;
    if (wantsOrt && !ort) notes.push('onnxruntime-web is not installed: no onnxruntime rows in Chrome');
    if (ort) symlinkSync(ort, join(site, 'ort'), 'dir');
    mkdirSync(join(site, 'models'));
    writeFileSync(join(site, 'index.html'), pageHtml({ tfjs: !!tfjs, ort: !!ort }));
    const server = await serveStatic(site, { isolated: true });
    cleanups.push(() => server.close());
    const pageErrors: string[] = [];
    // onnxruntime-web's WebGPU EP prints its profile to the page's console, one event a line.
    let profileLines: string[] | null = null;
    const profile = chromeProfile(opts.swiftshader);
    const swiftshader = profile === 'swiftshader';
    const flags = chromiumArgs({ swiftshader, userDataDir: '<temp>' }).filter((f) => !f.startsWith('--user-data-dir'));
    const browser: Browser = await launchChromium({
      swiftshader,
      onConsole: (e) => {
        if (e.type === 'error' || e.type === 'pageerror') pageErrors.push(e.text);
        else if (profileLines && e.type === 'log') profileLines.push(e.text);
      },
    });
    cleanups.push(() => browser.close());
    for (const n of launchNotes(browser)) notes.push(`Chrome launch: ${n}`);
    const fullVersion = await browser.version();
    const version = fullVersion.replace(/^HeadlessChrome\//, '');
    const page: Page = await openPage(browser);
    await page.goto(server.url, { waitUntil: 'load' });
    await page.waitForFunction('window.__ready === true', { timeout: 60_000 });
    await page.evaluate(
      `window.__gen = (${generateOperands.toString()}); window.__hash = (${hashBytes.toString()}); window.__moreReps = (${moreReps.toString()});` +
        `window.__pausedCalls = (${pausedCalls.toString()}); window.__qgemmCall = (${qgemmCall.toString()});` +
        `window.__warmUntilSteady = (${warmUntilSteady.toString()});` +
        `window.__tinyModel = Uint8Array.from(${JSON.stringify([...matMulF32Model(new Float32Array(32 * 4), 32, 4)])});`,
    );
    const setup: PageSetupResult = await page.evaluate(pageSetup, verifyPlan());
    const v = setup.verify;
    if (v && 'error' in v) notes.push(`verifyDevice() in the page failed: ${v.error}`);
    else if (v)
      notes.push(
        v.ok
          ? `verifyDevice() in the page: all ${v.rows.length} kernels exact on ${v.device} (${(v.ms / 1000).toFixed(1)} s)`
          : `verifyDevice() in the page: MISMATCH in ${v.rows
              .filter((r) => r.mismatches)
              .map((r) => r.kernel)
              .join(', ')} on ${v.device}`,
      );
    const runners: Runner[] = [];
    let adapter: Record<string, unknown> | null = null;
    let cellNo = 0;
    const cell =
      (id: RowId) =>
      async (data: ShapeData, policy: RepeatPolicy): Promise<CellOutcome> => {
        const { m, n, k } = data.shape;
        const impl = pageImpl(id);
        let model: string | undefined;
        if (impl === 'ort-webgpu' || impl === 'ort-wasm') {
          if (impl === 'ort-webgpu') {
            const unsupported = ortWebgpuUnsupported(id.impl as OrtWebgpuImpl, k);
            if (unsupported) throw new Error(unsupported);
          }
          const bytes =
            impl === 'ort-webgpu'
              ? modelFor(id.impl as OrtWebgpuImpl, data)
              : id.mode === 'resident'
                ? matMulIntegerWeightsModel(data.rhs, k, n, RHS_ZERO_POINT)
                : matMulIntegerModel();
          model = `models/cell-${++cellNo}.onnx`;
          writeFileSync(join(site, model), bytes);
        }
        let r: PageCellResult;
        if (impl === 'ort-webgpu') profileLines = [];
        try {
          r = await page.evaluate(pageRunCell, {
            impl,
            mode: id.mode,
            seed: opts.seed,
            m,
            n,
            k,
            lhsZeroPoint: LHS_ZERO_POINT,
            rhsZeroPoint: RHS_ZERO_POINT,
            pipeline: pipelineToJson(data.problem.pipeline ?? []),
            policy,
            ...(model ? { model: `/${model}` } : {}),
            ...(impl === 'ort-webgpu' ? { profiledRuns: policy.minReps } : {}),
            // The decode loop's after-pause calls: every resident WebGPU GEMM row, qgemm's and the peers', as in Node.
            ...(id.mode === 'resident' && id.backend === 'webgpu' && !data.shape.conv && policy.afterPauseRows !== false
              ? { pauseMs: PAUSE_MS }
              : {}),
            ...(id.rhsBits === 4 ? { rhsBits: 4 as const } : {}),
            ...(data.shape.conv ? { conv: { layer: data.shape.conv, geometry: { ...data.conv!.geometry } } } : {}),
          });
          // The console events travel before evaluate's answer; a short wait covers their handling.
          if (profileLines) await new Promise((ok) => setTimeout(ok, 200));
        } finally {
          if (model) rmSync(join(site, model), { force: true });
        }
        const lines = profileLines ?? [];
        profileLines = null;
        return pageOutcome(impl, r, lines, policy.minReps);
      };
    const slug = () => (adapter ? adapterSlug(adapter as { vendor: string; architecture: string; description: string }) : 'unknown');
    const row = (id: RowId, computes: string, details: string): Runner => ({
      ...id,
      ...(id.impl === 'qgemm' ? { rhsBits: id.rhsBits ?? 8 } : {}),
      ...(convolutionRows(id) ? { convolution: convolutionOf(id) } : {}),
      adapter: id.backend === 'cpu' ? 'cpu' : slug(),
      computes,
      details: `Chromium ${version}; ${details}`,
      run: cell(id),
      close: async () => undefined,
    });
    const isolated = `cross-origin isolated: ${setup.crossOriginIsolated ? 'yes' : 'no'}`;
    if ('error' in setup.qgemm) notes.push(`qgemm could not start in Chrome: ${setup.qgemm.error}`);
    else adapter = { ...setup.qgemm.adapter, features: setup.qgemm.features };
    const q = setup.qgemm;
    const tf = setup.tfjs;
    const o = setup.ort;
    for (const id of opts.rows) {
      if (id.impl === 'qgemm' && id.backend === 'webgpu' && !('error' in q)) {
        runners.push(
          row(
            id,
            id.rhsBits === 4 ? `${opts.computes}, 4-bit weights` : opts.computes,
            `dist/browser/qgemm.js, dot4 ${q.dot4}, ${QGEMM_MODE_DETAILS[id.mode]}${id.rhsBits === 4 ? '; weights requantized to 4 bits (lhs 8, nearest rounding) in ctx.prepack' : ''}; GPU time from timestamp queries: ${q.timestamps ? 'yes' : 'no'}`,
          ),
        );
      } else if (id.impl === 'qgemm' && id.backend === 'cpu') {
        if ('error' in setup.cpu) notes.push(`qgemm's CPU path could not start in Chrome: ${setup.cpu.error}`);
        else
          runners.push(
            row(
              id,
              opts.computes,
              `${setup.cpu.kernel} ${setup.cpu.kernel === 'cpu-js' ? 'in JavaScript, 1 thread' : `in WebAssembly on ${setup.cpu.threads} thread(s)`} (${isolated}; relaxed SIMD: ${setup.cpu.relaxedNote})` +
                (id.mode === 'resident' ? '; rhs prepacked once (prepackCpu, outside the timing), each call packs the lhs' : ''),
            ),
          );
      } else if (id.impl === 'tfjs-webgpu-f32' && tf && !('error' in tf)) {
        runners.push(
          row(
            id,
            'f32 matMul of (q - zeroPoint)',
            `@tensorflow/tfjs-backend-webgpu ${tf.version} UMD bundle, ${id.mode === 'call' ? 'both tensors made per call' : id.mode === 'resident' ? 'rhs a kept tf.Tensor' : 'both operands kept tensors, no readback'}, kernel time from timestamp queries: ${tf.timestamps ? 'yes' : 'no'}`,
          ),
        );
      } else if ((ORT_WEBGPU_IMPLS as readonly string[]).includes(id.impl) && o && !('error' in o) && o.webgpu) {
        runners.push(
          row(
            id,
            id.impl === 'onnxruntime-webgpu-matmul-f32'
              ? 'f32 MatMul, weights an initializer'
              : `MatMulNBits ${id.impl.endsWith('8') ? 8 : 4}-bit weights, block 32, accuracy_level 4 (int8 activations, dot4), f32 A and Y`,
            `onnxruntime-web ${o.version} (onnxruntime-web/webgpu: ort.webgpu.min.mjs), WebGPU execution provider, weights as initializers; GPU time from a second, profiled session (its per-kernel timestamps)`,
          ),
        );
      } else if (id.impl === 'onnxruntime-web-matmulinteger' && o && !('error' in o)) {
        runners.push(
          row(
            id,
            'uint8 x uint8 -> int32 MatMulInteger',
            `onnxruntime-web ${o.version}, WASM execution provider (ort-wasm-simd-threaded.asyncify), numThreads ${o.numThreads} (${isolated})` +
              (id.mode === 'resident' ? '; B and b_zero_point are initializers (packed when the session is made, outside the timing)' : ''),
          ),
        );
      }
    }
    if (tf && 'error' in tf) notes.push(`tfjs-backend-webgpu could not start in Chrome: ${tf.error}`);
    if (o && 'error' in o) notes.push(`onnxruntime-web could not start in Chrome: ${o.error}`);
    else if (o && !o.webgpu) notes.push(`onnxruntime-web's WebGPU EP could not start in Chrome: ${o.webgpuError}`);
    if (pageErrors.length) notes.push(`page errors: ${pageErrors.slice(0, 3).join(' | ')}`);
    for (const id of opts.rows) if (!runners.some((r) => rowKey(r) === rowKey(id))) opts.log(`chrome: no ${rowKey(id)}`);
    return {
      runners,
      adapter,
      version: fullVersion,
      notes,
      flags,
      profile,
      verify: setup.verify,
      crossOriginIsolated: setup.crossOriginIsolated,
      close: closeAll,
    };
  } catch (e) {
    await closeAll();
    throw e;
  }
}
