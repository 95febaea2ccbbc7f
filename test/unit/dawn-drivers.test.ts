// When Dawn may ask the Vulkan loader's default drivers (src/gpu/dawn.ts, defaultDriversSkipped): on
// Linux only where the caller named a driver (VK_ICD_FILENAMES, VK_DRIVER_FILES) or where a GPU device
// node exists and a driver manifest lies where the loader looks. A manifest alone (Mesa's, on most
// desktops) is not a GPU. The device folder and the manifest folders are temporary ones here.

import { mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { defaultDriversSkipped } from '../../src/gpu/dawn.ts';

const root = mkdtempSync(join(tmpdir(), 'qgemm-drivers-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

/** A /dev with these entries, and an XDG data folder holding one Mesa-like driver manifest. */
function machine(devEntries: string[]): { dev: string; data: string } {
  const dir = mkdtempSync(join(root, 'm-'));
  const dev = join(dir, 'dev');
  mkdirSync(join(dev, 'dri'), { recursive: true });
  for (const e of devEntries) writeFileSync(join(dev, e), '');
  const data = join(dir, 'share');
  mkdirSync(join(data, 'vulkan/icd.d'), { recursive: true });
  writeFileSync(
    join(data, 'vulkan/icd.d/lvp_icd.x86_64.json'),
    '{"file_format_version":"1.0.1","ICD":{"library_path":"libvulkan_lvp.so"}}',
  );
  return { dev, data };
}

const proc = (env: Record<string, string>, platform = 'linux') => ({ platform, env, cwd: () => '/' });
const EMPTY = { XDG_CONFIG_DIRS: '/nonexistent', HOME: '/nonexistent' };
/** Manifests in the folders the loader always reads (no variable moves them): this machine's own drivers. */
const fixedManifests = ['/etc', '/usr/local/etc', '/run/opengl-driver/share'].some((d) => {
  try {
    return readdirSync(`${d}/vulkan/icd.d`).some((f) => f.endsWith('.json'));
  } catch {
    return false;
  }
});

describe('defaultDriversSkipped', () => {
  it('skips the default drivers where a Mesa manifest is present but no GPU device node', async () => {
    const m = machine([]);
    expect(await defaultDriversSkipped(proc({ ...EMPTY, XDG_DATA_DIRS: m.data }), m.dev)).toMatch(/no GPU device node/);
    // A driver added to the loader's list is not a GPU either.
    expect(await defaultDriversSkipped(proc({ ...EMPTY, XDG_DATA_DIRS: m.data, VK_ADD_DRIVER_FILES: '/x.json' }), m.dev)).toMatch(
      /no GPU device node/,
    );
  });
  it('asks them where a render node or an NVIDIA node exists next to a manifest', async () => {
    for (const node of ['dri/renderD128', 'nvidia0', 'nvidiactl', 'dxg']) {
      const m = machine([node]);
      expect(await defaultDriversSkipped(proc({ ...EMPTY, XDG_DATA_DIRS: m.data }), m.dev), node).toBeNull();
    }
  });
  it.skipIf(fixedManifests)('skips them where a GPU node exists but no manifest does', async () => {
    const m = machine(['dri/renderD128']);
    expect(await defaultDriversSkipped(proc({ ...EMPTY, XDG_DATA_DIRS: '/nonexistent' }), m.dev)).toMatch(/no driver manifest/);
    expect(
      await defaultDriversSkipped(proc({ ...EMPTY, XDG_DATA_DIRS: '/nonexistent', VK_ADD_DRIVER_FILES: '/x.json' }), m.dev),
    ).toBeNull();
  });
  it('asks them where the caller named a driver, GPU or not', async () => {
    const m = machine([]);
    for (const name of ['VK_ICD_FILENAMES', 'VK_DRIVER_FILES']) {
      expect(await defaultDriversSkipped(proc({ ...EMPTY, [name]: '/x.json' }), m.dev), name).toBeNull();
    }
  });
  it('asks them off Linux', async () => {
    const m = machine([]);
    expect(await defaultDriversSkipped(proc(EMPTY, 'darwin'), m.dev)).toBeNull();
  });
});
