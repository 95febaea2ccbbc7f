// AdapterCaps: what one device can do, computed once per device from its adapter summary, features and
// limits. It is the left half of the kernel registry's choice table (src/kernels/registry.ts): kernels
// declare what they need of it (`supports(caps, shape)`), and the scheduler plans bands and dispatches
// with its limits. Limits may be lowered below the device's (tests use that to exercise splitting).

import { InputError, LimitExceededError } from '../errors.ts';
import { brief } from '../problem/echo.ts';
import type { AdapterSummary } from './adapter.ts';
import type { DawnToggle } from './toggles.ts';

/** One subgroup-matrix configuration the adapter offers (Dawn's adapter.info.subgroupMatrixConfigs). */
export interface SubgroupMatrixConfig {
  componentType: string;
  resultComponentType: string;
  M: number;
  N: number;
  K: number;
}

/** The limits the scheduler plans with: the device's, or lower ones. */
export interface PlanLimits {
  maxStorageBufferBindingSize: number;
  maxComputeWorkgroupsPerDimension: number;
  maxBufferSize: number;
  maxComputeWorkgroupStorageSize: number;
  maxComputeInvocationsPerWorkgroup: number;
  maxComputeWorkgroupSizeX: number;
  minStorageBufferOffsetAlignment: number;
  minUniformBufferOffsetAlignment: number;
}

/** Limits a caller lowers (GpuContext.create({ limits })): any of PlanLimits; one given as undefined is absent. */
export type LoweredLimits = { [K in keyof PlanLimits]?: PlanLimits[K] | undefined };

/** A buffer of `bytes` for `what` above the limits' maxBufferSize: a LimitExceededError naming it. */
export function checkBufferSize(limits: Pick<PlanLimits, 'maxBufferSize'>, bytes: number, what: string): void {
  if (bytes > limits.maxBufferSize)
    throw new LimitExceededError('maxBufferSize', `${what} needs ${bytes} bytes, above maxBufferSize ${limits.maxBufferSize}`);
}

export interface AdapterCaps {
  vendor: string;
  architecture: string;
  /** A CPU emulation (SwiftShader...): correct, but slower than the CPU path. */
  isSoftware: boolean;
  /**
   * Compiling a pipeline takes most of a first call (a software adapter: SwiftShader spends seconds on a
   * kernel whose loops hold barriers), so kernels and packs take configurations that compile fast. Equal
   * to isSoftware; tests set it false on SwiftShader to run the configurations of hardware adapters.
   */
  slowCompiler: boolean;
  /** WGSL's packed_4x8_integer_dot_product (dot4U8Packed); else kernels unpack bytes by hand. */
  dot4: boolean;
  /** The 'subgroups' feature, with the adapter's subgroup sizes (0 when unknown). */
  subgroups: boolean;
  subgroupMinSize: number;
  subgroupMaxSize: number;
  /** u8/i8 subgroup-matrix configurations usable on this device ('chromium-experimental-subgroup-matrix'). */
  subgroupMatrix: SubgroupMatrixConfig[];
  f16: boolean;
  timestamps: boolean;
  limits: PlanLimits;
  /** The Dawn toggles the device runs with (./toggles.ts); null or absent where the library did not set them. */
  toggles?: readonly DawnToggle[] | null | undefined;
}

const LIMIT_KEYS: (keyof PlanLimits)[] = [
  'maxStorageBufferBindingSize',
  'maxComputeWorkgroupsPerDimension',
  'maxBufferSize',
  'maxComputeWorkgroupStorageSize',
  'maxComputeInvocationsPerWorkgroup',
  'maxComputeWorkgroupSizeX',
  'minStorageBufferOffsetAlignment',
  'minUniformBufferOffsetAlignment',
];

/**
 * The adapter info of devices this library created. Dawn's device.adapterInfo lists no subgroup-matrix
 * configurations (only the adapter's own info does), and a context made from a device alone has no adapter.
 */
const adapterInfos = new WeakMap<GPUDevice, unknown>();
export function rememberAdapterInfo(device: GPUDevice, info: unknown): void {
  adapterInfos.set(device, info);
}

/** The subgroup-matrix configs of an adapter's info, where the implementation reports them. */
export function subgroupMatrixConfigs(info: unknown): SubgroupMatrixConfig[] {
  const configs = (info as { subgroupMatrixConfigs?: Iterable<SubgroupMatrixConfig> } | null)?.subgroupMatrixConfigs;
  if (!configs) return [];
  return [...configs].map(({ componentType, resultComponentType, M, N, K }) => ({ componentType, resultComponentType, M, N, K }));
}

/**
 * The invocations of the library's smallest fixed workgroups (the packs, the patch pack, the elementwise
 * kernel, the gemv, split-K's partial and reduce passes): under every device's minimum (WebGPU's
 * compatibility mode guarantees 128 invocations and 128 along x; core, 256), so they run anywhere and
 * need no check. The larger ones (the 64-tiles, the wide and subgroup-matrix tilings, the transposing
 * pack) check fitsWorkgroup.
 */
export const SMALLEST_WORKGROUP = 64;
/**
 * Workgroup memory that every fixed workgroup fits in (the largest, the transposing pack's, is 5 KiB);
 * every device has 16 KiB. The tiled kernels check their staging against the limit.
 */
export const FIXED_WORKGROUP_STORAGE = 8192;
/** The least value each lowered workgroup limit may take: every fixed workgroup still fits. */
const LEAST_LIMIT: Readonly<Record<string, number>> = {
  maxComputeInvocationsPerWorkgroup: SMALLEST_WORKGROUP,
  maxComputeWorkgroupSizeX: SMALLEST_WORKGROUP,
  maxComputeWorkgroupStorageSize: FIXED_WORKGROUP_STORAGE,
};

/**
 * Whether a workgroup of x by y invocations (@workgroup_size(x, y)) fits these limits. y is at most 16 in
 * every kernel, under every device's maxComputeWorkgroupSizeY (128 at least), so it is not checked.
 */
export function fitsWorkgroup(limits: PlanLimits, x: number, y = 1): boolean {
  return x * y <= limits.maxComputeInvocationsPerWorkgroup && x <= limits.maxComputeWorkgroupSizeX;
}

/**
 * Checks the limits a caller lowers (GpuContext.create({ limits })): an object of known PlanLimits keys,
 * each a positive integer (an alignment a power of two, as WebGPU's; a workgroup limit at least what
 * the fixed workgroups need, LEAST_LIMIT), else an InputError naming `limits.<key>`. A NaN, 0 or
 * negative value would plan no dispatch or never finish planning.
 */
export function checkPlanLimits(lowered: unknown): LoweredLimits {
  if (lowered === undefined) return {};
  if (!lowered || typeof lowered !== 'object' || Array.isArray(lowered)) throw new InputError('limits', 'expected an object of limits');
  for (const [key, v] of Object.entries(lowered)) {
    if (!LIMIT_KEYS.includes(key as keyof PlanLimits)) {
      throw new InputError(`limits.${key}`, `unknown limit; known: ${LIMIT_KEYS.join(', ')}`);
    }
    if (v === undefined) continue;
    const alignment = key.startsWith('min');
    const least = LEAST_LIMIT[key] ?? 1;
    if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < least || (alignment && (v & (v - 1)) !== 0)) {
      const expected = alignment ? 'a power of two' : `an integer of at least ${least}`;
      const why = least > 1 ? ' (what the packs, the gemv and split-K need of every device)' : '';
      throw new InputError(`limits.${key}`, `expected ${expected}, got ${brief(v)}${why}`);
    }
  }
  return lowered as LoweredLimits;
}

/**
 * Caps of `device`. `adapterInfo` carries the subgroup sizes and subgroup-matrix configs (GPUAdapterInfo);
 * `lowered` caps the planning limits (never above the device's).
 */
export function adapterCaps(
  device: GPUDevice,
  summary: AdapterSummary,
  hasDot4: boolean,
  adapterInfo: unknown,
  lowered: LoweredLimits = {},
): AdapterCaps {
  const info = (adapterInfo ?? {}) as { subgroupMinSize?: number; subgroupMaxSize?: number };
  const features = device.features;
  const limits = {} as PlanLimits;
  for (const key of LIMIT_KEYS) {
    const own = (device.limits as unknown as Record<string, number>)[key];
    // Alignments are minimums: "lowering" them means asking for more alignment, never less.
    limits[key] = key.startsWith('min') ? Math.max(own, lowered[key] ?? 0) : Math.min(own, lowered[key] ?? Infinity);
  }
  const subgroupMatrix = features.has('chromium-experimental-subgroup-matrix' as GPUFeatureName)
    ? (subgroupMatrixConfigs(adapterInfo).length
        ? subgroupMatrixConfigs(adapterInfo)
        : subgroupMatrixConfigs(adapterInfos.get(device))
      ).filter((c) => ['u8', 'i8'].includes(c.componentType))
    : [];
  return {
    vendor: summary.vendor,
    architecture: summary.architecture,
    isSoftware: summary.isSoftware,
    slowCompiler: summary.isSoftware,
    dot4: hasDot4,
    subgroups: features.has('subgroups' as GPUFeatureName),
    subgroupMinSize: info.subgroupMinSize ?? 0,
    subgroupMaxSize: info.subgroupMaxSize ?? 0,
    subgroupMatrix,
    f16: features.has('shader-f16'),
    timestamps: features.has('timestamp-query'),
    limits,
  };
}
