// Headless Chromium for the browser tests (test/browser/) and the benchmark's Chrome runtime (bench/):
// the one place that knows how to start the system Chromium with WebGPU through puppeteer-core, and how
// to serve pages so that `navigator.gpu` exists (a secure context: http://127.0.0.1, not file://).
// Two flag profiles: 'swiftshader' (the software adapter; verified on this project's CPU-only machines)
// and 'hardware' (a real GPU on a server with no display: an attempt of tools/chrome-gpu-probe.mjs, A to
// F, by default A, the Colab recipe, launched as the probe launches it: the same launch plan, from
// tools/chrome-probe/attempts.mjs, carried out by tools/chrome-probe/setup.mjs; not yet run on a GPU).
//
// Stable API (the benchmark imports it too; extend, don't break):
//   chromiumPath(): string | null
//       CHROMIUM_PATH from the environment, else /usr/bin/chromium; null when that file is missing.
//   chromiumArgs({ swiftshader, userDataDir, attempt? }): string[]
//       The exact command-line flags launchChromium uses; WEBGPU_FLAGS: the WebGPU ones, each explained.
//       The hardware profile takes the flags of the probe's attempt `attempt` (A to F; default: env
//       QGEMM_CHROME_ATTEMPT, else A): hardwareFlags(attempt); --no-sandbox unless the attempt has the
//       sandbox on (C).
//   hardwarePlan(attempt, userDataDir): LaunchPlan
//       What else launching with that attempt takes (env, ICD copy, uid, display, requestAdapter options).
//   chromeProfile(swiftshader?): 'swiftshader' | 'hardware'
//       env QGEMM_CHROMIUM_ADAPTER=swiftshader|hardware when set, else as wantSwiftShader (below).
//   launchChromium({ swiftshader?, executablePath?, onConsole?, timeoutMs? }): Promise<Browser>
//       Headless Chromium with WEBGPU_FLAGS and a fresh --user-data-dir in a temp folder that
//       browser.close() removes. swiftshader: true forces the SwiftShader adapter
//       (--use-webgpu-adapter=swiftshader), false asks for the hardware adapter; undefined = auto
//       (env QGEMM_CHROMIUM_ADAPTER=swiftshader|hardware, else hardware only when a GPU device node
//       /dev/nvidia0 or /dev/dri/renderD* exists). The hardware profile carries out the attempt's launch
//       plan: C runs Chrome as uid 65534 (a setpriv wrapper) with the ICD copied to the loader's folder,
//       D starts the carried Xvfb (QGEMM_CHROME_PREFIX) and Chrome not headless on it. onConsole receives
//       the console messages and uncaught errors of every page of the browser. Throws
//       ChromiumNotFoundError when there is no executable.
//   openPage(browser): Promise<Page>
//       A new page with the attempt's requestAdapter() options in place before any script (F: every
//       requestAdapter() of the page asks for featureLevel 'compatibility').
//   launchNotes(browser): string[]
//       The attempt and what its launch did (ICD copy, uid, display), for the report.
//   watchPage(page, onConsole?): PageLog
//       Attaches to one page; returns { entries, errors } that fill as the page logs, and forwards to onConsole.
//   serveStatic(rootDir, { isolated? }): Promise<{ url, close() }>
//       A static file server on 127.0.0.1 with an ephemeral port (url ends with '/'); correct MIME types
//       for .html .js .mjs .css .json .wasm .wgsl .svg .png; no directory listings, no paths outside rootDir.
//       isolated: true adds COOP/COEP headers (a cross-origin isolated page: SharedArrayBuffer, threads).
//   readAdapter(page): Promise<PageAdapter | null>
//       What navigator.gpu offers in a loaded page (null without navigator.gpu or an adapter).
//   INSTALL_HINT: the Debian command that provides chromium and SwiftShader.

import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import puppeteer, { type Browser, type Page } from 'puppeteer-core';
import {
  ATTEMPTS,
  attemptById,
  HARDWARE_FLAGS,
  type LaunchPlan,
  launchPlan,
  NVIDIA_EGL_VENDOR,
  NVIDIA_ICD,
  STANDARD_ICD_DIR,
} from './chrome-probe/attempts.mjs';
import { prepareLaunch, runAsWrapper } from './chrome-probe/setup.mjs';

export type { Browser, Page } from 'puppeteer-core';
export { type StaticServer, serveStatic } from './static-server.ts';

/** Debian: chromium brings headless Chrome and SwiftShader; libvulkan1 the Vulkan loader Dawn needs. */
export { INSTALL_HINT } from '../src/gpu/dawn.ts';
import { INSTALL_HINT } from '../src/gpu/dawn.ts';

export class ChromiumNotFoundError extends Error {
  override name = 'ChromiumNotFoundError';
}

/** One console message or uncaught error of a page. */
export interface ConsoleEntry {
  /** Puppeteer's console type ('log', 'warn', 'error', ...), or 'pageerror' for an uncaught exception. */
  type: string;
  text: string;
  /** The page's URL when the message was logged. */
  url: string;
}

export interface PageLog {
  /** Every message, in order. */
  entries: ConsoleEntry[];
  /** The 'error' and 'pageerror' ones, as "type: text" lines. */
  errors: string[];
}

export interface LaunchOptions {
  /** true: SwiftShader; false: the hardware adapter; undefined: auto (see the top of this file). */
  swiftshader?: boolean;
  /** Default: chromiumPath(). */
  executablePath?: string;
  /** Called with every console message and uncaught error of every page of this browser. */
  onConsole?: (entry: ConsoleEntry) => void;
  /** Launch timeout; default 60 s (a cold start on a busy 2-core machine can take several seconds). */
  timeoutMs?: number;
  /** The hardware profile's probe attempt, A to F; default env QGEMM_CHROME_ATTEMPT, else A. */
  attempt?: string;
}

export function chromiumPath(): string | null {
  const path = process.env.CHROMIUM_PATH || '/usr/bin/chromium';
  return existsSync(path) ? path : null;
}

/** Is there a GPU device node Chromium could use? (NVIDIA's /dev/nvidia0, or a DRM render node.) */
function hasGpuDeviceNode(): boolean {
  if (existsSync('/dev/nvidia0')) return true;
  try {
    return readdirSync('/dev/dri').some((f) => f.startsWith('renderD'));
  } catch {
    return false;
  }
}

/** Resolves the swiftshader choice: explicit, else QGEMM_CHROMIUM_ADAPTER, else "no GPU node => SwiftShader". */
export function wantSwiftShader(swiftshader?: boolean): boolean {
  if (swiftshader !== undefined) return swiftshader;
  const env = process.env.QGEMM_CHROMIUM_ADAPTER;
  if (env === 'swiftshader') return true;
  if (env === 'hardware') return false;
  return !hasGpuDeviceNode();
}

/**
 * Chrome's WebGPU flags, the one place they are written down (the benchmark records them in its report;
 * test/browser/chrome-flags.browser.test.ts checks what a page launched with them sees):
 *   --enable-unsafe-webgpu            WebGPU on Linux, where Chrome does not enable it by default;
 *   --enable-dawn-features=allow_unsafe_apis
 *                                     Dawn's toggle that exposes experimental features, among them
 *                                     `chromium-experimental-subgroup-matrix` (the subgroup-matrix
 *                                     kernels), where the GPU has them: as src/gpu/dawn.ts does in Node;
 *   --enable-webgpu-developer-features, --disable-dawn-features=timestamp_quantization
 *                                     unquantized timestamp queries (Chrome rounds them to 100 µs
 *                                     otherwise; the developer features flag lifts that, the Dawn toggle
 *                                     is the same switch one level down, as in Node);
 *   swiftshader: --use-webgpu-adapter=swiftshader  the software adapter;
 *   hardware (HARDWARE_FLAGS of tools/chrome-probe/attempts.mjs, attempt A, the Colab recipe):
 *     --use-angle=vulkan              ANGLE on Vulkan: without --use-angle headless Chrome injects
 *                                     --use-angle=swiftshader-webgl, marks WebGPU "Software" and allows
 *                                     only a fallback adapter;
 *     --enable-features=Vulkan        Chrome's Vulkan backend on Linux;
 *     --disable-vulkan-surface        no surface extensions in Chrome's Vulkan instance (NVIDIA's ICD has
 *                                     no VK_EXT_headless_surface, so asking for it fails vkCreateInstance);
 *     --ignore-gpu-blocklist          a server GPU may be on Chrome's blocklist.
 * The hardware profile also needs the Vulkan driver found: VK_ICD_FILENAMES=<the driver's ICD JSON> in
 * the environment (Chrome carries its own Vulkan loader). bench/README.md, "Chrome on a GPU server".
 */
export const WEBGPU_FLAGS = {
  common: [
    '--enable-unsafe-webgpu',
    '--enable-dawn-features=allow_unsafe_apis',
    '--enable-webgpu-developer-features',
    '--disable-dawn-features=timestamp_quantization',
  ],
  swiftshader: ['--use-webgpu-adapter=swiftshader'],
  hardware: ['--ignore-gpu-blocklist', ...HARDWARE_FLAGS],
} as const;

/** The probe attempts the hardware profile can take: every one (tools/chrome-probe/attempts.mjs, A to F). */
export const HARDWARE_ATTEMPTS: readonly string[] = ATTEMPTS.map((a) => a.id);

/** The attempt `attempt` names (default: env QGEMM_CHROME_ATTEMPT, else A); a wrong name throws, named. */
function hardwareAttempt(attempt: string = process.env.QGEMM_CHROME_ATTEMPT || 'A') {
  const found = attemptById(attempt);
  if (!found)
    throw new Error(`QGEMM_CHROME_ATTEMPT: "${attempt}" is not one of ${HARDWARE_ATTEMPTS.join(', ')} (tools/chrome-probe/attempts.mjs)`);
  return found;
}

/** The hardware profile's flags: WEBGPU_FLAGS.hardware (attempt A), or another attempt's (env QGEMM_CHROME_ATTEMPT). */
export function hardwareFlags(attempt?: string): string[] {
  const found = hardwareAttempt(attempt);
  if (found.id === 'A') return [...WEBGPU_FLAGS.hardware];
  return ['--ignore-gpu-blocklist', ...found.flags];
}

/**
 * The launch plan of the hardware profile's attempt (launchPlan in tools/chrome-probe/attempts.mjs), on
 * this machine: the ICD is VK_ICD_FILENAMES or VK_DRIVER_FILES where set, else NVIDIA's where present,
 * else none (the loader's own search); the EGL vendor file likewise; the ICD folder QGEMM_CHROME_ICD_DIR (a rehearsal)
 * or the loader's standard one; HOME the profile folder.
 */
export function hardwarePlan(attempt: string | undefined, userDataDir: string): LaunchPlan {
  const env = process.env;
  return launchPlan(hardwareAttempt(attempt), {
    uid: process.getuid?.(),
    icd: env.VK_ICD_FILENAMES || env.VK_DRIVER_FILES || (existsSync(NVIDIA_ICD) ? NVIDIA_ICD : ''),
    eglVendor: env.__EGL_VENDOR_LIBRARY_FILENAMES || (existsSync(NVIDIA_EGL_VENDOR) ? NVIDIA_EGL_VENDOR : ''),
    icdDir: env.QGEMM_CHROME_ICD_DIR ? resolve(env.QGEMM_CHROME_ICD_DIR) : STANDARD_ICD_DIR,
    home: userDataDir,
  });
}

export type ChromeProfile = 'swiftshader' | 'hardware';

/** The profile: env QGEMM_CHROMIUM_ADAPTER=swiftshader|hardware when set, else wantSwiftShader(swiftshader)'s. */
export function chromeProfile(swiftshader?: boolean): ChromeProfile {
  const env = process.env.QGEMM_CHROMIUM_ADAPTER;
  if (env === 'swiftshader' || env === 'hardware') return env;
  if (env) throw new Error(`QGEMM_CHROMIUM_ADAPTER: "${env}" is not swiftshader or hardware`);
  return wantSwiftShader(swiftshader) ? 'swiftshader' : 'hardware';
}

export function chromiumArgs(opts: { swiftshader: boolean; userDataDir: string; attempt?: string }): string[] {
  // --no-sandbox: needed when running as root; the hardware attempt C keeps the sandbox (and runs as uid 65534).
  const sandbox = !opts.swiftshader && hardwareAttempt(opts.attempt).sandbox;
  return [
    ...(sandbox ? [] : ['--no-sandbox']),
    ...WEBGPU_FLAGS.common,
    ...(opts.swiftshader ? WEBGPU_FLAGS.swiftshader : hardwareFlags(opts.attempt)),
    '--disable-background-networking',
    '--disable-component-update',
    '--disable-sync',
    '--no-first-run',
    '--disable-quic',
    `--user-data-dir=${opts.userDataDir}`,
  ];
}

/** What launchChromium did for a hardware attempt: its plan, and notes for the report. */
interface LaunchRecord {
  plan: LaunchPlan;
  notes: string[];
}
const launches = new WeakMap<Browser, LaunchRecord>();

/** The attempt a browser was launched with and what its launch did; [] for SwiftShader. */
export function launchNotes(browser: Browser): string[] {
  return [...(launches.get(browser)?.notes ?? [])];
}

/**
 * A new page of the browser, with the attempt's requestAdapter() options in place before any of its
 * scripts runs: every navigator.gpu.requestAdapter(options) of the page gets them over its own (F:
 * featureLevel 'compatibility', for qgemm, tfjs and onnxruntime-web alike). Other attempts: a plain page.
 */
export async function openPage(browser: Browser): Promise<Page> {
  const page = await browser.newPage();
  const extra = launches.get(browser)?.plan.adapterOptions ?? {};
  if (Object.keys(extra).length)
    await page.evaluateOnNewDocument((options: GPURequestAdapterOptions) => {
      const gpu = (navigator as Navigator & { gpu?: GPU }).gpu;
      if (!gpu) return;
      const request = gpu.requestAdapter.bind(gpu);
      gpu.requestAdapter = (own?: GPURequestAdapterOptions) => request({ ...own, ...options });
    }, extra as GPURequestAdapterOptions);
  return page;
}

export function watchPage(page: Page, onConsole?: (entry: ConsoleEntry) => void): PageLog {
  const log: PageLog = { entries: [], errors: [] };
  const push = (entry: ConsoleEntry) => {
    log.entries.push(entry);
    if (entry.type === 'error' || entry.type === 'pageerror') log.errors.push(`${entry.type}: ${entry.text}`);
    onConsole?.(entry);
  };
  page.on('console', (msg) => push({ type: msg.type(), text: msg.text(), url: page.url() }));
  page.on('pageerror', (err) => {
    const e = err as Error;
    push({ type: 'pageerror', text: e?.stack || e?.message || String(err), url: page.url() });
  });
  return log;
}

/** The signals that end a process with a browser open: Chromium is killed and its profile removed first. */
const SIGNALS = ['SIGINT', 'SIGTERM', 'SIGHUP'] as const;

export async function launchChromium(opts: LaunchOptions = {}): Promise<Browser> {
  const executablePath = opts.executablePath ?? chromiumPath();
  if (!executablePath || !existsSync(executablePath)) {
    throw new ChromiumNotFoundError(
      `Chromium not found at ${executablePath ?? (process.env.CHROMIUM_PATH || '/usr/bin/chromium')}: install it (Debian, as root: \`${INSTALL_HINT}\`) or set CHROMIUM_PATH.`,
    );
  }
  const userDataDir = mkdtempSync(join(tmpdir(), 'qgemm-chromium-'));
  // retried for about a second: after a signal, Chromium's killed processes may still be writing there
  const cleanups = [() => rmSync(userDataDir, { recursive: true, force: true, maxRetries: 20, retryDelay: 50 })];
  const removeProfile = () => {
    for (const c of cleanups.splice(0).reverse()) c();
  };
  const swiftshader = wantSwiftShader(opts.swiftshader);
  let browser: Browser;
  let launch: LaunchRecord | null = null;
  try {
    let command = executablePath;
    let headless = true;
    let env: Record<string, string | undefined> | undefined;
    if (!swiftshader) {
      const attempt = hardwareAttempt(opts.attempt);
      const plan = hardwarePlan(attempt.id, userDataDir);
      const setup = await prepareLaunch(plan, { env: process.env, prefix: process.env.QGEMM_CHROME_PREFIX || '', profile: userDataDir });
      cleanups.push(setup.cleanup);
      launch = { plan, notes: [`attempt ${attempt.id}: ${attempt.title}`, ...setup.notes] };
      env = setup.env;
      headless = plan.headless;
      if (plan.runAs !== null) {
        // puppeteer-core takes one executable: a wrapper (outside the profile) that execs Chrome as that user.
        const wrapperDir = mkdtempSync(join(tmpdir(), 'qgemm-chromium-run-'));
        cleanups.push(() => rmSync(wrapperDir, { recursive: true, force: true }));
        command = runAsWrapper(plan.runAs, executablePath, wrapperDir);
      }
    }
    browser = await puppeteer.launch({
      executablePath: command,
      headless,
      ...(env ? { env } : {}),
      args: chromiumArgs({ swiftshader, userDataDir, attempt: opts.attempt }),
      timeout: opts.timeoutMs ?? 60_000,
      // puppeteer's own handlers close Chromium and leave the process running (SIGTERM: a bench then went
      // on with a dead page) or exit before the profile is removed (SIGINT): ours below do both
      handleSIGINT: false,
      handleSIGTERM: false,
      handleSIGHUP: false,
    });
  } catch (e) {
    removeProfile();
    throw e;
  }
  if (launch) launches.set(browser, launch);
  if (opts.onConsole) {
    const onConsole = opts.onConsole;
    const watched = new WeakSet<Page>();
    const attach = (page: Page | null) => {
      if (page && !watched.has(page)) {
        watched.add(page);
        watchPage(page, onConsole);
      }
    };
    for (const page of await browser.pages()) attach(page);
    browser.on('targetcreated', (target) => {
      if (target.type() === 'page') void target.page().then(attach, () => undefined);
    });
  }
  // A signal ends the process as it would have, Chromium and its profile gone first.
  // Synchronously, so that nothing else of this process runs meanwhile (a bench would take Chromium's end
  // for a failed row): its process group killed, the profile removed as its last writers go.
  const onSignal = (signal: NodeJS.Signals) => {
    stopHandling();
    const pid = browser.process()?.pid;
    try {
      if (pid) process.kill(-pid, 'SIGKILL'); // puppeteer starts Chromium in a process group of its own
    } catch {
      browser.process()?.kill('SIGKILL');
    }
    try {
      removeProfile();
    } finally {
      process.kill(process.pid, signal);
    }
  };
  const stopHandling = () => {
    for (const signal of SIGNALS) process.off(signal, onSignal);
  };
  for (const signal of SIGNALS) process.on(signal, onSignal);
  // Remove the profile once Chromium has exited: after close(), and as a backstop when it disconnects.
  const close = browser.close.bind(browser);
  browser.close = async () => {
    try {
      await close();
    } finally {
      stopHandling();
      removeProfile();
    }
  };
  browser.once('disconnected', () => {
    stopHandling();
    const proc = browser.process();
    if (proc && proc.exitCode === null) proc.once('exit', removeProfile);
    else removeProfile();
  });
  return browser;
}

/** The adapter a loaded page sees (run in the page; needs a secure context). */
export interface PageAdapter {
  vendor: string;
  architecture: string;
  description: string;
  device: string;
  isFallbackAdapter: boolean;
  features: string[];
  wgslLanguageFeatures: string[];
}

export function readAdapter(page: Page): Promise<PageAdapter | null> {
  return page.evaluate(async () => {
    const gpu = (navigator as Navigator & { gpu?: GPU }).gpu;
    if (!gpu) return null;
    const adapter = await gpu.requestAdapter();
    if (!adapter) return null;
    const info = adapter.info as GPUAdapterInfo & { isFallbackAdapter?: boolean };
    return {
      vendor: info.vendor,
      architecture: info.architecture,
      description: info.description,
      device: info.device,
      isFallbackAdapter: !!info.isFallbackAdapter,
      features: [...adapter.features].map(String).sort(),
      wgslLanguageFeatures: [...gpu.wgslLanguageFeatures].map(String).sort(),
    };
  });
}
