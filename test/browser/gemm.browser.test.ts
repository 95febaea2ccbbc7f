// Browser tier: the library's browser bundle (dist/browser/qgemm.js, `vite build --mode browser`) in
// headless Chromium (puppeteer-core, the system Chromium, WebGPU on SwiftShader; see tools/chromium.ts).
// It serves a temp copy of the bundle and test/browser/page/index.html from 127.0.0.1 (a secure context,
// so navigator.gpu exists; a copy, so a concurrent rebuild of dist/ cannot pull the bundle away mid-run;
// a missing bundle is built into dist/, one older than src/ or shaders/ is rebuilt into the copy only),
// and has the page run a seeded batch of random GEMM problems through the public API (GpuContext, some
// with emulated dot4, one through gemm()) and compare each with referenceGemm in the same page, bit for
// bit. Asserts zero mismatches, a real adapter, and the number of problems run. In CI (CI=true) a missing
// Chromium or adapter fails; locally it skips with a notice naming the install command.

import { execFileSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newest } from './freshness.ts';
import {
  chromiumPath,
  INSTALL_HINT,
  launchChromium,
  serveStatic,
  watchPage,
  type Browser,
  type StaticServer,
} from '../../tools/chromium.ts';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const BUNDLE_DIR = join(ROOT, 'dist/browser');
const CI = process.env.CI === 'true';
/** Problems per batch: enough to cover every fixed shape, stage kind and cast several times (~20 s on SwiftShader, 2 cores). */
const COUNT = Number(process.env.QGEMM_BROWSER_PROBLEMS ?? 48);
const SEED = Number(process.env.QGEMM_BROWSER_SEED ?? 0x9e3779b9);

function skipNotice(what: string): string {
  return `\n[browser test] SKIPPING the browser GEMM test: ${what}. Install headless Chromium with SwiftShader (Debian, as root): \`${INSTALL_HINT}\`. In CI (CI=true) this fails instead.\n`;
}

const chromium = chromiumPath();
if (!chromium) {
  if (CI)
    throw new Error(`the browser tests must run in CI, but Chromium is missing (CHROMIUM_PATH or /usr/bin/chromium): \`${INSTALL_HINT}\``);
  console.warn(skipNotice('Chromium not found (CHROMIUM_PATH or /usr/bin/chromium)'));
}

interface BatchStats {
  seed: number;
  problems: number;
  emulatedProblems: number;
  viaGemm: number;
  mismatches: number;
  firstMismatch: null | { problem: string; how: string; index: number; count: number; total?: number; examples: string[] };
  adapter: null | {
    vendor: string;
    architecture: string;
    description: string;
    isSoftware: boolean;
    features: string[];
    wgslLanguageFeatures: string[];
  };
  adapterLine: string;
  dot4: string | null;
  stageKinds: Record<string, number>;
  casts: Record<string, number>;
  shapes: string[];
  gpuMs: number;
  emulatedMs: number;
  setupMs: number;
  referenceMs: number;
  slowest: { shape: string; ms: number } | null;
  uncapturedErrors: string[];
  error: string | null;
}

describe.skipIf(!chromium)('browser bundle in headless Chromium (WebGPU)', () => {
  let site: string;
  let server: StaticServer;
  let browser: Browser;

  beforeAll(async () => {
    const vite = (outDir?: string) =>
      execFileSync('npx', ['vite', 'build', '--mode', 'browser', '--logLevel', 'warn', ...(outDir ? ['--outDir', outDir] : [])], {
        cwd: ROOT,
        stdio: 'inherit',
      });
    const bundle = join(BUNDLE_DIR, 'qgemm.js');
    if (!existsSync(bundle)) {
      console.warn('[browser test] dist/browser/qgemm.js is missing: running `npx vite build --mode browser`');
      vite();
    }
    site = mkdtempSync(join(tmpdir(), 'qgemm-browser-test-'));
    mkdirSync(join(site, 'dist'), { recursive: true });
    if (statSync(bundle).mtimeMs < newest(['src', 'shaders'].map((d) => join(ROOT, d)))) {
      // Never test a stale bundle; build a fresh one for this run only (dist/ may be in use elsewhere).
      console.warn(
        '[browser test] dist/browser/qgemm.js is older than src/ or shaders/: testing a fresh build of them (`npm run build` updates dist/)',
      );
      vite(join(site, 'dist/browser'));
    } else {
      cpSync(BUNDLE_DIR, join(site, 'dist/browser'), { recursive: true });
    }
    cpSync(join(ROOT, 'test/browser/page'), join(site, 'test/browser/page'), { recursive: true });
    server = await serveStatic(site);
    // SwiftShader unless QGEMM_CHROMIUM_ADAPTER=hardware asks for the machine's GPU (tools/chromium.ts).
    browser = await launchChromium({ swiftshader: process.env.QGEMM_CHROMIUM_ADAPTER !== 'hardware' });
  });

  afterAll(async () => {
    await browser?.close();
    await server?.close();
    if (site) rmSync(site, { recursive: true, force: true });
  });

  it('runs random GEMM problems through the public API, bit-exact with referenceGemm in the page', async (ctx) => {
    const t0 = performance.now();
    const page = await browser.newPage();
    const log = watchPage(page);
    await page.goto(`${server.url}test/browser/page/index.html`, { waitUntil: 'load' });
    await page.waitForFunction(
      () => {
        const s = (window as unknown as { qgemmPage?: { ready: boolean; error: string | null } }).qgemmPage;
        return !!s && (s.ready || !!s.error);
      },
      { timeout: 30_000 },
    );
    const loadError = await page.evaluate(() => (window as unknown as { qgemmPage: { error: string | null } }).qgemmPage.error);
    expect(loadError, `page load: ${log.errors.join('\n')}`).toBeNull();

    const stats = (await page.evaluate(
      (seed, count) =>
        (window as unknown as { runGemmBatch(o: { seed: number; count: number }): Promise<unknown> }).runGemmBatch({ seed, count }),
      SEED,
      COUNT,
    )) as BatchStats;
    const seconds = ((performance.now() - t0) / 1000).toFixed(1);

    if (!stats.adapter) {
      const why = `no WebGPU adapter in Chromium (${stats.error ?? 'unknown'})`;
      if (CI) expect.fail(`the browser tests must run in CI: ${why}. Install: \`${INSTALL_HINT}\``);
      console.warn(skipNotice(why));
      ctx.skip();
      return;
    }
    console.log(
      `[browser test] ${stats.adapterLine}, dot4 ${stats.dot4}: ${stats.problems} problems (+${stats.emulatedProblems} emulated dot4, ` +
        `+${stats.viaGemm} via gemm()), ${stats.mismatches} mismatching; setup ${stats.setupMs.toFixed(0)} ms, GPU ` +
        `${stats.gpuMs.toFixed(0)} ms (slowest ${stats.slowest?.shape} ${stats.slowest?.ms.toFixed(0)} ms), emulated ${stats.emulatedMs.toFixed(0)} ms, ` +
        `reference ${stats.referenceMs.toFixed(0)} ms, ${seconds} s in all (seed ${SEED})`,
    );

    expect(stats.error, `page error; console errors:\n${log.errors.join('\n')}`).toBeNull();
    expect(stats.adapter.architecture, 'the adapter reports its architecture').not.toBe('');
    expect(stats.problems).toBeGreaterThanOrEqual(Math.min(COUNT, 40));
    expect(stats.emulatedProblems).toBeGreaterThan(0);
    expect(stats.firstMismatch, JSON.stringify(stats.firstMismatch, null, 2)).toBeNull();
    expect(stats.mismatches).toBe(0);
    expect(stats.uncapturedErrors).toEqual([]);
    // The batch covered what it claims: every stage kind and cast, the gemv path and the tile edges.
    for (const kind of [
      'bias',
      'quantizeDownInt32ToUint8Scale',
      'quantizeDownInt32ByFixedPoint',
      'scaleInt32ByFixedPointAndExponent',
      'clamp',
      'tanh',
    ]) {
      expect(stats.stageKinds[kind] ?? 0, kind).toBeGreaterThan(0);
    }
    for (const cast of ['int32', 'saturatingCast:uint8', 'saturatingCast:int8', 'saturatingCast:int16', 'truncatingCast:uint8']) {
      expect(stats.casts[cast] ?? 0, cast).toBeGreaterThan(0);
    }
    expect(stats.shapes).toContain('1x64x64');
    expect(stats.shapes).toContain('65x65x65');
    expect(log.errors).toEqual([]);
    await page.close();
  });

  it('a device destroyed under running GEMMs: each resolves or rejects with DeviceLostError', async () => {
    const page = await browser.newPage();
    await page.goto(`${server.url}test/browser/page/index.html`, { waitUntil: 'load' });
    await page.waitForFunction(() => !!(window as unknown as { qgemmPage?: { ready: boolean } }).qgemmPage?.ready, { timeout: 30_000 });
    const outcomes = (await page.evaluate(() =>
      (window as unknown as { runLostDevice(o: { tries: number }): Promise<string[]> }).runLostDevice({ tries: 3 }),
    )) as string[];
    // Chrome's aborted maps (AbortError) had reached the caller as they were
    expect(outcomes.filter((o) => o !== 'resolved' && o !== 'DeviceLostError')).toEqual([]);
    console.log(`[browser test] lost device: ${outcomes.filter((o) => o === 'DeviceLostError').length} of ${outcomes.length} calls lost`);
    await page.close();
  });
});
