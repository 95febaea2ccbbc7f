// The Chrome runtime: headless Chromium driven by puppeteer-core (tools/chromium.ts), on a page served
// from 127.0.0.1 (a secure context, so navigator.gpu exists) that loads this project's browser bundle
// dist/browser/qgemm.js, and tfjs-core + tfjs-backend-webgpu's UMD bundles from node_modules. Two rows:
// qgemm on WebGPU and tfjs's f32 matMul, both in the page, on the page's adapter (SwiftShader when the
// harness chose it, the hardware adapter otherwise). The in-page code is bench/chrome-page.ts.

import { execFileSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdtempSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { launchChromium, serveStatic, type Browser, type Page } from '../../tools/chromium.ts';
import type { DstType } from '../../src/types.ts';
import { pageHtml, pageRunCell, pageSetup, type PageCellResult, type PageSetupResult } from '../chrome-page.ts';
import { adapterSlug, repoRoot, rootRequire } from '../environment.ts';
import { LHS_ZERO_POINT, RHS_ZERO_POINT, generateOperands, hashBytes, pipelineToJson, type ShapeData } from '../problems.ts';
import { moreReps, stats, type RepeatPolicy } from '../timing.ts';
import { fromBytes } from '../verify.ts';
import { kernelOf } from './qgemm-node.ts';
import type { CellOutcome, Runner } from './types.ts';

export interface ChromeSession {
  runners: Runner[];
  /** The page's adapter as qgemm saw it (null when qgemm could not start in the page). */
  adapter: Record<string, unknown> | null;
  version: string;
  notes: string[];
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
  impls: ('qgemm' | 'tfjs-webgpu-f32')[];
  computes: string;
  log: (line: string) => void;
}

export async function startChrome(opts: ChromeOptions): Promise<ChromeSession> {
  const notes: string[] = [];
  const site = mkdtempSync(join(tmpdir(), 'qgemm-bench-page-'));
  const cleanups: (() => Promise<void> | void)[] = [() => rmSync(site, { recursive: true, force: true })];
  const closeAll = async () => {
    for (const c of cleanups.reverse()) await Promise.resolve(c()).catch(() => undefined);
  };
  try {
    copyFileSync(browserBundle(opts.log), join(site, 'qgemm.js'));
    const tfjs = opts.impls.includes('tfjs-webgpu-f32') ? tfjsBundles() : null;
    if (opts.impls.includes('tfjs-webgpu-f32') && !tfjs) notes.push('tfjs is not installed: no tfjs-webgpu-f32 row in Chrome');
    if (tfjs) {
      copyFileSync(tfjs.core, join(site, 'tf-core.js'));
      copyFileSync(tfjs.webgpu, join(site, 'tf-backend-webgpu.js'));
    }
    writeFileSync(join(site, 'index.html'), pageHtml(!!tfjs));
    const server = await serveStatic(site);
    cleanups.push(() => server.close());
    const pageErrors: string[] = [];
    const browser: Browser = await launchChromium({
      swiftshader: opts.swiftshader,
      onConsole: (e) => {
        if (e.type === 'error' || e.type === 'pageerror') pageErrors.push(e.text);
      },
    });
    cleanups.push(() => browser.close());
    const version = await browser.version();
    const page: Page = await browser.newPage();
    await page.goto(server.url, { waitUntil: 'load' });
    await page.waitForFunction('window.__ready === true', { timeout: 30_000 });
    await page.evaluate(
      `window.__gen = (${generateOperands.toString()}); window.__hash = (${hashBytes.toString()}); window.__moreReps = (${moreReps.toString()});`,
    );
    const setup: PageSetupResult = await page.evaluate(pageSetup);
    const runners: Runner[] = [];
    let adapter: Record<string, unknown> | null = null;
    const cell =
      (impl: 'qgemm' | 'tfjs-webgpu-f32') =>
      async (data: ShapeData, policy: RepeatPolicy): Promise<CellOutcome> => {
        const { m, n, k } = data.shape;
        const r: PageCellResult = await page.evaluate(pageRunCell, {
          impl,
          seed: opts.seed,
          m,
          n,
          k,
          lhsZeroPoint: LHS_ZERO_POINT,
          rhsZeroPoint: RHS_ZERO_POINT,
          pipeline: pipelineToJson(data.problem.pipeline ?? []),
          policy,
        });
        if (r.error) throw new Error(`in Chrome: ${r.error.split('\n')[0]}`);
        const gpu = r.gpus.every((g): g is number => g !== null) && r.gpus.length ? stats(r.gpus) : null;
        const out: CellOutcome = { wall: stats(r.walls), gpu };
        if (impl === 'qgemm' && r.outputBase64 !== undefined) {
          out.output = { data: fromBytes(r.dtype as DstType, Buffer.from(r.outputBase64, 'base64')), dtype: r.dtype as DstType };
          out.hashes = r.hashes;
          out.kernel = kernelOf({ lastRun: { kernel: r.kernel } });
        }
        return out;
      };
    if ('error' in setup.qgemm) {
      notes.push(`qgemm could not start in Chrome: ${setup.qgemm.error}`);
    } else {
      adapter = setup.qgemm.adapter;
      if (opts.impls.includes('qgemm')) {
        runners.push({
          impl: 'qgemm',
          backend: 'webgpu',
          runtime: 'chrome',
          mode: 'call',
          adapter: adapterSlug(adapter as { vendor: string; architecture: string; description: string }),
          computes: opts.computes,
          details: `Chromium ${version.replace(/^HeadlessChrome\//, '')}, dist/browser/qgemm.js, dot4 ${setup.qgemm.dot4}, GPU time from timestamp queries: ${setup.qgemm.timestamps ? 'yes' : 'no'}`,
          run: cell('qgemm'),
          close: async () => undefined,
        });
      }
    }
    if (setup.tfjs && 'error' in setup.tfjs) notes.push(`tfjs-backend-webgpu could not start in Chrome: ${setup.tfjs.error}`);
    else if (setup.tfjs) {
      runners.push({
        impl: 'tfjs-webgpu-f32',
        backend: 'webgpu',
        runtime: 'chrome',
        mode: 'call',
        adapter: adapter ? adapterSlug(adapter as { vendor: string; architecture: string; description: string }) : 'unknown',
        computes: 'f32 matMul of (q - zeroPoint)',
        details: `@tensorflow/tfjs-backend-webgpu ${setup.tfjs.version} UMD bundle in Chromium, kernel time from timestamp queries: ${setup.tfjs.timestamps ? 'yes' : 'no'}`,
        run: cell('tfjs-webgpu-f32'),
        close: async () => undefined,
      });
    }
    if (pageErrors.length) notes.push(`page errors: ${pageErrors.slice(0, 3).join(' | ')}`);
    return { runners, adapter, version, notes, close: closeAll };
  } catch (e) {
    await closeAll();
    throw e;
  }
}
