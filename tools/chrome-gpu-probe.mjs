// Which Chrome flags give WebGPU a hardware adapter on a GPU server with no display? This probe tries
// the attempts of tools/chrome-probe/attempts.mjs (A to F, in order, each in a fresh profile, each at most
// --timeout seconds), and stops at the first that gives a hardware adapter. For each it prints chrome://gpu's
// lines for WebGPU, Vulkan, the Skia backend, GL_RENDERER and ANGLE; what requestAdapter() returns in a page
// served from 127.0.0.1 (vendor, architecture, isFallbackAdapter, features: is
// chromium-experimental-subgroup-matrix there?); and Chrome's stderr lines that name vkCreateInstance,
// VK_ERROR, the loader or the GPU process exiting. It writes the whole record to OUT/chrome-gpu-probe.json
// and prints the attempt table (attempt | adapter | reason) last. Exit 0: a hardware adapter; 1: none.
//
// It needs only Node's built-ins (Chrome is driven over --remote-debugging-pipe): on a GPU server,
// tools/chrome-gpu-probe.sh unpacks the carried Chromium (bench/chrome-pack.sh) and Node, then runs this.
//
//   node tools/chrome-gpu-probe.mjs [--chrome PATH] [--prefix DIR] [--out DIR] [--attempts A,B,...]
//     [--timeout S] [--budget S] [--icd FILE] [--egl-vendor FILE] [--icd-dir DIR] [--accept NAME,...]
// --prefix: the unpacked payload (its lib/ and usr/lib/x86_64-linux-gnu/ go first on LD_LIBRARY_PATH,
// its usr/bin/Xvfb serves attempt D). --accept swiftshader: count SwiftShader as hardware (a rehearsal
// without a GPU, with --icd pointing at SwiftShader's ICD).

import { execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { hostname, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import {
  ATTEMPTS,
  attemptArgs,
  attemptReason,
  attemptTable,
  describeAdapter,
  gpuPageLines,
  isHardwareAdapter,
  launchPlan,
  NVIDIA_EGL_VENDOR,
  NVIDIA_ICD,
  runAsCommand,
  runAttempts,
  STANDARD_ICD_DIR,
  stderrLines,
} from './chrome-probe/attempts.mjs';
import { libraryPath, prepareLaunch } from './chrome-probe/setup.mjs';
import { connectPipe, evaluate, openPage, poll } from './chrome-probe/cdp.mjs';

const USAGE =
  'usage: node tools/chrome-gpu-probe.mjs [--chrome PATH] [--prefix DIR] [--out DIR] [--attempts A,B,...] [--timeout S] [--budget S] [--icd FILE] [--egl-vendor FILE] [--icd-dir DIR] [--accept NAME,...]';

function parseArgs(argv) {
  const o = {
    prefix: process.env.QGEMM_CHROME_PREFIX || '',
    chrome: '',
    out: process.env.OUT || 'chrome-probe-out',
    attempts: ATTEMPTS.map((a) => a.id),
    timeout: 60,
    budget: 420,
    icd: NVIDIA_ICD,
    eglVendor: NVIDIA_EGL_VENDOR,
    icdDir: STANDARD_ICD_DIR,
    accept: [],
  };
  for (let i = 0; i < argv.length; i++) {
    const flag = argv[i];
    const value = argv[i + 1];
    const need = () => {
      if (value === undefined) throw new Error(`${flag} needs a value\n${USAGE}`);
      i++;
      return value;
    };
    if (flag === '--chrome') o.chrome = need();
    else if (flag === '--prefix') o.prefix = need();
    else if (flag === '--out') o.out = need();
    else if (flag === '--attempts') o.attempts = need().toUpperCase().split(',');
    else if (flag === '--timeout') o.timeout = Number(need());
    else if (flag === '--budget') o.budget = Number(need());
    else if (flag === '--icd') o.icd = need();
    else if (flag === '--egl-vendor') o.eglVendor = need();
    else if (flag === '--icd-dir') o.icdDir = need();
    else if (flag === '--accept') o.accept = need().split(',').filter(Boolean);
    else throw new Error(`unknown option ${flag}\n${USAGE}`);
  }
  for (const id of o.attempts) if (!ATTEMPTS.some((a) => a.id === id)) throw new Error(`--attempts: unknown attempt ${id} (known: A to F)`);
  if (!(o.timeout > 0) || !(o.budget > 0)) throw new Error('--timeout and --budget take a positive number of seconds');
  // Attempt C points the Vulkan loader at <dir>/vulkan/icd.d through XDG_DATA_DIRS: any other folder is never read.
  if (!/(^|\/)vulkan\/icd\.d\/*$/.test(o.icdDir))
    throw new Error(`--icd-dir: ${o.icdDir} must end in vulkan/icd.d (the loader reads <dir>/vulkan/icd.d)`);
  if (o.prefix) o.prefix = resolve(o.prefix);
  // The payload's wrapper (bench/chrome-pack.sh) sets LD_LIBRARY_PATH for every process Chromium starts.
  if (!o.chrome) o.chrome = o.prefix ? join(o.prefix, 'chromium') : process.env.CHROMIUM_PATH || '/usr/bin/chromium';
  return o;
}

const sleep = (ms) => new Promise((ok) => setTimeout(ok, ms));

/** The page's adapter, asked with requestAdapter(options): the attempt's launch plan's adapterOptions. */
function adapterQuery(options) {
  return `(async () => {
    const gpu = navigator.gpu;
    if (!gpu) return { adapterError: 'navigator.gpu is missing' };
    let adapter;
    try { adapter = await gpu.requestAdapter(${JSON.stringify(options)}); }
    catch (e) { return { adapterError: String((e && e.message) || e) }; }
    if (!adapter) return { adapter: null };
    const info = adapter.info || {};
    const configs = info.subgroupMatrixConfigs ? [...info.subgroupMatrixConfigs].map((c) => c.componentType + '->' + c.resultComponentType + ' ' + c.M + 'x' + c.N + 'x' + c.K) : [];
    const limits = {};
    for (const k of ['maxComputeWorkgroupStorageSize', 'maxStorageBufferBindingSize', 'maxBufferSize', 'maxComputeInvocationsPerWorkgroup']) limits[k] = adapter.limits[k];
    return { adapter: {
      vendor: info.vendor, architecture: info.architecture, device: info.device, description: info.description,
      isFallbackAdapter: !!(info.isFallbackAdapter ?? adapter.isFallbackAdapter),
      featureLevel: info.featureLevel ?? (adapter.features.has('core-features-and-limits') ? 'core' : 'compatibility'),
      subgroupMinSize: info.subgroupMinSize, subgroupMaxSize: info.subgroupMaxSize,
      features: [...adapter.features].map(String).sort(), subgroupMatrixConfigs: configs,
      wgslLanguageFeatures: [...gpu.wgslLanguageFeatures].map(String).sort(), limits } };
  })()`;
}

/**
 * chrome://gpu's text, from the DOM alone and through its shadow roots: a line per block element, a tab
 * between table cells. Not innerText, which needs a layout: on a server without fonts it is blank.
 */
const GPU_PAGE_TEXT = `(() => {
  const BLOCK = new Set(['DIV', 'P', 'LI', 'TR', 'H1', 'H2', 'H3', 'H4', 'TABLE', 'UL', 'OL', 'BR', 'SECTION', 'PRE', 'DT', 'DD']);
  const text = (node) => {
    if (node.nodeType === 3) return node.data;
    if (node.nodeType !== 1 && node.nodeType !== 9 && node.nodeType !== 11) return '';
    if (node.tagName === 'STYLE' || node.tagName === 'SCRIPT' || node.tagName === 'TEMPLATE') return '';
    let s = node.shadowRoot ? text(node.shadowRoot) : '';
    for (const c of node.childNodes) s += text(c);
    if (node.tagName === 'TD' || node.tagName === 'TH') s += '\\t';
    else if (BLOCK.has(node.tagName)) s += '\\n';
    return s;
  };
  return text(document);
})()`;

async function runAttempt(attempt, o, pageUrl, deadline) {
  const started = Date.now();
  const record = { id: attempt.id, title: attempt.title, args: attemptArgs(attempt), env: {}, notes: [], adapter: null };
  const cleanups = [];
  const profile = mkdtempSync(join(tmpdir(), `qgemm-probe-${attempt.id}-`));
  cleanups.push(() => rmSync(profile, { recursive: true, force: true }));
  let stderr = '';
  let child = null;
  try {
    const plan = launchPlan(attempt, {
      uid: process.getuid?.(),
      icd: o.icd,
      eglVendor: existsSync(o.eglVendor) ? o.eglVendor : '',
      icdDir: resolve(o.icdDir),
      home: profile,
    });
    const base = { ...process.env, VK_LOADER_DEBUG: 'error,warn' };
    const ld = libraryPath(o.prefix);
    if (ld) base.LD_LIBRARY_PATH = ld;
    const setup = await prepareLaunch(plan, { env: base, prefix: o.prefix, profile });
    cleanups.push(() => {
      setup.cleanup();
      record.notes.push(...setup.notes.filter((n) => n.startsWith('cleanup:')));
    });
    record.notes.push(...setup.notes);
    const env = setup.env;
    let command = o.chrome;
    let args = [...record.args, `--user-data-dir=${profile}`, '--remote-debugging-pipe', 'about:blank'];
    if (plan.runAs !== null) {
      const [file, ...prefix] = runAsCommand(plan.runAs, command);
      args = [...prefix, ...args];
      command = file;
    }
    for (const k of ['VK_ICD_FILENAMES', '__EGL_VENDOR_LIBRARY_FILENAMES', 'DISPLAY', 'XDG_DATA_DIRS', 'VK_LOADER_DEBUG'])
      if (env[k]) record.env[k] = env[k];
    child = spawn(command, args, { env, stdio: ['ignore', 'pipe', 'pipe', 'pipe', 'pipe'] });
    const exited = new Promise((ok) => child.once('exit', (code, signal) => ok(signal ?? code)));
    const append = (d) => {
      if (stderr.length < 4 << 20) stderr += d;
    };
    child.stdout.on('data', append);
    child.stderr.on('data', append);
    child.once('error', (e) => append(`spawn failed: ${e.message}\n`));
    const cdp = connectPipe(child);
    const work = (async () => {
      const version = await cdp.send('Browser.getVersion');
      record.product = version.product;
      const page = await openPage(cdp, pageUrl);
      // The new page starts as about:blank (complete at once): wait for the served page itself.
      await poll(cdp, page, 'location.protocol + document.readyState', (v) => v === 'http:complete', 10_000);
      // A GPU process that hangs must not cost chrome://gpu's lines: requestAdapter() gets 25 s.
      const r = await Promise.race([
        evaluate(cdp, page, adapterQuery(plan.adapterOptions)),
        sleep(25_000).then(() => ({ adapterError: 'requestAdapter() did not answer in 25 s' })),
      ]);
      record.adapter = r?.adapter ?? null;
      if (r?.adapterError) record.adapterError = r.adapterError;
      const gpu = await openPage(cdp, 'chrome://gpu');
      const text = await poll(
        cdp,
        gpu,
        GPU_PAGE_TEXT,
        (t) => typeof t === 'string' && /WebGPU/.test(t) && /GL_RENDERER|Skia Backend/.test(t),
        15_000,
      );
      record.gpuLines = gpuPageLines(text ?? '');
      record.gpuText = String(text ?? '').slice(0, 200_000);
      await cdp.send('Browser.close').catch(() => undefined);
    })();
    const limit = Math.min(o.timeout * 1000, deadline - Date.now());
    const timedOut = await Promise.race([work.then(() => false), sleep(limit).then(() => true)]);
    if (timedOut) record.error = `timed out after ${Math.round(limit / 1000)} s`;
    else await Promise.race([exited, sleep(5000)]);
  } catch (e) {
    record.error = String(e?.message ?? e).split('\n')[0];
  } finally {
    if (child && child.exitCode === null) {
      child.kill('SIGKILL');
      await sleep(200);
    }
    for (const c of cleanups.reverse()) {
      try {
        c();
      } catch (e) {
        record.notes.push(`cleanup: ${e.message}`);
      }
    }
  }
  record.stderrLines = stderrLines(stderr);
  record.stderrTail = stderr.split('\n').slice(-40).join('\n');
  record.seconds = Math.round((Date.now() - started) / 100) / 10;
  return record;
}

function printRecord(r, accept) {
  const lines = [`== attempt ${r.id}: ${r.title} (${r.seconds} s)`, `   flags: ${r.args.join(' ')}`];
  const env = Object.entries(r.env).map(([k, v]) => `${k}=${v}`);
  if (env.length) lines.push(`   env: ${env.join(' ')}`);
  for (const n of r.notes) lines.push(`   note: ${n}`);
  if (r.product) lines.push(`   browser: ${r.product}`);
  lines.push('   chrome://gpu:', ...(r.gpuLines?.length ? r.gpuLines.map((l) => `     ${l}`) : ['     (not read)']));
  const a = r.adapter;
  lines.push(`   requestAdapter(): ${a ? describeAdapter(a) : r.adapterError ? `threw ${r.adapterError}` : 'null'}`);
  if (a) {
    lines.push(
      `     isFallbackAdapter: ${a.isFallbackAdapter}; featureLevel: ${a.featureLevel}; subgroups ${a.subgroupMinSize}-${a.subgroupMaxSize}`,
    );
    const sgmat = a.features.includes('chromium-experimental-subgroup-matrix');
    lines.push(
      `     chromium-experimental-subgroup-matrix: ${sgmat ? `yes (${a.subgroupMatrixConfigs.join(', ') || 'no configs listed'})` : 'no'}`,
    );
    lines.push(`     features: ${a.features.join(', ')}`);
  }
  lines.push('   stderr:', ...(r.stderrLines?.length ? r.stderrLines.map((l) => `     ${l}`) : ['     (no matching lines)']));
  if (r.error) lines.push(`   error: ${r.error}`);
  lines.push(`   => ${isHardwareAdapter(a, accept) && !r.error ? 'HARDWARE' : 'no hardware adapter'}: ${attemptReason(r, accept)}`);
  console.log(lines.join('\n'));
}

function tryRun(cmd, args) {
  try {
    return execFileSync(cmd, args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], timeout: 20_000 }).trim();
  } catch (e) {
    return `(${cmd} failed: ${String(e.message).split('\n')[0]})`;
  }
}

async function main() {
  let o;
  try {
    o = parseArgs(process.argv.slice(2));
  } catch (e) {
    console.error(`chrome-gpu-probe: ${e.message}`);
    process.exit(2);
  }
  if (!existsSync(o.chrome)) {
    console.error(`chrome-gpu-probe: no Chromium at ${o.chrome}`);
    process.exit(2);
  }
  mkdirSync(o.out, { recursive: true });
  const deadline = Date.now() + o.budget * 1000;
  const server = createServer((_req, res) => {
    res
      .writeHead(200, { 'Content-Type': 'text/html; charset=utf-8' })
      .end('<!doctype html><title>qgemm probe</title><p>qgemm chrome-gpu-probe</p>');
  });
  await new Promise((ok) => server.listen(0, '127.0.0.1', ok));
  const pageUrl = `http://127.0.0.1:${server.address().port}/`;
  const ld = libraryPath(o.prefix);
  const machine = {
    host: hostname(),
    date: new Date().toISOString(),
    node: process.version,
    chrome: o.chrome,
    chromeVersion: tryRun(o.chrome, ['--version']),
    gpu: existsSync('/dev/nvidia0')
      ? tryRun('nvidia-smi', ['--query-gpu=name,driver_version', '--format=csv,noheader'])
      : 'no /dev/nvidia0',
    devices: readdirSync('/dev').filter((d) => d.startsWith('nvidia') || d === 'dri'),
    icd: o.icd,
    icdPresent: existsSync(o.icd),
    icdManifest: existsSync(o.icd) ? readFileSync(o.icd, 'utf8').slice(0, 2000) : null,
    eglVendorPresent: existsSync(o.eglVendor),
    ldLibraryPath: ld,
  };
  console.log(`chrome-gpu-probe: ${machine.chromeVersion}; GPU: ${machine.gpu}; ICD ${o.icd}${machine.icdPresent ? '' : ' (MISSING)'}`);
  const wanted = ATTEMPTS.filter((a) => o.attempts.includes(a.id));
  const records = await runAttempts(
    wanted,
    async (attempt) => {
      if (Date.now() > deadline - 5000)
        return {
          id: attempt.id,
          title: attempt.title,
          args: attemptArgs(attempt),
          env: {},
          notes: [],
          adapter: null,
          error: `skipped: the probe's budget of ${o.budget} s is spent`,
          seconds: 0,
        };
      const r = await runAttempt(attempt, o, pageUrl, deadline);
      printRecord(r, o.accept);
      return r;
    },
    o.accept,
  );
  server.close();
  const table = attemptTable(records, o.accept);
  const found = records.find((r) => !r.error && isHardwareAdapter(r.adapter, o.accept));
  const file = join(o.out, 'chrome-gpu-probe.json');
  writeFileSync(file, `${JSON.stringify({ machine, accept: o.accept, hardware: found ? found.id : null, records, table }, null, 2)}\n`);
  console.log(`\nwrote ${file}\n`);
  console.log(table);
  console.log(found ? `\nhardware adapter with attempt ${found.id}` : '\nno attempt gave a hardware adapter');
  process.exit(found ? 0 : 1);
}

await main();
