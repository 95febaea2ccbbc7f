// Browser tier of the bench launcher's probe attempts (tools/chromium.ts launchChromium with the hardware
// profile and an attempt other than A; the launch plan is tools/chrome-probe/attempts.mjs launchPlan):
// attempt F, the one whose setup reaches into the page. Launched with SwiftShader's ICD in place of
// NVIDIA's, a page from openPage() must get a compatibility-mode device from a plain requestAdapter() and
// requestDevice() (no `core-features-and-limits`, 16 KiB of workgroup storage), where A's page gets a
// core one; the report's notes name the attempt.
// C (uid 65534, the ICD copied) and D (Xvfb) are rehearsed by hand (bench/README.md, "Chrome on a GPU
// server"). In CI a missing Chromium fails; locally it skips with a notice.

import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { chromiumPath, INSTALL_HINT, launchChromium, launchNotes, openPage, serveStatic, type StaticServer } from '../../tools/chromium.ts';

const CI = process.env.CI === 'true';
const ICD = '/usr/lib/chromium/vk_swiftshader_icd.json';
const chromium = chromiumPath();
if (!chromium) {
  if (CI) throw new Error(`the browser tests must run in CI, but Chromium is missing: \`${INSTALL_HINT}\``);
  console.warn(`\n[browser test] SKIPPING the Chrome launch test: Chromium not found. Install: \`${INSTALL_HINT}\`\n`);
}

describe.skipIf(!chromium)('the hardware profile with attempt F, on SwiftShader', () => {
  let server: StaticServer;
  let dir: string;
  const saved = process.env.VK_ICD_FILENAMES;
  beforeAll(async () => {
    process.env.VK_ICD_FILENAMES = ICD;
    dir = mkdtempSync(join(tmpdir(), 'qgemm-launch-test-'));
    writeFileSync(join(dir, 'index.html'), '<!doctype html><title>qgemm launch test</title>');
    server = await serveStatic(dir);
  });
  afterAll(async () => {
    await server?.close();
    rmSync(dir, { recursive: true, force: true });
    if (saved === undefined) delete process.env.VK_ICD_FILENAMES;
    else process.env.VK_ICD_FILENAMES = saved;
  });

  async function pageDevice(attempt: string) {
    const browser = await launchChromium({ swiftshader: false, attempt });
    try {
      const page = await openPage(browser);
      await page.goto(server.url, { waitUntil: 'load' });
      const device = await page.evaluate(async () => {
        const gpu = (navigator as Navigator & { gpu: GPU }).gpu;
        const a = await gpu.requestAdapter();
        if (!a) return null;
        const device = await a.requestDevice();
        const r = {
          architecture: a.info.architecture,
          core: device.features.has('core-features-and-limits'),
          workgroupStorage: device.limits.maxComputeWorkgroupStorageSize,
        };
        device.destroy();
        return r;
      });
      return { device, notes: launchNotes(browser) };
    } finally {
      await browser.close();
    }
  }

  it("F's page asks every requestAdapter() for a compatibility-mode adapter; A's gets a core one", async () => {
    // Chrome may hand a compatibility request an adapter that can do core; a device asked for with no
    // features is then a compatibility-mode device: no core-features-and-limits, compatibility limits.
    const f = await pageDevice('F');
    expect(f.device).toEqual({ architecture: 'swiftshader', core: false, workgroupStorage: 16384 });
    expect(f.notes[0]).toMatch(/^attempt F: /);
    const a = await pageDevice('A');
    expect(a.device).toMatchObject({ architecture: 'swiftshader', core: true });
  }, 60_000);
});

describe.skipIf(!chromium)('a signal while Chromium is open', () => {
  it('kills Chromium, removes its profile and ends the process with the signal (puppeteer handles none)', async () => {
    const before = process.listenerCount('SIGTERM');
    const browser = await launchChromium({ swiftshader: true });
    const proc = browser.process()!;
    const profile = proc.spawnargs.find((a) => a.startsWith('--user-data-dir='))!.slice('--user-data-dir='.length);
    expect(existsSync(profile)).toBe(true);
    // one handler of ours: puppeteer's would close Chromium and leave the process running (a bench went on)
    expect(process.listenerCount('SIGTERM')).toBe(before + 1);
    const exited = new Promise((resolve) => proc.once('exit', resolve));
    // the re-raise would end this test's process: only it is held back
    const realKill = process.kill.bind(process);
    const kill = vi.spyOn(process, 'kill').mockImplementation((pid, signal) => (pid === process.pid ? true : realKill(pid, signal)));
    try {
      (process.listeners('SIGTERM').at(-1) as (s: NodeJS.Signals) => void)('SIGTERM');
      // done before the handler returned: Chromium killed, its profile gone, the signal raised again
      expect(existsSync(profile)).toBe(false);
      expect(kill).toHaveBeenCalledWith(process.pid, 'SIGTERM');
    } finally {
      kill.mockRestore();
    }
    await exited;
    expect(existsSync(profile)).toBe(false);
    expect(process.listenerCount('SIGTERM')).toBe(before);
  });
});
