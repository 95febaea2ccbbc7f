// Browser tier: the demo page (demo/, `vite build --mode demo` -> dist/demo) in headless Chromium with
// WebGPU on SwiftShader (tools/chromium.ts). It (re)builds dist/demo when it is missing or older than
// demo/, src/ or shaders/, serves it from 127.0.0.1, sets a shape, operand types and a pipeline preset
// through the form, clicks Run, and checks that the page reports bit-exact agreement between WebGPU and
// the CPU, non-empty adapter info, and timings; it saves a screenshot to test-results/demo.png. In CI
// (CI=true) a missing Chromium or adapter fails; locally it skips with a notice naming the install command.

import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, statSync } from 'node:fs';
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
const DEMO_DIR = join(ROOT, 'dist/demo');
const SCREENSHOT = join(ROOT, 'test-results/demo.png');
const CI = process.env.CI === 'true';

const chromium = chromiumPath();
if (!chromium) {
  if (CI)
    throw new Error(`the browser tests must run in CI, but Chromium is missing (CHROMIUM_PATH or /usr/bin/chromium): \`${INSTALL_HINT}\``);
  console.warn(
    `\n[demo test] SKIPPING the demo page test: Chromium not found. Install it (Debian, as root): \`${INSTALL_HINT}\`. In CI (CI=true) this fails instead.\n`,
  );
}

describe.skipIf(!chromium)('demo page in headless Chromium', () => {
  let server: StaticServer;
  let browser: Browser;

  beforeAll(async () => {
    const built = existsSync(join(DEMO_DIR, 'index.html')) ? statSync(join(DEMO_DIR, 'index.html')).mtimeMs : 0;
    if (built < newest(['demo', 'src', 'shaders'].map((d) => join(ROOT, d)))) {
      console.warn(`[demo test] dist/demo is ${built ? 'older than its sources' : 'missing'}: running \`npx vite build --mode demo\``);
      execFileSync('npx', ['vite', 'build', '--mode', 'demo', '--logLevel', 'warn'], { cwd: ROOT, stdio: 'inherit' });
    }
    server = await serveStatic(DEMO_DIR);
    // SwiftShader unless QGEMM_CHROMIUM_ADAPTER=hardware asks for the machine's GPU (tools/chromium.ts).
    browser = await launchChromium({ swiftshader: process.env.QGEMM_CHROMIUM_ADAPTER !== 'hardware' });
  });

  afterAll(async () => {
    await browser?.close();
    await server?.close();
  });

  it('runs GEMMs through the UI: WebGPU and CPU agree bit for bit; adapter shown; screenshot saved', async (ctx) => {
    const page = await browser.newPage();
    const log = watchPage(page);
    await page.setViewport({ width: 1200, height: 900, deviceScaleFactor: 1 });
    await page.goto(server.url, { waitUntil: 'load' });
    await page.waitForSelector('body[data-ready="true"]', { timeout: 30_000 });

    if (await page.$('[data-testid="no-webgpu"]')) {
      const why = await page.$eval('#adapter', (e) => (e as HTMLElement).innerText);
      if (CI) expect.fail(`the demo test must run with WebGPU in CI: ${why}. Install: \`${INSTALL_HINT}\``);
      console.warn(`\n[demo test] SKIPPING: no WebGPU adapter in Chromium (${why}). Install: \`${INSTALL_HINT}\`.\n`);
      ctx.skip();
      return;
    }

    /** Types into a field as a user would: select all, delete, type. */
    const type = async (testid: string, value: string) => {
      const sel = `[data-testid="${testid}"]`;
      await page.click(sel, { count: 3 });
      await page.keyboard.press('Backspace');
      await page.type(sel, value);
    };
    /** Clicks Run and waits for the verdict; returns what the page shows. */
    const runAndRead = async () => {
      const t0 = performance.now();
      await page.click('[data-testid="run"]');
      await page.waitForFunction(
        () =>
          ['match', 'mismatch', 'cpu-only', 'error'].includes(
            document.querySelector<HTMLElement>('[data-testid="agreement"]')?.dataset.state ?? '',
          ),
        { timeout: 60_000 },
      );
      const ms = performance.now() - t0;
      const shown = await page.evaluate(() => {
        const q = (id: string) => document.querySelector<HTMLElement>(`[data-testid="${id}"]`);
        const a = q('agreement')!;
        return {
          state: a.dataset.state,
          equal: Number(a.dataset.equal),
          total: Number(a.dataset.total),
          text: a.innerText,
          adapter: q('adapter-name')?.innerText ?? '',
          dot4: q('dot4')?.innerText ?? '',
          timings: Array.from(document.querySelectorAll('[data-testid="timings"] tbody tr')).map((r) =>
            (r as HTMLElement).innerText.replace(/\s+/g, ' '),
          ),
          bars: document.querySelectorAll('[data-testid="chart"] rect.bar').length,
          note: document.getElementById('result-note')?.textContent ?? '',
        };
      });
      console.log(`[demo test] ${shown.text} | ${shown.timings.join(' | ')} | Run took ${ms.toFixed(0)} ms`);
      return shown;
    };

    // Run 1: 64x48x40, int8 lhs (zero point -3) x uint8 rhs (131), per-channel pipeline -> int8.
    await type('m', '64');
    await type('n', '48');
    await type('k', '40');
    await page.select('[data-testid="lhs-type"]', 'int8');
    await type('lhs-zp', '-3');
    await page.select('[data-testid="rhs-type"]', 'uint8');
    await type('rhs-zp', '131');
    await page.select('[data-testid="pipeline"]', 'per-channel-int8');
    await type('repeats', '3');
    const first = await runAndRead();
    expect(first.state, first.text).toBe('match');
    expect(first.text).toContain('bit-exact');
    expect(first.text).toContain('all 3,072 elements match');
    expect(first.equal).toBe(64 * 48);
    expect(first.total).toBe(64 * 48);
    expect(first.adapter).not.toBe('');
    expect(first.dot4).not.toBe('');
    expect(first.timings).toHaveLength(2);
    expect(first.timings[0]).toMatch(/^WebGPU/);
    expect(first.bars).toBe(2 + 2); // this run's two bars, and the legend's two swatches
    expect(first.note).toContain('64×48×40');
    expect(first.note).toContain('per-channel-int8 → int8'); // the run's label names its pipeline and dtype

    // Run 2: M=1 (the gemv path), tanh pipeline, one timed run (SwiftShader is slow there).
    await type('m', '1');
    await type('n', '96');
    await type('k', '80');
    await page.select('[data-testid="pipeline"]', 'tanh-int8');
    await type('repeats', '1');
    const second = await runAndRead();
    expect(second.state, second.text).toBe('match');
    expect(second.text).toContain('bit-exact: all 96 elements match');
    expect(second.bars).toBe(4 + 2);

    // Run 3, cancelled: while it runs, the previous results are dimmed and a progress bar and a Cancel
    // button show; Cancel stops it between timed runs, and the previous results are current again.
    await type('m', '200');
    await type('n', '200');
    await type('k', '200');
    await type('repeats', '50');
    await page.click('[data-testid="run"]');
    await page.waitForFunction(() => document.querySelector<HTMLElement>('[data-testid="agreement"]')?.dataset.state === 'running');
    const during = await page.evaluate(() => ({
      stale: document.getElementById('result-card')!.classList.contains('stale'),
      progress: !document.querySelector<HTMLElement>('[data-testid="progress"]')!.hidden,
      cancel: !document.querySelector<HTMLElement>('[data-testid="cancel"]')!.hidden,
    }));
    expect(during).toEqual({ stale: true, progress: true, cancel: true });
    await page.click('[data-testid="cancel"]');
    await page.waitForFunction(() => document.querySelector<HTMLElement>('[data-testid="status"]')?.innerText.startsWith('Cancelled'), {
      timeout: 60_000,
    });
    const after = await page.evaluate(() => ({
      state: document.querySelector<HTMLElement>('[data-testid="agreement"]')!.dataset.state,
      stale: document.getElementById('result-card')!.classList.contains('stale'),
      bars: document.querySelectorAll('[data-testid="chart"] rect.bar').length,
    }));
    expect(after).toEqual({ state: 'match', stale: false, bars: 4 + 2 });

    mkdirSync(dirname(SCREENSHOT), { recursive: true });
    await page.screenshot({ path: SCREENSHOT as `${string}.png`, fullPage: true });
    console.log(`[demo test] ${first.adapter}; screenshot: ${SCREENSHOT}`);
    expect(log.errors).toEqual([]);
    await page.close();
  });
});
