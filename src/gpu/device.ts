// Getting a GPUDevice: the lowest layer of the GPU plumbing, under the scheduler that encodes
// pack -> gemm -> output. It finds WebGPU wherever the library runs: a device the caller passes in,
// `navigator.gpu` in browsers (and Deno), or Dawn's Node binding (the optional `webgpu` package, or a
// bare `dawn.node` file for carrying the benchmark to a GPU machine without node_modules). On a Linux
// machine with no GPU it falls back to SwiftShader, the software Vulkan driver of Debian's `chromium`
// package, by pointing the Vulkan loader at it (VK_ICD_FILENAMES) and asking a second Dawn instance.
// It asks each device for the adapter's own limits (big storage buffers, big workgroups) and
// 'timestamp-query' where offered, and says whether WGSL's packed_4x8_integer_dot_product (dot4U8Packed,
// dot4I8Packed) is there, which picks the gemm kernel variant. Failures throw NoAdapterError, naming
// what was tried and the fix.
//
// Verified here (dawn.node 0.6.2, 2-core machine, no GPU, Debian chromium + libvulkan1): without
// VK_ICD_FILENAMES, Dawn's Vulkan backend sees only Mesa's lavapipe and rejects it, requestAdapter()
// gives null after ~50-270 ms of probing (and prints a harmless "Vulkan shaderUniform*ArrayDynamicIndexing
// required" warning); setting process.env.VK_ICD_FILENAMES afterwards and creating a NEW Dawn instance
// in the same process works: the SwiftShader adapter comes back in ~10 ms, the device in ~3 ms; the whole
// acquireDevice() took 90-135 ms. With the variable set beforehand it takes ~30 ms; the hardware-only
// probe (isHardwareAdapterAvailable) ~50 ms, then ~0. Dawn creates its Vulkan instance, and the loader
// reads the variable, at a Dawn instance's FIRST requestAdapter(), not at create(): set-create-unset-
// request finds nothing, create-set-request finds SwiftShader; later requests reuse what the first found. Hence one Dawn instance per ICD setting, each first asked while the
// environment matches, and acquisitions serialized.

import { GpuOutOfMemoryError, GpuValidationError, NoAdapterError } from '../errors.ts';

/** What the caller or a log needs to know about an adapter. */
export interface AdapterSummary {
  vendor: string;
  architecture: string;
  description: string;
  device: string;
  /** A CPU emulation (SwiftShader, llvmpipe, lavapipe, WARP...): correct, but no GPU for backend 'auto'. */
  isSoftware: boolean;
  features: string[];
  wgslLanguageFeatures: string[];
  limits: Record<string, number>;
}

export interface AcquiredDevice {
  device: GPUDevice;
  /** null when the caller passed in the device. */
  adapter: GPUAdapter | null;
  summary: AdapterSummary;
  source: 'navigator' | 'dawn' | 'user';
  /** WGSL has packed_4x8_integer_dot_product (dot4U8Packed / dot4I8Packed); else the manual-unpack kernel. */
  hasDot4: boolean;
}

export interface AcquireOptions {
  /** Accept a software adapter (SwiftShader...). false: hardware only ('auto' backend). */
  allowSoftware: boolean;
  /** Use this device as it is (source 'user'); no adapter is requested. */
  device?: GPUDevice;
  /** Node: load this dawn.node binary instead of the `webgpu` package. Default: env QGEMM_DAWN_NODE. */
  dawnPath?: string;
  /** Default 'high-performance' (the discrete GPU on a laptop with two). */
  powerPreference?: GPUPowerPreference;
}

/** The Debian command that provides SwiftShader (chromium) and the Vulkan loader Dawn needs (libvulkan1). */
export const INSTALL_HINT = 'apt-get install -y chromium libvulkan1';
/** Debian chromium's SwiftShader Vulkan ICD manifest. */
export const SWIFTSHADER_ICD = '/usr/lib/chromium/vk_swiftshader_icd.json';
/** The WGSL language feature behind dot4U8Packed / dot4I8Packed. */
export const DOT4_FEATURE = 'packed_4x8_integer_dot_product';

/** Limits requested at the adapter's own value (the defaults are far smaller: 128 MiB bindings, 16 KiB shared). */
export const REQUESTED_LIMITS = [
  'maxStorageBufferBindingSize',
  'maxBufferSize',
  'maxComputeWorkgroupStorageSize',
  'maxComputeInvocationsPerWorkgroup',
  'maxComputeWorkgroupSizeX',
  'maxComputeWorkgroupSizeY',
  'maxStorageBuffersPerShaderStage',
] as const;

/** Features requested where the adapter offers them. */
export const OPTIONAL_FEATURES: GPUFeatureName[] = ['timestamp-query'];

const LIMIT_NAMES = [
  ...REQUESTED_LIMITS,
  'maxComputeWorkgroupSizeZ',
  'maxComputeWorkgroupsPerDimension',
  'maxUniformBufferBindingSize',
  'minStorageBufferOffsetAlignment',
  'minUniformBufferOffsetAlignment',
  'maxBindGroups',
  'maxBindingsPerBindGroup',
  'maxUniformBuffersPerShaderStage',
];

/** Dawn's Node binding: what `webgpu` exports and what dawn.node itself exports. */
interface DawnModule {
  create(options: string[]): GPU;
  globals: Record<string, unknown>;
}

// ---- environment ------------------------------------------------------------------------------------

interface NodeProcessLike {
  versions?: { node?: string };
  env: Record<string, string | undefined>;
  cwd(): string;
}

/** Node's `process`, read through globalThis so that bundlers leave it alone; undefined in browsers. */
function nodeProcess(): NodeProcessLike | undefined {
  const p = (globalThis as { process?: NodeProcessLike }).process;
  return p?.versions?.node ? p : undefined;
}

function navigatorGpu(): GPU | undefined {
  return (globalThis as { navigator?: { gpu?: GPU } }).navigator?.gpu ?? undefined;
}

/** Imports a module by a specifier the bundler must not resolve (Node-only modules in a browser bundle). */
function runtimeImport<T>(specifier: string): Promise<T> {
  return import(/* @vite-ignore */ specifier) as Promise<T>;
}

// ---- adapter description ----------------------------------------------------------------------------

type InfoLike = Partial<Pick<GPUAdapterInfo, 'vendor' | 'architecture' | 'description' | 'device' | 'isFallbackAdapter'>>;

const SOFTWARE_NAMES = /swiftshader|llvmpipe|lavapipe|softpipe|microsoft basic render|\bwarp\b/i;

/** A CPU emulation? isFallbackAdapter, architecture 'swiftshader', or a known software renderer's name. */
export function isSoftwareAdapterInfo(info: InfoLike): boolean {
  if (info.isFallbackAdapter) return true;
  const text = [info.vendor, info.architecture, info.description, info.device].filter(Boolean).join(' ');
  return SOFTWARE_NAMES.test(text);
}

function readLimits(limits: GPUSupportedLimits): Record<string, number> {
  const out: Record<string, number> = {};
  // Browsers and Dawn expose limits as prototype getters; for..in sees them, the explicit list is a backstop.
  for (const key in limits) {
    const v = (limits as unknown as Record<string, unknown>)[key];
    if (typeof v === 'number') out[key] = v;
  }
  for (const key of LIMIT_NAMES) {
    const v = (limits as unknown as Record<string, unknown>)[key];
    if (typeof v === 'number') out[key] = v;
  }
  return out;
}

/**
 * Describes an adapter, or a device when no adapter is at hand (a caller's device: then the info comes
 * from device.adapterInfo where the implementation has it, and the limits and features are the device's).
 */
export function summarizeAdapter(
  adapter: GPUAdapter | GPUDevice,
  wgslLanguageFeatures?: Iterable<string>,
): AdapterSummary {
  const info: InfoLike = ('info' in adapter ? adapter.info : (adapter as GPUDevice).adapterInfo) ?? {};
  return {
    vendor: info.vendor ?? '',
    architecture: info.architecture ?? '',
    description: info.description ?? '',
    device: info.device ?? '',
    isSoftware: isSoftwareAdapterInfo(info),
    features: [...adapter.features].map(String).sort(),
    wgslLanguageFeatures: wgslLanguageFeatures ? [...wgslLanguageFeatures].sort() : [],
    limits: readLimits(adapter.limits),
  };
}

/** One line for logs and the README: "google swiftshader (SwiftShader driver 5.0.0), software". */
export function describeAdapter(s: AdapterSummary): string {
  const name = [s.vendor, s.architecture].filter(Boolean).join(' ') || 'unknown adapter';
  const detail = s.description || s.device;
  return `${name}${detail ? ` (${detail})` : ''}${s.isSoftware ? ', software' : ''}`;
}

// ---- Dawn (Node) ------------------------------------------------------------------------------------

const dawnModules = new Map<string, Promise<DawnModule>>();
/** One Dawn instance per (binary, Vulkan ICD setting): creating one probes every driver (~200 ms). */
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
        const require = createRequire(import.meta.url);
        mod = require(resolve(proc.cwd(), dawnPath)) as DawnModule;
      } else {
        mod = await runtimeImport<DawnModule>('webgpu');
      }
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
function dawnInstance(mod: DawnModule, dawnPath: string | undefined, icd: string): GPU {
  const key = `${dawnPath ?? 'webgpu'}|${icd}`;
  let gpu = dawnInstances.get(key);
  if (!gpu) {
    gpu = mod.create([]);
    dawnInstances.set(key, gpu);
  }
  return gpu;
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

// ---- acquisition ------------------------------------------------------------------------------------

interface Found {
  gpu: GPU;
  adapter: GPUAdapter;
  summary: AdapterSummary;
  source: 'navigator' | 'dawn';
}

/** Where each attempt went, for the error message. */
type Tried = string[];

async function requestFrom(
  gpu: GPU,
  source: 'navigator' | 'dawn',
  opts: AcquireOptions,
  tried: Tried,
  label: string,
): Promise<Found | null> {
  const req: GPURequestAdapterOptions = { powerPreference: opts.powerPreference ?? 'high-performance' };
  let adapter: GPUAdapter | null = null;
  try {
    adapter = await gpu.requestAdapter(req);
  } catch (e) {
    tried.push(`${label}: requestAdapter threw ${(e as Error).message}`);
    return null;
  }
  if (!adapter && opts.allowSoftware && source === 'navigator') {
    adapter = await gpu.requestAdapter({ ...req, forceFallbackAdapter: true }).catch(() => null);
  }
  if (!adapter) {
    tried.push(`${label}: no adapter`);
    return null;
  }
  const summary = summarizeAdapter(adapter, gpu.wgslLanguageFeatures);
  if (summary.isSoftware && !opts.allowSoftware) {
    tried.push(`${label}: only a software adapter (${describeAdapter(summary)}), and software was not allowed`);
    return null;
  }
  return { gpu, adapter, summary, source };
}

/** Finds an adapter (no device yet), trying navigator.gpu, then Dawn, then Dawn on SwiftShader. */
async function findAdapter(opts: AcquireOptions, tried: Tried): Promise<Found | null> {
  const navGpu = navigatorGpu();
  if (navGpu) {
    const found = await requestFrom(navGpu, 'navigator', opts, tried, 'navigator.gpu');
    if (found) return found;
  }
  const proc = nodeProcess();
  if (!proc) {
    if (!navGpu) {
      tried.push(
        'navigator.gpu: missing (WebGPU needs a secure context, https or http://127.0.0.1, and a WebGPU-enabled browser; ' +
          'headless Chromium: --enable-unsafe-webgpu --use-webgpu-adapter=swiftshader)',
      );
    }
    return null;
  }
  const dawnPath = opts.dawnPath ?? proc.env.QGEMM_DAWN_NODE ?? undefined;
  const what = dawnPath ? `dawn.node at ${dawnPath}` : "Dawn (the 'webgpu' package)";
  let mod: DawnModule;
  try {
    mod = await loadDawnModule(proc, dawnPath);
  } catch (e) {
    const fix = dawnPath ? 'check the path (QGEMM_DAWN_NODE / dawnPath)' : 'npm install webgpu';
    tried.push(`${what}: could not load it (${(e as Error).message.split('\n')[0]}); ${fix}`);
    return null;
  }
  const search = dawnSearch.then(() => searchDawn(mod, proc, dawnPath, what, opts, tried));
  dawnSearch = search.catch(() => undefined);
  return search;
}

async function searchDawn(
  mod: DawnModule,
  proc: NodeProcessLike,
  dawnPath: string | undefined,
  what: string,
  opts: AcquireOptions,
  tried: Tried,
): Promise<Found | null> {
  // First the drivers the environment gives. After our own SwiftShader fallback that is the instance made
  // before it, which still sees the default drivers, so a later hardware-only probe stays truthful.
  const callerIcd = swiftShaderSetByUs ? '' : (proc.env.VK_ICD_FILENAMES ?? '');
  const first = swiftShaderSetByUs ? dawnInstances.get(`${dawnPath ?? 'webgpu'}|`) : dawnInstance(mod, dawnPath, callerIcd);
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
  const fallback = await requestFrom(dawnInstance(mod, dawnPath, SWIFTSHADER_ICD), 'dawn', opts, tried, `${what} with VK_ICD_FILENAMES=${SWIFTSHADER_ICD}`);
  if (fallback) swiftShaderSetByUs = true;
  else if (setNow) delete proc.env.VK_ICD_FILENAMES;
  return fallback;
}

function noAdapter(opts: AcquireOptions, tried: Tried): NoAdapterError {
  const want = opts.allowSoftware ? 'WebGPU adapter' : 'hardware WebGPU adapter (software adapters count as none here)';
  const fix = nodeProcess()
    ? `Fix: on a machine with no GPU, install SwiftShader and the Vulkan loader (Debian: \`${INSTALL_HINT}\`), ` +
      `or set VK_ICD_FILENAMES=${SWIFTSHADER_ICD}; on a GPU machine install its Vulkan driver; or use --backend cpu.`
    : 'Fix: use a browser with WebGPU enabled, served from a secure context, or the CPU backend.';
  return new NoAdapterError(`No ${want} found. Tried: ${tried.join('; ') || 'nothing'}. ${fix}`);
}

/** Does the device accept dot4U8Packed? For caller-supplied devices, whose GPU object we don't have. */
async function probeDot4(device: GPUDevice): Promise<boolean> {
  device.pushErrorScope('validation');
  const module = device.createShaderModule({
    code: 'requires packed_4x8_integer_dot_product;\n@compute @workgroup_size(1) fn main() { _ = dot4U8Packed(1u, 1u); }',
  });
  const info = await module.getCompilationInfo();
  const error = await device.popErrorScope();
  return !error && !info.messages.some((m) => m.type === 'error');
}

/**
 * A GPUDevice with the adapter's own limits for big buffers and workgroups, and 'timestamp-query'
 * where offered. Order: opts.device; navigator.gpu; Dawn in Node (opts.dawnPath / QGEMM_DAWN_NODE, else
 * the `webgpu` package); then, with allowSoftware, Dawn on SwiftShader. Throws NoAdapterError naming
 * every attempt and the fix.
 */
export async function acquireDevice(opts: AcquireOptions): Promise<AcquiredDevice> {
  if (opts.device) {
    const device = opts.device;
    const wgsl = navigatorGpu()?.wgslLanguageFeatures;
    const summary = summarizeAdapter(device, wgsl);
    const hasDot4 = wgsl ? wgsl.has(DOT4_FEATURE) : await probeDot4(device);
    if (!wgsl && hasDot4) summary.wgslLanguageFeatures = [DOT4_FEATURE];
    return { device, adapter: null, summary, source: 'user', hasDot4 };
  }
  const tried: Tried = [];
  const found = await findAdapter(opts, tried);
  if (!found) throw noAdapter(opts, tried);
  const { adapter, gpu, summary, source } = found;
  const requiredLimits: Record<string, number> = {};
  for (const name of REQUESTED_LIMITS) {
    const v = summary.limits[name];
    if (typeof v === 'number') requiredLimits[name] = v;
  }
  const requiredFeatures = OPTIONAL_FEATURES.filter((f) => adapter.features.has(f));
  let device: GPUDevice;
  try {
    device = await adapter.requestDevice({ requiredLimits, requiredFeatures, label: 'qgemm' });
  } catch (e) {
    throw new NoAdapterError(`requestDevice failed on ${describeAdapter(summary)}: ${(e as Error).message}`);
  }
  return { device, adapter, summary, source, hasDot4: gpu.wgslLanguageFeatures.has(DOT4_FEATURE) };
}

/**
 * The adapter that backend 'auto' would use, or null: a hardware adapter only (SwiftShader and other
 * software adapters are slower than the CPU path). No device is created. Costs ~200 ms in Node on a
 * machine without a GPU (Dawn probes the Vulkan drivers once per process), ~0 after.
 */
export async function findHardwareAdapter(opts: Pick<AcquireOptions, 'dawnPath' | 'powerPreference'> = {}): Promise<AdapterSummary | null> {
  const found = await findAdapter({ ...opts, allowSoftware: false }, []);
  return found ? found.summary : null;
}

/** True when a hardware WebGPU adapter exists: backend 'auto' then picks WebGPU, else the CPU. */
export async function isHardwareAdapterAvailable(opts: Pick<AcquireOptions, 'dawnPath' | 'powerPreference'> = {}): Promise<boolean> {
  return (await findHardwareAdapter(opts)) !== null;
}

// ---- error scopes -----------------------------------------------------------------------------------

const deviceQueues = new WeakMap<GPUDevice, Promise<unknown>>();

/**
 * Runs fn with the device to itself: GPU work of this library on one device (every GpuContext on it,
 * elementwise kernels too) runs one call at a time, because error scopes belong to the device, and two
 * interleaved calls could pop each other's scopes. fn must not call withDevice on the same device.
 */
export function withDevice<T>(device: GPUDevice, fn: () => Promise<T>): Promise<T> {
  const run = (deviceQueues.get(device) ?? Promise.resolve()).then(fn, fn);
  deviceQueues.set(device, run.catch(() => undefined));
  return run;
}

/**
 * Runs fn (GPU calls, typically encode + submit) inside 'validation' and 'out-of-memory' error scopes
 * and throws GpuValidationError / GpuOutOfMemoryError when one fires, so that a GPU error never
 * passes silently. The scopes are popped even when fn throws.
 */
export async function runInErrorScope<T>(device: GPUDevice, fn: () => T | Promise<T>, what = 'GPU work'): Promise<T> {
  device.pushErrorScope('validation');
  device.pushErrorScope('out-of-memory');
  let result: T;
  try {
    result = await fn();
  } finally {
    const oom = await device.popErrorScope();
    const validation = await device.popErrorScope();
    if (oom) throw new GpuOutOfMemoryError(`${what}: out of GPU memory: ${oom.message}`);
    if (validation) throw new GpuValidationError(`${what}: WebGPU validation error: ${validation.message}`);
  }
  return result;
}
