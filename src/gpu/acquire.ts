// Getting a GPUDevice, wherever the library runs: a device the caller passes in, `navigator.gpu` in
// browsers (and Deno), or Dawn in Node (./dawn.ts, with its SwiftShader fallback). It asks each device
// for the adapter's own limits (big storage buffers, big workgroups), and for the optional features the
// kernels can use: 'timestamp-query', 'subgroups', 'shader-f16' and 'chromium-experimental-subgroup-matrix'
// where offered. What the device can then do is summed up once in AdapterCaps (./caps.ts). A device made
// through Dawn in Node gets the Dawn toggles of ./toggles.ts (default: the audited ones; docs/gpu.md), and
// says which. Failures throw NoAdapterError, naming what was tried and the fix.

import { InputError, NoAdapterError } from '../errors.ts';
import { brief } from '../problem/echo.ts';
import {
  describeAdapter,
  requestFrom,
  REQUESTED_LIMITS,
  summarizeAdapter,
  type AdapterSummary,
  type Found,
  type Tried,
} from './adapter.ts';
import { findDawnAdapter, INSTALL_HINT, SWIFTSHADER_ICD } from './dawn.ts';
import { nodeProcess } from '../runtime.ts';
import { rememberAdapterInfo } from './caps.ts';
import { AUDITED_TOGGLES, checkToggles, type DawnToggle, envToggles } from './toggles.ts';

export interface AcquiredDevice {
  device: GPUDevice;
  /** null when the caller passed in the device. */
  adapter: GPUAdapter | null;
  summary: AdapterSummary;
  source: 'navigator' | 'dawn' | 'user';
  /** WGSL has packed_4x8_integer_dot_product (dot4U8Packed / dot4I8Packed); else the manual-unpack kernel. */
  hasDot4: boolean;
  /**
   * The Dawn toggles the device was created with (source 'dawn'); null where the library did not create
   * it through Dawn (a browser's navigator.gpu: a page cannot set toggles; a caller's device).
   */
  toggles: DawnToggle[] | null;
}

export interface AcquireOptions {
  /** Accept a software adapter (SwiftShader...). false: hardware only ('auto' backend). */
  allowSoftware: boolean;
  /** Use this device as it is (source 'user'); no adapter is requested. */
  device?: GPUDevice | undefined;
  /** Node: load this dawn.node binary (a path ending in .node) instead of the `webgpu` package. Default: env QGEMM_DAWN_NODE. */
  dawnPath?: string | undefined;
  /** Default 'high-performance' (the discrete GPU on a laptop with two). */
  powerPreference?: GPUPowerPreference | undefined;
  /**
   * Node (Dawn): the device toggles, from 'disable_workgroup_init' and 'disable_robustness'; [] for
   * Dawn's defaults. Default: env QGEMM_DAWN_TOGGLES ('none' or a comma-separated list), else
   * AUDITED_TOGGLES, what the audit of every kernel proves safe (docs/gpu.md, "Dawn toggles").
   * 'disable_robustness' is not in the audited set: with it an out-of-bounds access is undefined.
   * Ignored for navigator.gpu and for a caller's device. An unknown name is an InputError.
   */
  toggles?: readonly DawnToggle[] | undefined;
}

/** The WGSL language feature behind dot4U8Packed / dot4I8Packed. */
const DOT4_FEATURE = 'packed_4x8_integer_dot_product';

/** Features requested where the adapter offers them. */
const OPTIONAL_FEATURES = ['timestamp-query', 'subgroups', 'shader-f16', 'chromium-experimental-subgroup-matrix'] as GPUFeatureName[];

function navigatorGpu(): GPU | undefined {
  return (globalThis as { navigator?: { gpu?: GPU } }).navigator?.gpu ?? undefined;
}

/** Finds an adapter (no device yet), trying navigator.gpu, then Dawn in Node. */
async function findAdapter(opts: AcquireOptions, toggles: readonly DawnToggle[], tried: Tried): Promise<Found | null> {
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
  return findDawnAdapter({ ...opts, toggles }, tried);
}

/** The toggles asked for: opts.toggles, else QGEMM_DAWN_TOGGLES, else the audited ones; checked. */
function requestedToggles(opts: Pick<AcquireOptions, 'toggles'>): DawnToggle[] {
  if (opts.toggles !== undefined) return checkToggles('toggles', opts.toggles);
  return envToggles(nodeProcess()?.env.QGEMM_DAWN_TOGGLES) ?? [...AUDITED_TOGGLES];
}

function noAdapter(opts: AcquireOptions, tried: Tried): NoAdapterError {
  const want = opts.allowSoftware ? 'WebGPU adapter' : 'hardware WebGPU adapter (software adapters count as none here)';
  const fix =
    tried.fix ??
    (nodeProcess()
      ? `Fix: on a machine with no GPU, install SwiftShader and the Vulkan loader (Debian: \`${INSTALL_HINT}\`), ` +
        `or set VK_ICD_FILENAMES=${SWIFTSHADER_ICD}; on a GPU machine install its Vulkan driver; or use --backend cpu.`
      : 'Fix: use a browser with WebGPU enabled, served from a secure context (https, or http://localhost); ' +
        'Chrome on Linux, or headless, needs --enable-unsafe-webgpu (and --use-webgpu-adapter=swiftshader without a GPU); or use the CPU backend.');
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
    return { device, adapter: null, summary, source: 'user', hasDot4, toggles: null };
  }
  const toggles = requestedToggles(opts);
  const tried: Tried = [];
  const found = await findAdapter(opts, toggles, tried);
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
  rememberAdapterInfo(device, adapter.info);
  return {
    device,
    adapter,
    summary,
    source,
    hasDot4: gpu.wgslLanguageFeatures.has(DOT4_FEATURE),
    toggles: source === 'dawn' ? [...toggles] : null,
  };
}

/**
 * The adapter that backend 'auto' would use, or null: a hardware adapter only (SwiftShader and other
 * software adapters are slower than the CPU path). No device is created. Costs ~200 ms in Node on a
 * machine without a GPU (Dawn probes the Vulkan drivers once per process), ~0 after.
 */
async function findHardwareAdapter(
  opts: Pick<AcquireOptions, 'dawnPath' | 'powerPreference' | 'toggles'> = {},
): Promise<AdapterSummary | null> {
  const found = await findAdapter({ ...opts, allowSoftware: false }, requestedToggles(opts), []);
  return found ? found.summary : null;
}

/** True when a hardware WebGPU adapter exists: backend 'auto' then picks WebGPU, else the CPU. */
export async function isHardwareAdapterAvailable(
  opts: Pick<AcquireOptions, 'dawnPath' | 'powerPreference' | 'toggles'> = {},
): Promise<boolean> {
  checkAdapterOptions(opts);
  return (await findHardwareAdapter(opts)) !== null;
}

/**
 * The options that choose an adapter (dawnPath, powerPreference, toggles) of the wrong type or value: an
 * InputError naming the option, before any adapter is asked for. GpuContext.create's check runs it too.
 */
export function checkAdapterOptions(opts: unknown): void {
  if (!opts || typeof opts !== 'object' || Array.isArray(opts)) throw new InputError('options', `expected an object, got ${brief(opts)}`);
  const o = opts as Record<string, unknown>;
  if (o.dawnPath !== undefined && typeof o.dawnPath !== 'string')
    throw new InputError('dawnPath', `expected a string, got ${brief(o.dawnPath)}`);
  if (o.powerPreference !== undefined && o.powerPreference !== 'low-power' && o.powerPreference !== 'high-performance')
    throw new InputError('powerPreference', `expected "low-power" or "high-performance", got ${brief(o.powerPreference)}`);
  if (o.toggles !== undefined) checkToggles('toggles', o.toggles as readonly unknown[]);
}
