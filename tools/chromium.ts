// Headless Chromium for the browser tests (test/browser/) and the benchmark's Chrome runtime (bench/):
// the one place that knows how to start the system Chromium with WebGPU through puppeteer-core, and how
// to serve pages so that `navigator.gpu` exists (a secure context: http://127.0.0.1, not file://).
// Two flag profiles: 'swiftshader' (the software adapter; verified on this project's CPU-only machines)
// and 'hardware' (a real GPU on a server with no display: the flags of an attempt of
// tools/chrome-gpu-probe.mjs, by default A, the Colab recipe; not yet run on a GPU).
//
// Stable API (the benchmark imports it too; extend, don't break):
//   chromiumPath(): string | null
//       CHROMIUM_PATH from the environment, else /usr/bin/chromium; null when that file is missing.
//   chromiumArgs({ swiftshader, userDataDir, attempt? }): string[]
//       The exact command-line flags launchChromium uses; WEBGPU_FLAGS: the WebGPU ones, each explained.
//       The hardware profile takes the flags of the probe's attempt `attempt` (A, B or E; default: env
//       QGEMM_CHROME_ATTEMPT, else A): hardwareFlags(attempt).
//   chromeProfile(swiftshader?): 'swiftshader' | 'hardware'
//       env QGEMM_CHROMIUM_ADAPTER=swiftshader|hardware when set, else as wantSwiftShader (below).
//   launchChromium({ swiftshader?, executablePath?, onConsole?, timeoutMs? }): Promise<Browser>
//       Headless Chromium with WEBGPU_FLAGS and a fresh --user-data-dir in a temp folder that
//       browser.close() removes. swiftshader: true forces the SwiftShader adapter
//       (--use-webgpu-adapter=swiftshader), false asks for the hardware adapter; undefined = auto
//       (env QGEMM_CHROMIUM_ADAPTER=swiftshader|hardware, else hardware only when a GPU device node
//       /dev/nvidia0 or /dev/dri/renderD* exists). onConsole receives the console messages and uncaught
//       errors of every page of the browser. Throws ChromiumNotFoundError when there is no executable.
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
import { readFile, stat } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { extname, join, normalize, resolve, sep } from 'node:path';
import puppeteer, { type Browser, type Page } from 'puppeteer-core';
import { attemptById, HARDWARE_FLAGS } from './chrome-probe/attempts.mjs';

export type { Browser, Page } from 'puppeteer-core';

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

/** The probe attempts whose flags the hardware profile can take (headless ones that need no setup but environment variables). */
export const HARDWARE_ATTEMPTS = ['A', 'B', 'E'] as const;

/** The hardware profile's flags: WEBGPU_FLAGS.hardware (attempt A), or another attempt's (env QGEMM_CHROME_ATTEMPT). */
export function hardwareFlags(attempt: string = process.env.QGEMM_CHROME_ATTEMPT || 'A'): string[] {
  const id = attempt.toUpperCase();
  if (!(HARDWARE_ATTEMPTS as readonly string[]).includes(id))
    throw new Error(`QGEMM_CHROME_ATTEMPT: "${attempt}" is not one of ${HARDWARE_ATTEMPTS.join(', ')} (tools/chrome-probe/attempts.mjs)`);
  if (id === 'A') return [...WEBGPU_FLAGS.hardware];
  return ['--ignore-gpu-blocklist', ...(attemptById(id)?.flags ?? [])];
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
  return [
    '--no-sandbox', // needed when running as root
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

export async function launchChromium(opts: LaunchOptions = {}): Promise<Browser> {
  const executablePath = opts.executablePath ?? chromiumPath();
  if (!executablePath || !existsSync(executablePath)) {
    throw new ChromiumNotFoundError(
      `Chromium not found at ${executablePath ?? (process.env.CHROMIUM_PATH || '/usr/bin/chromium')}: install it (Debian, as root: \`${INSTALL_HINT}\`) or set CHROMIUM_PATH.`,
    );
  }
  const userDataDir = mkdtempSync(join(tmpdir(), 'qgemm-chromium-'));
  const removeProfile = () => rmSync(userDataDir, { recursive: true, force: true, maxRetries: 3, retryDelay: 100 });
  let browser: Browser;
  try {
    browser = await puppeteer.launch({
      executablePath,
      headless: true,
      args: chromiumArgs({ swiftshader: wantSwiftShader(opts.swiftshader), userDataDir }),
      timeout: opts.timeoutMs ?? 60_000,
    });
  } catch (e) {
    removeProfile();
    throw e;
  }
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
  // Remove the profile once Chromium has exited: after close(), and as a backstop when it disconnects.
  const close = browser.close.bind(browser);
  browser.close = async () => {
    try {
      await close();
    } finally {
      removeProfile();
    }
  };
  browser.once('disconnected', () => {
    const proc = browser.process();
    if (proc && proc.exitCode === null) proc.once('exit', removeProfile);
    else removeProfile();
  });
  return browser;
}

const MIME: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.json': 'application/json; charset=utf-8',
  '.map': 'application/json; charset=utf-8',
  '.wasm': 'application/wasm',
  '.wgsl': 'text/plain; charset=utf-8',
  '.txt': 'text/plain; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
};

export interface StaticServer {
  /** http://127.0.0.1:PORT/ */
  url: string;
  close(): Promise<void>;
}

/** isolated: send COOP/COEP headers, so that pages are cross-origin isolated (SharedArrayBuffer, threads). */
export async function serveStatic(rootDir: string, { isolated = false }: { isolated?: boolean } = {}): Promise<StaticServer> {
  const root = resolve(rootDir);
  const server: Server = createServer(async (req, res) => {
    try {
      if (req.method !== 'GET' && req.method !== 'HEAD') {
        res.writeHead(405).end();
        return;
      }
      let path = decodeURIComponent(new URL(req.url ?? '/', 'http://127.0.0.1').pathname);
      let file = normalize(join(root, path));
      if (file !== root && !file.startsWith(root + sep)) {
        res.writeHead(403).end();
        return;
      }
      if ((await stat(file).catch(() => null))?.isDirectory()) {
        if (!path.endsWith('/')) {
          res.writeHead(301, { Location: path + '/' }).end();
          return;
        }
        file = join(file, 'index.html');
        path += 'index.html';
      }
      const body = await readFile(file).catch(() => null);
      if (!body) {
        res.writeHead(404, { 'Content-Type': 'text/plain; charset=utf-8' }).end(`not found: ${path}`);
        return;
      }
      res.writeHead(200, {
        'Content-Type': MIME[extname(file).toLowerCase()] ?? 'application/octet-stream',
        'Content-Length': body.length,
        'Cache-Control': 'no-store',
        ...(isolated ? { 'Cross-Origin-Opener-Policy': 'same-origin', 'Cross-Origin-Embedder-Policy': 'require-corp' } : {}),
      });
      res.end(req.method === 'HEAD' ? undefined : body);
    } catch (e) {
      res.writeHead(500, { 'Content-Type': 'text/plain; charset=utf-8' }).end(String(e));
    }
  });
  await new Promise<void>((ok, fail) => {
    server.once('error', fail);
    server.listen(0, '127.0.0.1', () => ok());
  });
  const address = server.address();
  if (!address || typeof address === 'string') throw new Error('serveStatic: no TCP address');
  return {
    url: `http://127.0.0.1:${address.port}/`,
    close: () =>
      new Promise<void>((ok) => {
        server.closeAllConnections();
        server.close(() => ok());
      }),
  };
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
