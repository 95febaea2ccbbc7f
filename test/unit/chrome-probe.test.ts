// Chrome on a GPU server: the launcher's hardware profile (tools/chromium.ts) and the probe's pure logic
// (tools/chrome-probe/attempts.mjs: the attempts' flags, chrome://gpu's lines, the stderr lines, the
// verdict per attempt, stopping at the first hardware adapter, the attempt table), on canned outputs:
// chrome://gpu text in the shape Chromium 156 gives it, and stderr lines of the failures the issue names.
// No browser is started here; bench/README.md "Chrome on a GPU server" says how the probe runs for real.

import { spawnSync } from 'node:child_process';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  ATTEMPTS,
  attemptArgs,
  attemptReason,
  attemptTable,
  gpuPageLines,
  isHardwareAdapter,
  runAttempts,
  stderrLines,
  type AttemptRecord,
  type ProbeAdapter,
} from '../../tools/chrome-probe/attempts.mjs';
import { chromeProfile, chromiumArgs, hardwareFlags, WEBGPU_FLAGS } from '../../tools/chromium.ts';
import { verifyPlan } from '../../bench/impls/chrome.ts';

const H100: ProbeAdapter = {
  vendor: 'nvidia',
  architecture: 'hopper',
  description: 'NVIDIA H100 80GB HBM3',
  isFallbackAdapter: false,
  features: ['chromium-experimental-subgroup-matrix', 'subgroups', 'timestamp-query'],
};
const SWIFTSHADER: ProbeAdapter = {
  vendor: 'google',
  architecture: 'swiftshader',
  description: 'SwiftShader Device (Subzero)',
  isFallbackAdapter: true,
  features: ['subgroups', 'timestamp-query'],
};

// chrome://gpu's innerText rows ("label<TAB>value"), as the probe reads them from its shadow roots.
const GPU_PAGE = [
  'Graphics Feature Status',
  'Vulkan: Disabled',
  'WebGPU: Software only, hardware acceleration unavailable',
  'WebGL: Software only, hardware acceleration unavailable',
  'Driver Information',
  'Skia Backend\tGaneshGL',
  'Sandboxed\tfalse',
  'GL implementation parts\t(gl=egl-angle,angle=swiftshader)',
  'GL_RENDERER\tANGLE (Google, Vulkan 1.3.0 (SwiftShader Device (Subzero) (0x0000C0DE)), SwiftShader driver-5.0.0)',
  'GL_EXTENSIONS\tGL_ANGLE_base_vertex_base_instance GL_ANGLE_client_arrays',
  'Problems Detected',
  'Gpu compositing has been disabled, either via blocklist, about:flags or the command line.',
  'WebGPU has been disabled via blocklist or the command line.',
  'ANGLE Features',
  'allowCompressedFormats (Frontend workarounds): Enabled',
  'Log Messages',
  '[1:1:1123/101010.1:WARNING:ui/gl/angle_platform_impl.cc:39] : vulkan_icd.cpp:391 (ChoosePhysicalDevice): Preferred device ICD not found.',
  '[1:1:1123/101010.2:WARNING:media/gpu/vaapi/vaapi_wrapper.cc:1655] : drmGetDevices2() has not found any devices',
].join('\n');

const STDERR_SURFACE = [
  '[41:41:1123/101010.100:ERROR:gpu/vulkan/vulkan_instance.cc:110] vkCreateInstance() failed: -7',
  '[41:41:1123/101010.101:ERROR:gpu/vulkan/vulkan_instance.cc:110] vkCreateInstance() failed: -7',
  '[41:41:1123/101010.102:ERROR:content/gpu/gpu_main.cc:300] Exiting GPU process due to errors during initialization',
  '[7:7:1123/101010.103:INFO:CONSOLE(1)] "page loaded", source: http://127.0.0.1/ (1)',
  '[Vulkan Loader] WARNING: Vulkan Loader: unsafe searching is enabled',
].join('\n');

describe('the hardware profile of tools/chromium.ts', () => {
  const saved = { adapter: process.env.QGEMM_CHROMIUM_ADAPTER, attempt: process.env.QGEMM_CHROME_ATTEMPT };
  const restore = (name: string, value: string | undefined) =>
    value === undefined ? delete process.env[name] : (process.env[name] = value);
  beforeEach(() => {
    delete process.env.QGEMM_CHROMIUM_ADAPTER;
    delete process.env.QGEMM_CHROME_ATTEMPT;
  });
  afterEach(() => {
    restore('QGEMM_CHROMIUM_ADAPTER', saved.adapter);
    restore('QGEMM_CHROME_ATTEMPT', saved.attempt);
  });

  it('has --disable-vulkan-surface and a --use-angle that is not SwiftShader; SwiftShader keeps its own flags', () => {
    const hardware = chromiumArgs({ swiftshader: false, userDataDir: '/tmp/p' });
    expect(hardware).toContain('--disable-vulkan-surface');
    expect(hardware).toContain('--enable-features=Vulkan');
    const angle = hardware.filter((f) => f.startsWith('--use-angle='));
    expect(angle).toEqual(['--use-angle=vulkan']);
    expect(hardware).not.toContain('--use-webgpu-adapter=swiftshader');
    for (const flag of WEBGPU_FLAGS.common) expect(hardware).toContain(flag);
    const software = chromiumArgs({ swiftshader: true, userDataDir: '/tmp/p' });
    expect(software).toContain('--use-webgpu-adapter=swiftshader');
    expect(software.some((f) => f.startsWith('--use-angle='))).toBe(false);
  });

  it("takes every attempt's flags by name (A to F), and names a wrong one", () => {
    expect(hardwareFlags('B')).toContain('--enable-features=Vulkan,VulkanFromANGLE,DefaultANGLEVulkan');
    expect(hardwareFlags('b')).toContain('--disable-vulkan-surface');
    expect(hardwareFlags('E')).toContain('--use-angle=gl-egl');
    expect(hardwareFlags('D')).toContain('--ozone-platform=x11');
    expect(hardwareFlags('C')).toEqual(hardwareFlags('A'));
    expect(hardwareFlags('F')).toEqual(hardwareFlags('A'));
    expect(() => hardwareFlags('G')).toThrow('QGEMM_CHROME_ATTEMPT: "G" is not one of A, B, C, D, E, F');
    process.env.QGEMM_CHROME_ATTEMPT = 'B';
    expect(chromiumArgs({ swiftshader: false, userDataDir: '/tmp/p' })).toContain(
      '--enable-features=Vulkan,VulkanFromANGLE,DefaultANGLEVulkan',
    );
    // C keeps the sandbox; SwiftShader and every other attempt run without it.
    expect(chromiumArgs({ swiftshader: false, userDataDir: '/tmp/p', attempt: 'C' })).not.toContain('--no-sandbox');
    expect(chromiumArgs({ swiftshader: false, userDataDir: '/tmp/p', attempt: 'D' })).toContain('--no-sandbox');
    expect(chromiumArgs({ swiftshader: true, userDataDir: '/tmp/p', attempt: 'C' })).toContain('--no-sandbox');
  });

  it('QGEMM_CHROMIUM_ADAPTER overrides the adapter choice; a wrong value is named', () => {
    expect(chromeProfile(true)).toBe('swiftshader');
    expect(chromeProfile(false)).toBe('hardware');
    process.env.QGEMM_CHROMIUM_ADAPTER = 'hardware';
    expect(chromeProfile(true)).toBe('hardware');
    process.env.QGEMM_CHROMIUM_ADAPTER = 'gpu';
    expect(() => chromeProfile(true)).toThrow('QGEMM_CHROMIUM_ADAPTER: "gpu" is not swiftshader or hardware');
  });

  it('runs verifyDevice() in the page on hardware by default; QGEMM_CHROME_VERIFY widens, narrows or stops it', () => {
    expect(verifyPlan(undefined)).toEqual({ when: 'hardware' });
    expect(verifyPlan('off')).toBeNull();
    expect(verifyPlan('all')).toEqual({ when: 'always' });
    expect(verifyPlan('dot4-32x32, gemv')).toEqual({ when: 'always', kernels: ['dot4-32x32', 'gemv'] });
  });
});

describe('the probe attempts (tools/chrome-probe/attempts.mjs)', () => {
  it('are A to F in order, each the issue names', () => {
    expect(ATTEMPTS.map((a) => a.id)).toEqual(['A', 'B', 'C', 'D', 'E', 'F']);
    const args = Object.fromEntries(ATTEMPTS.map((a) => [a.id, attemptArgs(a)]));
    // A: the Colab recipe.
    for (const flag of [
      '--no-sandbox',
      '--headless=new',
      '--use-angle=vulkan',
      '--enable-features=Vulkan',
      '--disable-vulkan-surface',
      '--enable-unsafe-webgpu',
    ])
      expect(args.A).toContain(flag);
    expect(args.B).toContain('--enable-features=Vulkan,VulkanFromANGLE,DefaultANGLEVulkan');
    expect(args.C).not.toContain('--no-sandbox');
    expect(ATTEMPTS[2]).toMatchObject({ sandbox: true, copyIcd: true, icdEnv: false });
    expect(args.D).toContain('--ozone-platform=x11');
    expect(args.D.some((f) => f.startsWith('--headless'))).toBe(false);
    expect(ATTEMPTS[3]).toMatchObject({ xvfb: true });
    expect(args.E).toContain('--use-angle=gl-egl');
    expect(ATTEMPTS[4]).toMatchObject({ eglVendor: true });
    expect(args.F).toEqual(args.A);
    expect(ATTEMPTS[5].featureLevel).toBe('compatibility');
    // Every attempt asks for the experimental features (subgroup matrices) and unquantized timestamps.
    for (const a of Object.values(args)) {
      expect(a).toContain('--enable-dawn-features=allow_unsafe_apis');
      expect(a).toContain('--enable-webgpu-developer-features');
    }
  });

  it("picks chrome://gpu's WebGPU, Vulkan, Skia, GL_RENDERER rows and the ANGLE problems", () => {
    expect(gpuPageLines(GPU_PAGE)).toEqual([
      'Vulkan: Disabled',
      'WebGPU: Software only, hardware acceleration unavailable',
      'Skia Backend: GaneshGL',
      'Sandboxed: false',
      'GL implementation parts: (gl=egl-angle,angle=swiftshader)',
      'GL_RENDERER: ANGLE (Google, Vulkan 1.3.0 (SwiftShader Device (Subzero) (0x0000C0DE)), SwiftShader driver-5.0.0)',
      'problem: WebGPU has been disabled via blocklist or the command line.',
      'log: [1:1:1123/101010.1:WARNING:ui/gl/angle_platform_impl.cc:39] : vulkan_icd.cpp:391 (ChoosePhysicalDevice): Preferred device ICD not found.',
    ]);
    expect(gpuPageLines('')).toEqual([]);
  });

  it("reads the same rows from the page's text report (its DOM text, which needs no fonts), once each", () => {
    const report = [
      'Graphics Feature Status',
      '=======================',
      '*   Vulkan: Disabled',
      '*   WebGPU: Software only, hardware acceleration unavailable',
      'Driver Information',
      '==================',
      'Skia Backend                    :\tGaneshGL\t',
      'Sandboxed                       :\tfalse\t',
      'Problems Detected',
      '=================',
      '*   WebGPU has been disabled via blocklist or the command line.',
    ].join('\n');
    const lines = [
      'Vulkan: Disabled',
      'WebGPU: Software only, hardware acceleration unavailable',
      'Skia Backend: GaneshGL',
      'Sandboxed: false',
    ];
    const problem = 'problem: WebGPU has been disabled via blocklist or the command line.';
    expect(gpuPageLines(report)).toEqual([...lines, problem]);
    expect(gpuPageLines(`${GPU_PAGE}\n${report}`).filter((l) => lines.includes(l) || l === problem)).toEqual([...lines, problem]);
  });

  it('keeps the stderr lines of vkCreateInstance, VK_ERROR, the loader and the GPU process exiting, once each', () => {
    expect(stderrLines(STDERR_SURFACE)).toEqual([
      '[41:41:1123/101010.100:ERROR:gpu/vulkan/vulkan_instance.cc:110] vkCreateInstance() failed: -7',
      '[41:41:1123/101010.102:ERROR:content/gpu/gpu_main.cc:300] Exiting GPU process due to errors during initialization',
      '[Vulkan Loader] WARNING: Vulkan Loader: unsafe searching is enabled',
    ]);
  });

  it('names the specific cause where a line gives it: a driver library that does not load, or no usable sandbox', () => {
    const driver = [
      '[Vulkan Loader] ERROR: loader_icd_scan: libGLX_nvidia.so.0: cannot open shared object file: No such file or directory',
      '[41:41:1123/101010.100:ERROR:gpu/vulkan/vulkan_instance.cc:110] vkCreateInstance: Found no drivers!',
    ].join('\n');
    expect(attemptReason({ id: 'A', adapter: null, stderrLines: stderrLines(driver) })).toBe(
      'requestAdapter() = null; stderr: ERROR: loader_icd_scan: libGLX_nvidia.so.0: cannot open shared object file: No such file or directory',
    );
    const sandbox =
      '[9:9:1123/101010.1:FATAL:zygote_host_impl_linux.cc(128)] No usable sandbox! You are running as a user without user namespaces';
    expect(stderrLines(sandbox)).toHaveLength(1);
    expect(attemptReason({ id: 'C', adapter: null, stderrLines: stderrLines(sandbox) })).toMatch(/stderr: No usable sandbox!/);
  });

  it('judges each attempt: hardware (with or without subgroup matrices), fallback, null with its cause, failures', () => {
    expect(isHardwareAdapter(H100)).toBe(true);
    expect(isHardwareAdapter(SWIFTSHADER)).toBe(false);
    expect(isHardwareAdapter({ ...SWIFTSHADER, isFallbackAdapter: false })).toBe(false);
    expect(isHardwareAdapter(SWIFTSHADER, ['swiftshader'])).toBe(true);
    expect(isHardwareAdapter(null)).toBe(false);
    expect(attemptReason({ id: 'A', adapter: H100 })).toBe('hardware adapter; subgroup matrices: yes');
    expect(attemptReason({ id: 'A', adapter: SWIFTSHADER }, ['swiftshader'])).toBe(
      'counted as hardware (--accept swiftshader); subgroup matrices: no',
    );
    expect(attemptReason({ id: 'A', adapter: { ...H100, features: ['subgroups'] } })).toBe('hardware adapter; subgroup matrices: no');
    const surface: AttemptRecord = { id: 'A', adapter: null, gpuLines: gpuPageLines(GPU_PAGE), stderrLines: stderrLines(STDERR_SURFACE) };
    expect(attemptReason(surface)).toBe(
      'requestAdapter() = null; chrome://gpu WebGPU: Software only, hardware acceleration unavailable; stderr: vkCreateInstance() failed: -7',
    );
    expect(attemptReason({ id: 'F', adapter: SWIFTSHADER, gpuLines: ['WebGPU: Software only, hardware acceleration unavailable'] })).toBe(
      'fallback adapter only; chrome://gpu WebGPU: Software only, hardware acceleration unavailable',
    );
    expect(attemptReason({ id: 'D', adapter: null, error: 'Xvfb did not start: no screens\nmore' })).toBe(
      'failed: Xvfb did not start: no screens',
    );
    expect(attemptReason({ id: 'C', adapter: null, adapterError: 'navigator.gpu is missing' })).toBe(
      'requestAdapter threw: navigator.gpu is missing',
    );
  });

  it('stops at the first attempt with a hardware adapter, and runs them all when none has one', async () => {
    const outcomes: Record<string, AttemptRecord> = {
      A: { id: 'A', adapter: null, stderrLines: stderrLines(STDERR_SURFACE) },
      B: { id: 'B', adapter: SWIFTSHADER },
      C: { id: 'C', adapter: H100, error: 'timed out after 60 s' },
      D: { id: 'D', adapter: H100 },
      E: { id: 'E', adapter: H100 },
    };
    const ran: string[] = [];
    const run = async (a: { id: string }) => {
      ran.push(a.id);
      return outcomes[a.id] ?? { id: a.id, adapter: null };
    };
    const records = await runAttempts(ATTEMPTS, run);
    expect(ran).toEqual(['A', 'B', 'C', 'D']);
    expect(records.map((r) => r.id)).toEqual(['A', 'B', 'C', 'D']);
    ran.length = 0;
    await runAttempts(ATTEMPTS, async (a) => (ran.push(a.id), { id: a.id, adapter: SWIFTSHADER }));
    expect(ran).toEqual(['A', 'B', 'C', 'D', 'E', 'F']);
    ran.length = 0;
    await runAttempts(ATTEMPTS, async (a) => (ran.push(a.id), { id: a.id, adapter: SWIFTSHADER }), ['swiftshader']);
    expect(ran).toEqual(['A']);
  });

  it('prints the table attempt | adapter | reason', () => {
    const table = attemptTable([
      { id: 'A', adapter: null, stderrLines: stderrLines(STDERR_SURFACE) },
      { id: 'B', adapter: H100 },
    ]);
    expect(table.split('\n')).toEqual([
      '| attempt | adapter | reason |',
      '| --- | --- | --- |',
      '| A | none | requestAdapter() = null; stderr: vkCreateInstance() failed: -7 |',
      '| B | nvidia / hopper (NVIDIA H100 80GB HBM3) | hardware adapter; subgroup matrices: yes |',
    ]);
  });
});

describe("the probe's command line (tools/chrome-gpu-probe.mjs)", () => {
  it('refuses an --icd-dir the Vulkan loader would never read, and an unknown attempt, with exit 2 before any Chrome starts', () => {
    const run = (...args: string[]) => spawnSync(process.execPath, ['tools/chrome-gpu-probe.mjs', ...args], { encoding: 'utf8' });
    const dir = run('--icd-dir', '/tmp/icds');
    expect(dir.status).toBe(2);
    expect(dir.stderr).toContain('--icd-dir: /tmp/icds must end in vulkan/icd.d');
    const attempt = run('--icd-dir', '/tmp/x/vulkan/icd.d/', '--attempts', 'Z');
    expect(attempt.status).toBe(2);
    expect(attempt.stderr).toContain('--attempts: unknown attempt Z'); // the folder passed: the next check spoke
  });
});
