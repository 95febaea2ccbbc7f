// Chrome on a GPU server: each probe attempt's launch plan (tools/chrome-probe/attempts.mjs launchPlan,
// the one definition the probe and the bench's launcher tools/chromium.ts follow) on canned machines: the
// command line, the environment set and removed, the user Chrome runs as, the display, the ICD copy and
// requestAdapter()'s options. Then what tools/chrome-probe/setup.mjs does with a plan, on temp folders
// (the ICD copy, the environment, the uid wrapper), and how tools/chromium.ts fills in the machine. No
// browser and no Xvfb start here; test/browser/chrome-launch.browser.test.ts launches one attempt.

import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { attemptArgs, attemptById, launchPlan, runAsCommand, type LaunchMachine } from '../../tools/chrome-probe/attempts.mjs';
import { libraryPath, prepareLaunch, runAsWrapper } from '../../tools/chrome-probe/setup.mjs';
import { hardwarePlan } from '../../tools/chromium.ts';

const ICD = '/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json';
const EGL = '/usr/local/nvidia/share/glvnd/egl_vendor.d/10_nvidia.json';
/** The GPU server: the probe or the bench runs as root, NVIDIA's ICD and EGL vendor file are there. */
const SERVER: LaunchMachine = { uid: 0, icd: ICD, eglVendor: EGL, icdDir: '/usr/share/vulkan/icd.d', home: '/tmp/profile' };
const plan = (id: string, machine: LaunchMachine = SERVER) => launchPlan(attemptById(id)!, machine);
const UNSET = ['VK_ICD_FILENAMES', 'VK_DRIVER_FILES', 'DISPLAY'];
const HOME = { HOME: '/tmp/profile', XDG_RUNTIME_DIR: '/tmp/profile', TMPDIR: '/tmp/profile' };

describe('the launch plan of each attempt, on a GPU server as root', () => {
  it('A, B: headless, no sandbox, the ICD named in VK_ICD_FILENAMES, a core adapter', () => {
    for (const id of ['A', 'B']) {
      const p = plan(id);
      expect(p.args).toEqual(attemptArgs(attemptById(id)!));
      expect(p.args.slice(0, 2)).toEqual(['--no-sandbox', '--headless=new']);
      expect(p).toMatchObject({ headless: true, runAs: null, copyIcd: null, adapterOptions: {}, unsetEnv: UNSET });
      expect(p.env).toEqual({ VK_ICD_FILENAMES: ICD, ...HOME });
    }
  });

  it('C: the sandbox on, run as uid 65534, the ICD copied to the standard folder and not named', () => {
    const p = plan('C');
    expect(p.args).not.toContain('--no-sandbox');
    expect(p.args).toContain('--headless=new');
    expect(p.runAs).toBe(65534);
    expect(p.copyIcd).toEqual({ from: ICD, dir: '/usr/share/vulkan/icd.d' });
    expect(p.env).toEqual(HOME);
    expect(p.unsetEnv).toEqual(UNSET);
    expect(runAsCommand(65534, '/opt/chromium')).toEqual([
      'setpriv',
      '--reuid=65534',
      '--regid=65534',
      '--clear-groups',
      '--',
      '/opt/chromium',
    ]);
    // Not root: Chrome starts its sandbox as the caller. A rehearsal's folder goes on XDG_DATA_DIRS.
    expect(plan('C', { ...SERVER, uid: 1000 }).runAs).toBeNull();
    expect(plan('C', { ...SERVER, icdDir: '/tmp/r/vulkan/icd.d' }).env.XDG_DATA_DIRS).toBe('/tmp/r');
  });

  it('D: not headless (a display from Xvfb), x11, the ICD and the EGL vendor file named', () => {
    const p = plan('D');
    expect(p.headless).toBe(false);
    expect(p.args.some((f) => f.startsWith('--headless'))).toBe(false);
    expect(p.args).toContain('--ozone-platform=x11');
    expect(p.env).toEqual({ VK_ICD_FILENAMES: ICD, __EGL_VENDOR_LIBRARY_FILENAMES: EGL, ...HOME });
    // DISPLAY from outside is removed: the display is the carried Xvfb's.
    expect(p.unsetEnv).toContain('DISPLAY');
    expect(p.runAs).toBeNull();
  });

  it("E: ANGLE on EGL with NVIDIA's vendor file, where the machine has one", () => {
    expect(plan('E').env).toEqual({ VK_ICD_FILENAMES: ICD, __EGL_VENDOR_LIBRARY_FILENAMES: EGL, ...HOME });
    expect(plan('E').args).toContain('--use-angle=gl-egl');
    expect(plan('E', { ...SERVER, eglVendor: '' }).env).toEqual({ VK_ICD_FILENAMES: ICD, ...HOME });
  });

  it("F: A's command line and environment, requestAdapter() asked for a compatibility-mode adapter", () => {
    const f = plan('F');
    const a = plan('A');
    expect(f.args).toEqual(a.args);
    expect(f.env).toEqual(a.env);
    expect(f.adapterOptions).toEqual({ featureLevel: 'compatibility' });
  });

  it("without a known ICD, the loader's own search: nothing named, nothing copied", () => {
    const bare = { uid: 0, icd: '', eglVendor: '' };
    expect(plan('A', bare).env).toEqual({});
    expect(plan('C', bare).copyIcd).toBeNull();
  });
});

describe('carrying out a plan (tools/chrome-probe/setup.mjs)', () => {
  const dirs: string[] = [];
  const temp = () => {
    const d = mkdtempSync(join(tmpdir(), 'qgemm-plan-test-'));
    dirs.push(d);
    return d;
  };
  afterEach(() => {
    for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
  });

  it('copies the ICD (its relative library made absolute), sets and removes the environment, and undoes the copy', async () => {
    const t = temp();
    const driver = join(t, 'driver');
    const icd = join(driver, 'icd.json');
    mkdirSync(driver);
    writeFileSync(icd, JSON.stringify({ file_format_version: '1.0.0', ICD: { library_path: './libvk.so', api_version: '1.3.0' } }));
    const icdDir = join(t, 'share/vulkan/icd.d');
    const p = launchPlan(attemptById('C')!, { uid: 1000, icd, icdDir, home: t });
    const setup = await prepareLaunch(p, { env: { PATH: '/bin', VK_ICD_FILENAMES: '/elsewhere.json', DISPLAY: ':0' }, profile: t });
    expect(setup.env).toEqual({ PATH: '/bin', HOME: t, XDG_RUNTIME_DIR: t, TMPDIR: t, XDG_DATA_DIRS: join(t, 'share') });
    const copied = JSON.parse(readFileSync(join(icdDir, 'qgemm-probe-icd.json'), 'utf8'));
    expect(copied.ICD.library_path).toBe(join(driver, 'libvk.so'));
    expect(setup.notes).toEqual([`ICD copied to ${icdDir}/qgemm-probe-icd.json`]);
    setup.cleanup();
    expect(existsSync(join(t, 'share'))).toBe(false);
  });

  it("puts the payload's library folders first on LD_LIBRARY_PATH (the carried Xvfb needs them), the inherited value after", () => {
    const p = temp();
    mkdirSync(join(p, 'lib'));
    mkdirSync(join(p, 'usr/lib/x86_64-linux-gnu'), { recursive: true });
    const driver = ['/usr/local/nvidia/lib64', '/usr/local/nvidia/lib'].filter((d) => existsSync(d));
    expect(libraryPath(p, '/opt/x')).toBe([join(p, 'lib'), join(p, 'usr/lib/x86_64-linux-gnu'), '/opt/x', ...driver].join(':'));
    expect(libraryPath('', '/opt/x')).toBe('/opt/x');
  });

  it("writes the uid wrapper puppeteer-core starts: it execs setpriv, Chrome's arguments passed on", () => {
    const file = runAsWrapper(65534, "/opt/it's/chromium", temp());
    expect(readFileSync(file, 'utf8')).toBe(
      `#!/bin/sh\nexec 'setpriv' '--reuid=65534' '--regid=65534' '--clear-groups' '--' '/opt/it'\\''s/chromium' "$@"\n`,
    );
    expect(statSync(file).mode & 0o111).toBe(0o111);
  });
});

describe("the launcher's machine (tools/chromium.ts hardwarePlan)", () => {
  const names = ['VK_ICD_FILENAMES', 'VK_DRIVER_FILES', '__EGL_VENDOR_LIBRARY_FILENAMES', 'QGEMM_CHROME_ICD_DIR', 'QGEMM_CHROME_ATTEMPT'];
  const saved = Object.fromEntries(names.map((n) => [n, process.env[n]]));
  beforeEach(() => {
    for (const n of names) delete process.env[n];
  });
  afterEach(() => {
    for (const n of names) saved[n] === undefined ? delete process.env[n] : (process.env[n] = saved[n]);
  });

  it('takes the ICD and the EGL vendor file from the environment, and the attempt from QGEMM_CHROME_ATTEMPT', () => {
    process.env.VK_ICD_FILENAMES = '/x/icd.json';
    process.env.__EGL_VENDOR_LIBRARY_FILENAMES = '/x/egl.json';
    process.env.QGEMM_CHROME_ATTEMPT = 'd';
    const p = hardwarePlan(undefined, '/tmp/p');
    expect(p.headless).toBe(false);
    expect(p.env).toEqual({
      VK_ICD_FILENAMES: '/x/icd.json',
      __EGL_VENDOR_LIBRARY_FILENAMES: '/x/egl.json',
      HOME: '/tmp/p',
      XDG_RUNTIME_DIR: '/tmp/p',
      TMPDIR: '/tmp/p',
    });
    process.env.QGEMM_CHROME_ICD_DIR = '/tmp/r/vulkan/icd.d';
    expect(hardwarePlan('C', '/tmp/p').copyIcd).toEqual({ from: '/x/icd.json', dir: '/tmp/r/vulkan/icd.d' });
    delete process.env.VK_ICD_FILENAMES;
    process.env.VK_DRIVER_FILES = '/y/icd.json';
    expect(hardwarePlan('A', '/tmp/p').env.VK_ICD_FILENAMES).toBe('/y/icd.json');
    expect(() => hardwarePlan('Z', '/tmp/p')).toThrow('QGEMM_CHROME_ATTEMPT: "Z" is not one of A, B, C, D, E, F');
  });
});
