// Dawn in Node: finds a WebGPU adapter through Dawn's Node binding (the optional `webgpu` package, or a
// bare `dawn.node` file, for carrying the benchmark to a GPU machine without node_modules), and on a
// Linux machine without a GPU falls back to SwiftShader, the software Vulkan driver of Debian's
// `chromium` package, by pointing the Vulkan loader at it (VK_ICD_FILENAMES) and asking a second Dawn
// instance. Dawn instances are created with the `allow_unsafe_apis` toggle, which is what exposes
// `chromium-experimental-subgroup-matrix` (the int8 tensor cores), and without timestamp quantization
// (see DAWN_TOGGLES). The device toggles of ./toggles.ts travel the same way: dawn.node passes its instance
// flags on to each adapter and device it creates (src/dawn/node/binding/GPUAdapter.cpp, TogglesLoader), and
// JavaScript has no other way to them, so each set of device toggles has its own Dawn instance.
// How the Vulkan loader and Dawn instances interact was measured; see docs/gpu.md, "Finding an adapter
// in Node". On Linux, Dawn asks the loader's default drivers only where the caller named a driver
// (VK_ICD_FILENAMES, VK_DRIVER_FILES) or where a GPU device node exists (/dev/dri/renderD*, /dev/nvidia*,
// WSL2's /dev/dxg)
// and a driver manifest (ICD) lies where the loader looks: without a GPU the default drivers are
// software ones or none, and the loader or a driver (Mesa's, on most desktops) would only print on the
// process's stderr (C++, fd 2, beyond Node's reach). So there a hardware-only probe ('auto') does not
// even load Dawn, and a software one goes straight to SwiftShader.

import { requestFrom, type Found, type RequestOptions, type Tried } from './adapter.ts';
import type { DawnToggle } from './toggles.ts';
import { type NodeProcessLike, nodeProcess, runtimeImport } from '../runtime.ts';

/** The Debian command that provides SwiftShader (chromium) and the Vulkan loader Dawn needs (libvulkan1). */
export const INSTALL_HINT = 'apt-get install -y chromium libvulkan1';
/** Debian chromium's SwiftShader Vulkan ICD manifest. */
export const SWIFTSHADER_ICD = '/usr/lib/chromium/vk_swiftshader_icd.json';
/**
 * The Dawn instance toggles. allow_unsafe_apis exposes the experimental subgroup-matrix feature.
 * timestamp_quantization (on by default, a browser's defence against timing attacks) rounds timestamps
 * to multiples of 65536 ns on SwiftShader and about 100 us elsewhere: a GEMV of a few microseconds then
 * reads 0.000 ms of GPU time. Measured here: without the toggle, pass durations of 65536, 1441792, ...
 * ns; with it, 29174, 70171, ... ns.
 */
const DAWN_TOGGLES = ['enable-dawn-features=allow_unsafe_apis', 'disable-dawn-features=timestamp_quantization'];

/** The instance flags: DAWN_TOGGLES with the device toggles added to the enabled ones. */
export function dawnFlags(toggles: readonly DawnToggle[]): string[] {
  return toggles.length ? [`${DAWN_TOGGLES[0]},${toggles.join(',')}`, ...DAWN_TOGGLES.slice(1)] : [...DAWN_TOGGLES];
}

interface DawnModule {
  create(options: string[]): GPU;
  globals: Record<string, unknown>;
}

const dawnModules = new Map<string, Promise<DawnModule>>();
/** One Dawn instance per (binary, Vulkan ICD setting, device toggles): creating one probes every driver (~200 ms). */
const dawnInstances = new Map<string, GPU>();

async function loadDawnModule(proc: NodeProcessLike, dawnPath: string | undefined): Promise<DawnModule> {
  const key = dawnPath ?? 'webgpu';
  let pending = dawnModules.get(key);
  if (!pending) {
    pending = (async () => {
      let mod: DawnModule;
      if (dawnPath) {
        // A bare dawn.node (the `webgpu` package's dist/<platform>-<arch>/dawn.node): a native addon, loaded
        // with require. The package's index.js only adds a fix-up of GPUDevice.destroy() on top of it.
        const { createRequire } = await runtimeImport<typeof import('node:module')>('node:module');
        const { resolve } = await runtimeImport<typeof import('node:path')>('node:path');
        // Only a native addon: require would run a .js file, or parse a .json one, given here by mistake.
        if (!dawnPath.endsWith('.node')) throw new Error('it is not a native addon (a path ending in .node, such as dawn.node)');
        const require = createRequire(import.meta.url);
        mod = require(resolve(proc.cwd(), dawnPath)) as DawnModule;
      } else {
        mod = await runtimeImport<DawnModule>('webgpu');
      }
      if (typeof mod?.create !== 'function' || !mod.globals || typeof mod.globals !== 'object')
        throw new Error("it is not Dawn's binding (no create() and globals among its exports)");
      // GPUBufferUsage, GPUMapMode, GPUShaderStage... as globals, as in a browser.
      for (const [name, value] of Object.entries(mod.globals)) {
        if (!(name in globalThis)) (globalThis as Record<string, unknown>)[name] = value;
      }
      return mod;
    })();
    dawnModules.set(key, pending);
    pending.catch(() => dawnModules.delete(key));
  }
  return pending;
}

/**
 * The Dawn instance for the given Vulkan ICD setting ('' = the loader's default drivers), created while
 * the environment says so: the Vulkan loader reads VK_ICD_FILENAMES when an instance is created.
 */
function dawnInstance(mod: DawnModule, dawnPath: string | undefined, icd: string, toggles: readonly DawnToggle[]): GPU {
  const key = instanceKey(dawnPath, icd, toggles);
  let gpu = dawnInstances.get(key);
  if (!gpu) {
    gpu = mod.create(dawnFlags(toggles));
    dawnInstances.set(key, gpu);
  }
  return gpu;
}

function instanceKey(dawnPath: string | undefined, icd: string, toggles: readonly DawnToggle[]): string {
  return `${dawnPath ?? 'webgpu'}|${icd}|${toggles.join(',')}`;
}

/** Set once this module has pointed VK_ICD_FILENAMES at SwiftShader (the caller had not set it). */
let swiftShaderSetByUs = false;
/** Serializes the Node adapter search: the environment it changes is process-wide. */
let dawnSearch: Promise<unknown> = Promise.resolve();

async function fileExists(path: string): Promise<boolean> {
  try {
    const fs = await runtimeImport<typeof import('node:fs')>('node:fs');
    return fs.existsSync(path);
  } catch {
    return false;
  }
}

/**
 * The folders where the Linux Vulkan loader looks for driver manifests (ICDs) when no VK_ICD_FILENAMES /
 * VK_DRIVER_FILES is set: XDG config and data folders (with the loader's defaults), /etc, /usr/local/etc,
 * and NixOS's driver folder. See the loader's LoaderDriverInterface.md, "Driver Discovery on Linux".
 */
function vulkanIcdFolders(env: Record<string, string | undefined>): string[] {
  const home = env.HOME ?? '';
  const configHome = env.XDG_CONFIG_HOME || (home && `${home}/.config`);
  const dataHome = env.XDG_DATA_HOME || (home && `${home}/.local/share`);
  const configDirs = (env.XDG_CONFIG_DIRS || '/etc/xdg').split(':');
  const dataDirs = (env.XDG_DATA_DIRS || '/usr/local/share:/usr/share').split(':');
  const roots = [configHome, ...configDirs, '/usr/local/etc', '/etc', dataHome, ...dataDirs, '/run/opengl-driver/share'];
  return [...new Set(roots.filter(Boolean).map((r) => `${r}/vulkan/icd.d`))];
}

/**
 * Why Dawn must not ask the Vulkan loader's default drivers, or null where it may: Linux, the caller
 * named no driver (VK_ICD_FILENAMES, VK_DRIVER_FILES; our own SwiftShader setting does not count), and
 * either no GPU device node under `dev` (no /dev/dri/renderD*, /dev/nvidia* or /dev/dxg: a driver manifest is not
 * a GPU) or no `*.json` manifest in any folder of vulkanIcdFolders(). Null (let Dawn ask) elsewhere.
 */
export async function defaultDriversSkipped(proc: NodeProcessLike, dev = '/dev'): Promise<string | null> {
  if (proc.platform !== 'linux') return null;
  const env = proc.env;
  if ((env.VK_ICD_FILENAMES && !swiftShaderSetByUs) || env.VK_DRIVER_FILES) return null;
  let fs: typeof import('node:fs');
  try {
    fs = await runtimeImport<typeof import('node:fs')>('node:fs');
  } catch {
    return null;
  }
  const entries = (dir: string): string[] => {
    try {
      return fs.readdirSync(dir);
    } catch {
      return []; // missing or unreadable: nothing there for the loader either
    }
  };
  const gpuNode =
    entries(`${dev}/dri`).some((f) => f.startsWith('renderD')) || entries(dev).some((f) => f.startsWith('nvidia') || f === 'dxg');
  if (!gpuNode) return NO_GPU_NODE;
  if (env.VK_ADD_DRIVER_FILES) return null;
  return vulkanIcdFolders(env).some((dir) => entries(dir).some((f) => f.endsWith('.json'))) ? null : NO_VULKAN_DRIVER;
}

const NO_GPU_NODE = 'Vulkan: no GPU device node (/dev/dri/renderD*, /dev/nvidia*, /dev/dxg), so the default drivers were not asked';
const NO_VULKAN_DRIVER = "Vulkan: no driver manifest (ICD) in the loader's folders (/usr/share/vulkan/icd.d, /etc/vulkan/icd.d, ...)";

interface DawnOptions extends RequestOptions {
  /** Node: load this dawn.node binary instead of the `webgpu` package. Default: env QGEMM_DAWN_NODE. */
  dawnPath?: string | undefined;
  /** The device toggles, checked (./toggles.ts). */
  toggles: readonly DawnToggle[];
}

/** Finds an adapter through Dawn in Node (the caller's drivers, then SwiftShader); null in browsers. */
export async function findDawnAdapter(opts: DawnOptions, tried: Tried): Promise<Found | null> {
  const proc = nodeProcess();
  if (!proc) return null;
  const dawnPath = opts.dawnPath ?? proc.env.QGEMM_DAWN_NODE ?? undefined;
  const what = dawnPath ? `dawn.node at ${dawnPath}` : "Dawn (the 'webgpu' package)";
  // No GPU or no Vulkan driver, and no software fallback wanted: nothing Dawn could find, and asking
  // it could only print.
  const skipped = await defaultDriversSkipped(proc);
  if (skipped && !opts.allowSoftware) {
    tried.push(skipped);
    return null;
  }
  let mod: DawnModule;
  try {
    mod = await loadDawnModule(proc, dawnPath);
  } catch (e) {
    tried.push(`${what}: could not load it (${(e as Error).message.split('\n')[0]})`);
    // Nothing else was tried, so only this fix applies (no driver advice for a missing package).
    tried.fix = dawnPath
      ? 'Fix: check the path (QGEMM_DAWN_NODE / dawnPath), or use the CPU backend.'
      : "Fix: install Dawn's Node binding, `npm install webgpu` (an optional peer dependency), or use the CPU backend.";
    return null;
  }
  const search = dawnSearch.then(() => searchDawn(mod, proc, dawnPath, what, opts, tried, skipped));
  dawnSearch = search.catch(() => undefined);
  return search;
}

async function searchDawn(
  mod: DawnModule,
  proc: NodeProcessLike,
  dawnPath: string | undefined,
  what: string,
  opts: DawnOptions,
  tried: Tried,
  skipped: string | null,
): Promise<Found | null> {
  // First the drivers the environment gives. After our own SwiftShader fallback that is the instance made
  // before it, which still sees the default drivers, so a later hardware-only probe stays truthful.
  const callerIcd = swiftShaderSetByUs ? '' : (proc.env.VK_ICD_FILENAMES ?? '');
  // Without a GPU or a driver manifest the default instance is never created (asking it would only print).
  if (skipped) tried.push(skipped);
  const first =
    swiftShaderSetByUs || skipped
      ? dawnInstances.get(instanceKey(dawnPath, '', opts.toggles))
      : dawnInstance(mod, dawnPath, callerIcd, opts.toggles);
  const label = `${what}${callerIcd ? ` with VK_ICD_FILENAMES=${callerIcd}` : ''}`;
  const found = first ? await requestFrom(first, 'dawn', opts, tried, label) : null;
  if (found) return found;
  // Software fallback: point the Vulkan loader at SwiftShader. It reads the variable at a Dawn instance's
  // first requestAdapter(), so a new instance in this same process sees it (verified, see the top).
  if (!opts.allowSoftware) return null;
  if (callerIcd || proc.env.VK_DRIVER_FILES) {
    tried.push('SwiftShader fallback: skipped, VK_ICD_FILENAMES / VK_DRIVER_FILES is already set by the caller');
    return null;
  }
  if (!swiftShaderSetByUs && !(await fileExists(SWIFTSHADER_ICD))) {
    tried.push(`SwiftShader fallback: ${SWIFTSHADER_ICD} not found`);
    return null;
  }
  const setNow = !swiftShaderSetByUs;
  proc.env.VK_ICD_FILENAMES = SWIFTSHADER_ICD;
  // Mesa's implicit device-select layer (package mesa-vulkan-drivers) loads whatever the driver list and
  // prints on stderr where no display is set ("XDG_RUNTIME_DIR is invalid"); with SwiftShader alone it
  // has nothing to select, so its own switch (NODEVICE_SELECT) turns it off, unless the caller set it.
  const layerOff = setNow && proc.env.NODEVICE_SELECT === undefined;
  if (layerOff) proc.env.NODEVICE_SELECT = '1';
  const fallback = await requestFrom(
    dawnInstance(mod, dawnPath, SWIFTSHADER_ICD, opts.toggles),
    'dawn',
    opts,
    tried,
    `${what} with VK_ICD_FILENAMES=${SWIFTSHADER_ICD}`,
  );
  if (fallback) swiftShaderSetByUs = true;
  else if (setNow) {
    delete proc.env.VK_ICD_FILENAMES;
    if (layerOff) delete proc.env.NODEVICE_SELECT;
  }
  return fallback;
}
