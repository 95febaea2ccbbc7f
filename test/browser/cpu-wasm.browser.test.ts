// Browser tier of the WebAssembly CPU kernel (src/kernels/cpu-wasm/: pack -> gemm -> output in
// WebAssembly): the library's browser bundle in headless Chromium runs a seeded batch of random problems
// through gemm(p, { backend: 'cpu', kernel: 'cpu-wasm-simd' }) in the page and compares each with
// referenceGemm in the same page, bit for bit, twice: from a plain page (no cross-origin isolation, so
// no SharedArrayBuffer: one thread) and from a cross-origin isolated one (COOP/COEP headers: worker
// threads over a shared memory). Then weights prepacked once (prepackCpu, 8-bit and 1-4 bits, every
// rounding) over few-row shapes in the isolated page: Chromium validates relaxed SIMD, so 4-bit weights
// run on the dot7 kernels there where its 7-bit probe passes, and the test asserts which ran. The bundle
// is copied (or rebuilt when stale) as in gemm.browser.test.ts. No GPU is needed. In CI a missing
// Chromium fails; locally it skips with a notice.

import { execFileSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newest } from './freshness.ts';
import { chromiumPath, INSTALL_HINT, launchChromium, serveStatic, watchPage, type Browser } from '../../tools/chromium.ts';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const CI = process.env.CI === 'true';
const COUNT = 40;
const SEED = 0x5eed1234;

const chromium = chromiumPath();
if (!chromium) {
  if (CI) throw new Error(`the browser tests must run in CI, but Chromium is missing: \`${INSTALL_HINT}\``);
  console.warn(`\n[browser test] SKIPPING the cpu-wasm browser test: Chromium not found. Install: \`${INSTALL_HINT}\`\n`);
}

describe.skipIf(!chromium)('WebAssembly CPU kernel in headless Chromium', () => {
  let site: string;
  let browser: Browser;

  beforeAll(async () => {
    const bundle = join(ROOT, 'dist/browser/qgemm.js');
    const vite = (outDir: string) =>
      execFileSync('npx', ['vite', 'build', '--mode', 'browser', '--logLevel', 'warn', '--outDir', outDir], {
        cwd: ROOT,
        stdio: 'inherit',
      });
    site = mkdtempSync(join(tmpdir(), 'qgemm-cpu-wasm-test-'));
    mkdirSync(join(site, 'dist'), { recursive: true });
    if (!existsSync(bundle) || statSync(bundle).mtimeMs < newest([join(ROOT, 'src')])) vite(join(site, 'dist/browser'));
    else cpSync(join(ROOT, 'dist/browser'), join(site, 'dist/browser'), { recursive: true });
    cpSync(join(ROOT, 'test/browser/page'), join(site, 'test/browser/page'), { recursive: true });
    browser = await launchChromium({ swiftshader: true });
  });

  afterAll(async () => {
    await browser?.close();
    if (site) rmSync(site, { recursive: true, force: true });
  });

  it.each([false, true])('cross-origin isolated: %s', async (isolated) => {
    const server = await serveStatic(site, { isolated });
    try {
      const page = await browser.newPage();
      const log = watchPage(page);
      await page.goto(`${server.url}test/browser/page/cpu-wasm.html`, { waitUntil: 'load' });
      await page.waitForFunction(
        () => {
          const s = (window as unknown as { qgemmPage?: { ready: boolean; error: string | null } }).qgemmPage;
          return !!s && (s.ready || !!s.error);
        },
        { timeout: 30_000 },
      );
      const stats = (await page.evaluate(
        (seed, count) =>
          (window as unknown as { runCpuBatch(o: object): Promise<unknown> }).runCpuBatch({ seed, count, kernel: 'cpu-wasm-simd' }),
        SEED,
        COUNT,
      )) as {
        problems: number;
        mismatches: number;
        firstMismatch: unknown;
        error: string | null;
        ms: number;
        crossOriginIsolated: boolean;
        caps: { wasmSimd: boolean; threads: number; sharedMemory: boolean; relaxedSimd: boolean; relaxedNote: string };
        runs: { singleThreaded: number; multiThreaded: number };
      };
      console.log(
        `[browser test] cpu-wasm-simd in Chromium, isolated ${stats.crossOriginIsolated}: ${stats.problems} problems, ` +
          `${stats.mismatches} mismatching, threads ${stats.caps.threads} (shared memory ${stats.caps.sharedMemory}), runs ${JSON.stringify(stats.runs)}, ` +
          `relaxed SIMD: ${stats.caps.relaxedNote}, ${stats.ms.toFixed(0)} ms`,
      );
      expect(stats.error, log.errors.join('\n')).toBeNull();
      expect(stats.crossOriginIsolated).toBe(isolated);
      expect(stats.caps.wasmSimd).toBe(true);
      expect(stats.problems).toBe(COUNT);
      expect(stats.firstMismatch, JSON.stringify(stats.firstMismatch)).toBeNull();
      expect(stats.mismatches).toBe(0);
      expect(stats.caps.sharedMemory).toBe(isolated);
      // Threads default to the page's cores (pool.ts coreCount), whatever the machine has.
      const cores = await page.evaluate(() => navigator.hardwareConcurrency);
      if (isolated) {
        expect(stats.caps.threads).toBe(Math.max(1, cores));
        if (cores >= 2) expect(stats.runs.multiThreaded).toBeGreaterThan(0);
      } else {
        expect(stats.caps.threads).toBe(1);
        expect(stats.runs.multiThreaded).toBe(0);
      }
      expect(log.errors).toEqual([]);
      await page.close();
    } finally {
      await server.close();
    }
  });

  it('prepacked weights, 8-bit and 1-4 bits, few rows, cross-origin isolated', async () => {
    const server = await serveStatic(site, { isolated: true });
    try {
      const page = await browser.newPage();
      const log = watchPage(page);
      await page.goto(`${server.url}test/browser/page/cpu-wasm.html`, { waitUntil: 'load' });
      await page.waitForFunction(() => !!(window as unknown as { qgemmPage?: { ready: boolean } }).qgemmPage?.ready, { timeout: 30_000 });
      const stats = (await page.evaluate(
        (seed, count) => (window as unknown as { runPrepackedBatch(o: object): Promise<unknown> }).runPrepackedBatch({ seed, count }),
        SEED + 1,
        COUNT,
      )) as { problems: number; mismatches: number; firstMismatch: unknown; drivers: string[]; error: string | null };
      const caps = (await page.evaluate(() =>
        (window as unknown as { qgemmPage: unknown; runCpuBatch(o: object): Promise<{ caps: { relaxedNote: string } }> })
          .runCpuBatch({ seed: 1, count: 0 })
          .then((r) => r.caps),
      )) as { relaxedNote: string };
      console.log(
        `[browser test] prepacked in Chromium: ${stats.problems} problems, ${stats.mismatches} mismatching, drivers ${stats.drivers.join(' ')}`,
      );
      expect(stats.error, log.errors.join('\n')).toBeNull();
      expect(stats.problems).toBe(COUNT);
      expect(stats.firstMismatch, JSON.stringify(stats.firstMismatch)).toBeNull();
      const dot7 = caps.relaxedNote.includes('7-bit dot exact');
      expect(
        stats.drivers.some((d) => d.startsWith(dot7 ? 'gemm_nibble7_' : 'gemm_nibble_')),
        caps.relaxedNote,
      ).toBe(true);
      expect(stats.drivers.some((d) => d.startsWith(dot7 ? 'gemm_nibble_' : 'gemm_nibble7_'))).toBe(false);
      expect(log.errors).toEqual([]);
      await page.close();
    } finally {
      await server.close();
    }
  });

  it("an error from the CPU-only entry is an instance of the full entry's classes (one copy of their shared code)", async () => {
    const server = await serveStatic(site);
    try {
      const page = await browser.newPage();
      await page.goto(`${server.url}test/browser/page/cpu-wasm.html`, { waitUntil: 'load' });
      await page.waitForFunction(() => !!(window as unknown as { qgemmPage?: { ready: boolean } }).qgemmPage?.ready, { timeout: 30_000 });
      const got = await page.evaluate(() => (window as unknown as { errorIdentity(): Promise<unknown> }).errorIdentity());
      expect(got).toEqual({ name: 'InputError', input: true, qgemm: true, same: true });
      await page.close();
    } finally {
      await server.close();
    }
  });

  /** The test page with a Content-Security-Policy `policy` (a meta tag), served cross-origin isolated, runs a batch. */
  async function batchUnderCsp(name: string, policy: string, seed: number, kernel?: string): Promise<CspBatch> {
    const csp = `<meta http-equiv="Content-Security-Policy" content="${policy}">`;
    const html = readFileSync(join(site, 'test/browser/page/cpu-wasm.html'), 'utf8').replace(
      '<meta charset="utf-8">',
      `<meta charset="utf-8">${csp}`,
    );
    expect(html).toContain(csp);
    writeFileSync(join(site, `test/browser/page/${name}.html`), html);
    const server = await serveStatic(site, { isolated: true });
    try {
      const page = await browser.newPage();
      await page.goto(`${server.url}test/browser/page/${name}.html`, { waitUntil: 'load' });
      await page.waitForFunction(() => !!(window as unknown as { qgemmPage?: { ready: boolean } }).qgemmPage?.ready, { timeout: 30_000 });
      const stats = (await page.evaluate((o) => (window as unknown as { runCpuBatch(o: object): Promise<unknown> }).runCpuBatch(o), {
        seed,
        count: COUNT,
        kernel,
      })) as CspBatch;
      await page.close();
      return stats;
    } finally {
      await server.close();
    }
  }

  // A cross-origin isolated page whose Content-Security-Policy forbids blob: workers (worker-src 'self'):
  // its first worker cannot start, so GEMMs run on one thread and the caps say why. Each multi-threaded
  // GEMM had failed with "WorkerLostError: qgemm wasm worker 1: undefined".
  it('a page whose CSP forbids blob: workers runs on one thread, exact, and says why', async () => {
    const stats = await batchUnderCsp('cpu-wasm-csp', "worker-src 'self'", SEED + 2, 'cpu-wasm-simd');
    expect(stats.error).toBeNull();
    expect(stats.crossOriginIsolated).toBe(true);
    expect(stats.caps.sharedMemory).toBe(true);
    expect(stats.caps.threads).toBe(1);
    expect(stats.caps.threadsNote).toMatch(/^worker threads cannot start in this page \(.*worker-src blob:$/);
    expect(stats.caps.threadsNote).not.toMatch(/undefined/);
    expect([stats.problems, stats.mismatches, stats.runs.multiThreaded]).toEqual([COUNT, 0, 0]);
  });

  // A page whose CSP allows no 'wasm-unsafe-eval': WebAssembly validates but cannot be compiled, so the CPU
  // path runs its JavaScript kernel and the caps say why. Every CPU call had failed with a CompileError.
  it('a page whose CSP forbids compiling WebAssembly runs the CPU path in JavaScript, exact, and says why', async () => {
    const stats = await batchUnderCsp('cpu-wasm-nowasm', "script-src 'self' 'unsafe-inline'", SEED + 3);
    expect(stats.error).toBeNull();
    expect(stats.caps.wasmSimd).toBe(false);
    expect(stats.caps.relaxedNote).toMatch(/^WebAssembly cannot be compiled here \(.*'wasm-unsafe-eval'$/);
    expect([stats.problems, stats.mismatches, stats.runs.singleThreaded + stats.runs.multiThreaded]).toEqual([COUNT, 0, 0]);
  });
});

interface CspBatch {
  problems: number;
  mismatches: number;
  error: string | null;
  crossOriginIsolated: boolean;
  caps: { threads: number; sharedMemory: boolean; threadsNote?: string; wasmSimd: boolean; relaxedNote: string };
  runs: { singleThreaded: number; multiThreaded: number };
}
