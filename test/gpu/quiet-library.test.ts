// The library is quiet: in a fresh Node process (the built dist/node bundle, as a user imports it), a
// plain `gemm()` with backend 'auto', the hardware probe, and a WebGPU device on SwiftShader
// (describeDevice) write nothing on stderr. The Vulkan loader and its drivers print from C++ (fd 2,
// never through Node's streams), so the check needs a child process. It runs in this machine's
// environment, and again with a Vulkan driver manifest where the loader looks (XDG_DATA_DIRS, as Mesa's
// /usr/share/vulkan/icd.d on most desktops; then VK_ADD_DRIVER_FILES) whose driver cannot start, as
// Mesa's cannot without a GPU: asked, the loader prints "Failed loading library ..." and "Found no
// drivers!". Without a GPU device node src/gpu/dawn.ts does not let Dawn ask the default drivers at all;
// pointing Dawn at SwiftShader, it switches off Mesa's implicit device-select layer (NODEVICE_SELECT=1),
// which loads whatever the driver list and prints "XDG_RUNTIME_DIR is invalid" without a display.

import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ensureBuilt, REPO } from '../cli/support.ts';

beforeAll(() => ensureBuilt(), 300_000);

const SCRIPT = `
const { gemm, isHardwareAdapterAvailable, describeDevice } = await import(process.argv[1]);
const m = { data: new Uint8Array(64 * 64).fill(3), rows: 64, cols: 64 };
const r = await gemm({ lhs: m, rhs: m });
const hw = await isHardwareAdapterAvailable();
const d = await describeDevice();
console.log(JSON.stringify({ first: r.data[0], hw, adapter: d.adapter ? d.adapter.architecture : null, cpu: d.cpu.kernel, deviceSelect: process.env.NODEVICE_SELECT ?? null }));
`;

/** Runs SCRIPT in a fresh Node process with this environment; returns its stderr after checking its result. */
function runQuietly(
  env: Record<string, string | undefined>,
  check: (out: { adapter: string | null; deviceSelect: string | null }) => void = () => {},
): string {
  const entry = pathToFileURL(join(REPO, 'dist/node/index.js')).href;
  const r = spawnSync(process.execPath, ['--input-type=module', '-e', SCRIPT, entry], { encoding: 'utf8', env, timeout: 120_000 });
  expect(r.status, r.stderr).toBe(0);
  const out = JSON.parse(r.stdout.trim());
  expect(out.first).toBe(64 * 9);
  expect(typeof out.cpu).toBe('string');
  check(out);
  return r.stderr;
}

const baseEnv = (): Record<string, string | undefined> => {
  const env = { ...process.env };
  delete env.QGEMM_DEBUG;
  return env;
};

/** A GPU device node, where the default drivers are asked by design (and a broken manifest may print). */
const gpuNode =
  existsSync('/dev/dri') && readdirSync('/dev/dri').some((f) => f.startsWith('renderD'))
    ? true
    : readdirSync('/dev').some((f) => f.startsWith('nvidia') || f === 'dxg');

const fake = mkdtempSync(join(tmpdir(), 'qgemm-icd-'));
afterAll(() => rmSync(fake, { recursive: true, force: true }));
/** Mesa's lavapipe manifest as mesa-vulkan-drivers installs it, naming a driver library that is not there. */
function fakeManifest(): string {
  mkdirSync(join(fake, 'vulkan/icd.d'), { recursive: true });
  const manifest = join(fake, 'vulkan/icd.d/lvp_icd.x86_64.json');
  const icd = { file_format_version: '1.0.1', ICD: { library_path: join(fake, 'libvulkan_lvp.so'), api_version: '1.4.305' } };
  writeFileSync(manifest, JSON.stringify(icd));
  return manifest;
}

describe('a fresh process importing the library', () => {
  it("runs gemm('auto'), the hardware probe and describeDevice() with nothing on stderr", () => {
    expect(runQuietly(baseEnv())).toBe('');
  });
  it.skipIf(gpuNode)('is as quiet with a driver manifest in XDG_DATA_DIRS and no GPU (a desktop with Mesa)', () => {
    const manifest = fakeManifest();
    const env = baseEnv();
    delete env.VK_ICD_FILENAMES;
    delete env.VK_DRIVER_FILES;
    // Pointed at SwiftShader by the library, Mesa's implicit device-select layer (which prints
    // "XDG_RUNTIME_DIR is invalid" without a display) is switched off by its own variable.
    const layerOff = (out: { adapter: string | null; deviceSelect: string | null }) => {
      if (out.adapter === 'swiftshader') expect(out.deviceSelect).toBe('1');
    };
    expect(runQuietly({ ...env, XDG_DATA_DIRS: `${fake}:/usr/share` }, layerOff)).toBe('');
    expect(runQuietly({ ...env, VK_ADD_DRIVER_FILES: manifest })).toBe('');
  });
});
