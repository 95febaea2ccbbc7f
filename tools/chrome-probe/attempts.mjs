// The attempts of tools/chrome-gpu-probe.mjs (which Chrome flags and environment give a hardware WebGPU
// adapter on a GPU server with no display), and the pure logic around them: the flag sets, reading
// chrome://gpu's text, picking the stderr lines that explain a failure, judging an attempt's adapter,
// and the closing attempt table. It sits beside the launcher: tools/chromium.ts takes its hardware
// profile's flags from HARDWARE_FLAGS here, so the probe and the benchmark launch Chrome the same way.
// No imports: it runs under a bare Node on the GPU server, and under vitest here
// (test/unit/chrome-probe.test.ts, with canned outputs).

/** Flags every attempt gets: WebGPU on Linux, the experimental features (subgroup matrices), unquantized timestamps. */
export const PROBE_COMMON_FLAGS = [
  '--enable-unsafe-webgpu',
  '--enable-webgpu-developer-features',
  '--enable-dawn-features=allow_unsafe_apis',
  '--disable-dawn-features=timestamp_quantization',
  '--ignore-gpu-blocklist',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--disable-quic',
  '--enable-logging=stderr',
];

/**
 * The Colab recipe (developer.chrome.com/docs/web-platform/webgpu/colab-headless), less --no-sandbox and
 * --headless=new, which each attempt adds as it needs: ANGLE on Vulkan (headless Chrome otherwise injects
 * --use-angle=swiftshader-webgl and marks WebGPU "Software"), Chrome's Vulkan backend, and no surface
 * extensions (NVIDIA's ICD lacks VK_EXT_headless_surface, so asking for it fails vkCreateInstance).
 */
export const HARDWARE_FLAGS = ['--use-angle=vulkan', '--enable-features=Vulkan', '--disable-vulkan-surface'];

/** NVIDIA's driver files on the GPU servers this project uses. */
export const NVIDIA_ICD = '/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json';
export const NVIDIA_EGL_VENDOR = '/usr/local/nvidia/share/glvnd/egl_vendor.d/10_nvidia.json';
/** Where the Vulkan loader looks for ICDs without VK_ICD_FILENAMES (attempt C copies NVIDIA's there). */
export const STANDARD_ICD_DIR = '/usr/share/vulkan/icd.d';

/**
 * @typedef {object} Attempt
 * @property {string} id
 * @property {string} title
 * @property {string[]} flags           beside PROBE_COMMON_FLAGS
 * @property {boolean} headless
 * @property {boolean} sandbox          true: no --no-sandbox; the browser runs as an unprivileged user
 * @property {boolean} icdEnv           VK_ICD_FILENAMES points at the ICD (false: the loader's standard path)
 * @property {boolean} copyIcd          copy the ICD into STANDARD_ICD_DIR first
 * @property {boolean} xvfb             start a carried Xvfb and set DISPLAY
 * @property {boolean} eglVendor        __EGL_VENDOR_LIBRARY_FILENAMES = NVIDIA's EGL vendor file
 * @property {'core' | 'compatibility'} featureLevel  requestAdapter's featureLevel
 */

/** @type {Attempt[]} */
export const ATTEMPTS = [
  {
    id: 'A',
    title: 'the Colab flags',
    flags: HARDWARE_FLAGS,
    headless: true,
    sandbox: false,
    icdEnv: true,
    copyIcd: false,
    xvfb: false,
    eglVendor: false,
    featureLevel: 'core',
  },
  {
    id: 'B',
    title: "A, Chrome reusing ANGLE's Vulkan instance",
    flags: ['--use-angle=vulkan', '--enable-features=Vulkan,VulkanFromANGLE,DefaultANGLEVulkan', '--disable-vulkan-surface'],
    headless: true,
    sandbox: false,
    icdEnv: true,
    copyIcd: false,
    xvfb: false,
    eglVendor: false,
    featureLevel: 'core',
  },
  {
    id: 'C',
    title: 'A with the sandbox on (an unprivileged user), the ICD copied to the standard path',
    flags: HARDWARE_FLAGS,
    headless: true,
    sandbox: true,
    icdEnv: false,
    copyIcd: true,
    xvfb: false,
    eglVendor: false,
    featureLevel: 'core',
  },
  {
    id: 'D',
    title: 'not headless: --ozone-platform=x11 on a carried Xvfb',
    flags: ['--ozone-platform=x11', '--use-angle=vulkan', '--enable-features=Vulkan'],
    headless: false,
    sandbox: false,
    icdEnv: true,
    copyIcd: false,
    xvfb: true,
    eglVendor: true,
    featureLevel: 'core',
  },
  {
    id: 'E',
    title: "ANGLE on EGL (--use-angle=gl-egl) with NVIDIA's EGL vendor file",
    flags: ['--use-gl=angle', '--use-angle=gl-egl', '--enable-features=Vulkan', '--disable-vulkan-surface'],
    headless: true,
    sandbox: false,
    icdEnv: true,
    copyIcd: false,
    xvfb: false,
    eglVendor: true,
    featureLevel: 'core',
  },
  {
    id: 'F',
    title: "A, asking for a compatibility-mode adapter (featureLevel: 'compatibility')",
    flags: HARDWARE_FLAGS,
    headless: true,
    sandbox: false,
    icdEnv: true,
    copyIcd: false,
    xvfb: false,
    eglVendor: false,
    featureLevel: 'compatibility',
  },
];

/** The attempt whose flags are id's, or undefined. */
export function attemptById(id) {
  return ATTEMPTS.find((a) => a.id === String(id).toUpperCase());
}

/** The full command line of an attempt (without --user-data-dir and the DevTools pipe). */
export function attemptArgs(attempt) {
  return [
    ...(attempt.sandbox ? [] : ['--no-sandbox']),
    ...(attempt.headless ? ['--headless=new'] : []),
    ...PROBE_COMMON_FLAGS,
    ...attempt.flags,
  ];
}

/** The user an attempt with the sandbox on runs Chrome as when started by root (Chrome refuses root with its sandbox): nobody. */
export const SANDBOX_UID = 65534;
/** The ICD file name an attempt that copies the ICD writes into the ICD folder. */
export const COPIED_ICD_NAME = 'qgemm-probe-icd.json';

/**
 * What launching Chrome with an attempt takes, beside its flags: the one definition the probe
 * (tools/chrome-gpu-probe.mjs) and the benchmark's launcher (tools/chromium.ts) both follow; pure, so
 * test/unit/chrome-probe.test.ts checks it on canned machines. `machine`: { uid (the launching
 * process's), icd (the driver's ICD manifest, or '' for the loader's own search), eglVendor (the EGL
 * vendor file, or '' where there is none), icdDir (the folder the ICD is copied into; default
 * STANDARD_ICD_DIR), home (a folder for HOME and XDG_RUNTIME_DIR: the fresh profile) }. Returns:
 *   args          attemptArgs(attempt): --no-sandbox unless the sandbox is on, --headless=new when headless;
 *   headless      false: Chrome needs a display (startXvfb in ./setup.mjs);
 *   unsetEnv      taken out of the inherited environment first (an ICD or display from outside must not leak in);
 *   env           then set: VK_ICD_FILENAMES where the attempt names the ICD, the EGL vendor file, HOME, TMPDIR, and
 *                 XDG_DATA_DIRS (icdDir's grandparent: the loader reads <dir>/vulkan/icd.d) where the ICD is copied
 *                 to a folder other than the standard one (a rehearsal);
 *   copyIcd       { from, dir } where the ICD is copied into the loader's standard folder first, else null;
 *   runAs         the uid Chrome runs as (SANDBOX_UID where the sandbox is on and the caller is root), else null;
 *   adapterOptions what the page's requestAdapter() gets beside its own options ({ featureLevel } for F).
 */
export function launchPlan(attempt, machine) {
  const icd = machine.icd ?? '';
  const icdDir = machine.icdDir ?? STANDARD_ICD_DIR;
  const env = {};
  if (attempt.icdEnv && icd) env.VK_ICD_FILENAMES = icd;
  if (attempt.eglVendor && machine.eglVendor) env.__EGL_VENDOR_LIBRARY_FILENAMES = machine.eglVendor;
  if (attempt.copyIcd && icd && icdDir.replace(/\/+$/, '') !== STANDARD_ICD_DIR)
    env.XDG_DATA_DIRS = icdDir.replace(/\/+$/, '').split('/').slice(0, -2).join('/') || '/';
  if (machine.home) {
    env.HOME = machine.home;
    env.XDG_RUNTIME_DIR = machine.home;
    env.TMPDIR = machine.home; // Chrome's /tmp/org.chromium.* files go with the profile, even from an attempt cut short
  }
  return {
    args: attemptArgs(attempt),
    headless: attempt.headless,
    unsetEnv: ['VK_ICD_FILENAMES', 'VK_DRIVER_FILES', 'DISPLAY'],
    env,
    copyIcd: attempt.copyIcd && icd ? { from: icd, dir: icdDir } : null,
    runAs: attempt.sandbox && machine.uid === 0 ? SANDBOX_UID : null,
    adapterOptions: attempt.featureLevel === 'core' ? {} : { featureLevel: attempt.featureLevel },
  };
}

/** The command that runs `command` as `uid` (util-linux's setpriv, no supplementary groups): [file, ...args]. */
export function runAsCommand(uid, command) {
  return ['setpriv', `--reuid=${uid}`, `--regid=${uid}`, '--clear-groups', '--', command];
}

/**
 * chrome://gpu's rows the probe prints, by their label: "label<TAB>value" in the page's tables, "*   label:
 * value" and "label   :<TAB>value" in the text report the page also holds (its DOM text has both).
 */
const GPU_PAGE_ROWS = /^(WebGPU|WebGPU interop|Vulkan|Skia Backend|GL_RENDERER|GL implementation parts|Display type|Sandboxed)\s*(:|\t)/;
/** Lines of the "Problems Detected" and "Log Messages" sections that concern WebGPU's way to the GPU. */
const GPU_PAGE_PROBLEM = /ANGLE|WebGPU|Dawn|Vulkan|GPU process|GpuProcessHost|EGL|swiftshader/i;

/**
 * The lines of chrome://gpu's text that say what WebGPU got: the feature status of WebGPU and Vulkan,
 * the driver rows Skia Backend, GL_RENDERER, GL implementation parts, Display type and Sandboxed, then
 * the lines of "Problems Detected" and "Log Messages" that name ANGLE, WebGPU, Dawn, Vulkan, EGL or the
 * GPU process (ANGLE's own warnings reach the log). Cells become "label: value", a line once (the tables
 * and the text report say the same); each line at most 300 characters, at most 40 lines.
 */
export function gpuPageLines(text) {
  const out = [];
  const seen = new Set();
  let section = '';
  const push = (line) => {
    const cells = line.replace(/\s*:?\s*\t+/g, '\t').replace(/^\t+|\t+$/g, '');
    const clean = cells.replace(/\t+/g, ': ').replace(/\s+/g, ' ').trim();
    if (!clean || seen.has(clean) || out.length >= 40) return;
    seen.add(clean);
    out.push(clean.length > 300 ? `${clean.slice(0, 297)}...` : clean);
  };
  for (const raw of String(text ?? '').split('\n')) {
    const line = raw.trim().replace(/^\*\s+/, ''); // the text report's list items
    if (
      /^(Graphics Feature Status|Version Information|Driver Information|Driver Bug Workarounds|Problems Detected|ANGLE Features|Compositor Information|Video Acceleration Information|Vulkan Information|Dawn Info|Device Performance Information|Log Messages)$/.test(
        line,
      )
    ) {
      section = line;
      continue;
    }
    if (GPU_PAGE_ROWS.test(line)) push(line);
    else if ((section === 'Problems Detected' || section === 'Log Messages') && GPU_PAGE_PROBLEM.test(line))
      push(`${section === 'Log Messages' ? 'log' : 'problem'}: ${line}`);
  }
  return out;
}

/** stderr lines that explain a failed GPU process (the issue's list), deduplicated, at most `max`. */
export const STDERR_PATTERN = /vkCreateInstance|VK_ERROR|loader|Exiting GPU|cannot open shared object|No usable sandbox/i;
export function stderrLines(text, max = 30) {
  const seen = new Set();
  const out = [];
  for (const raw of String(text ?? '').split('\n')) {
    // Chrome's prefix "[pid:tid:date/time:LEVEL:file(line)] " differs on every line: key on the rest.
    const line = raw.trim();
    const key = line.replace(/^\[[^\]]*\]\s*/, '');
    if (!STDERR_PATTERN.test(line) || seen.has(key)) continue;
    seen.add(key);
    out.push(line.length > 400 ? `${line.slice(0, 397)}...` : line);
    if (out.length >= max) break;
  }
  return out;
}

/**
 * Is this adapter the hardware GPU? Not a fallback adapter, not SwiftShader or another CPU
 * implementation. `accept` (the probe's --accept) lists vendors or architectures to count as hardware
 * anyway: a rehearsal on SwiftShader passes ['swiftshader'].
 */
export function isHardwareAdapter(adapter, accept = []) {
  if (!adapter) return false;
  const names = [adapter.vendor, adapter.architecture].map((s) => String(s ?? '').toLowerCase());
  if (accept.some((a) => names.includes(String(a).toLowerCase()))) return true;
  if (adapter.isFallbackAdapter) return false;
  const software = /swiftshader|llvmpipe|lavapipe|software|microsoft basic/i;
  return !software.test(`${adapter.vendor} ${adapter.architecture} ${adapter.description}`);
}

/** The WebGPU status line of chrome://gpu ("WebGPU: Hardware accelerated", "WebGPU: Software only..."), or ''. */
export function webgpuStatus(gpuLines) {
  return (gpuLines ?? []).find((l) => /^WebGPU\s*:/.test(l)) ?? (gpuLines ?? []).find((l) => /^WebGPU\b/.test(l)) ?? '';
}

/** A short description of an adapter: "nvidia / hopper (NVIDIA H100 ...)", with ", fallback" where it is one. */
export function describeAdapter(adapter) {
  if (!adapter) return 'none';
  const what = [adapter.vendor || '?', adapter.architecture || '?'].join(' / ');
  const detail = adapter.description || adapter.device;
  return `${what}${detail ? ` (${detail})` : ''}${adapter.isFallbackAdapter ? ', fallback' : ''}`;
}

/**
 * Why an attempt ended as it did, in one line, from its record: the launch error or timeout; for a
 * hardware adapter whether it offers subgroup matrices; else the first stderr line that names the
 * failure (vkCreateInstance, VK_ERROR, the loader, the GPU process exiting), then chrome://gpu's WebGPU
 * status.
 */
export function attemptReason(record, accept = []) {
  if (record.error) return `failed: ${String(record.error).split('\n')[0]}`;
  const adapter = record.adapter;
  const status = webgpuStatus(record.gpuLines);
  if (isHardwareAdapter(adapter, accept)) {
    const sgmat = (adapter.features ?? []).includes('chromium-experimental-subgroup-matrix');
    const what = isHardwareAdapter(adapter) ? 'hardware adapter' : `counted as hardware (--accept ${accept.join(',')})`;
    return `${what}; subgroup matrices: ${sgmat ? 'yes' : 'no'}`;
  }
  const stderr = record.stderrLines ?? [];
  const pick =
    stderr.find((l) => /cannot open shared object|No usable sandbox/i.test(l)) ?? // the cause, where a line names it
    stderr.find((l) => /vkCreateInstance|VK_ERROR/i.test(l)) ??
    stderr.find((l) => /Exiting GPU/i.test(l)) ??
    stderr.find((l) => /loader/i.test(l) && /error/i.test(l));
  const cause = pick ? pick.replace(/^\[[^\]]*\]\s*/, '') : '';
  const head = adapter
    ? 'fallback adapter only'
    : record.adapterError
      ? `requestAdapter threw: ${record.adapterError}`
      : 'requestAdapter() = null';
  return [head, status && `chrome://gpu ${status}`, cause && `stderr: ${cause}`].filter(Boolean).join('; ');
}

/** Runs `run(attempt)` for each attempt in order until one gives a hardware adapter; returns every record. */
export async function runAttempts(attempts, run, accept = []) {
  const records = [];
  for (const attempt of attempts) {
    const record = await run(attempt);
    records.push(record);
    if (!record.error && isHardwareAdapter(record.adapter, accept)) break;
  }
  return records;
}

/** The closing table: attempt | adapter | reason, one row per record, in Markdown. */
export function attemptTable(records, accept = []) {
  const rows = records.map((r) => [r.id, describeAdapter(r.adapter), attemptReason(r, accept)].map((c) => c.replace(/\|/g, '/')));
  return ['| attempt | adapter | reason |', '| --- | --- | --- |', ...rows.map((r) => `| ${r.join(' | ')} |`)].join('\n');
}
