// The adapter, described and requested (the lowest layer of the GPU plumbing, under the scheduler that
// encodes pack -> gemm -> output): AdapterSummary (what a caller or a log needs to know about an
// adapter, software or not) and one adapter request against any GPU object, navigator.gpu or a Dawn
// instance alike. Where the GPU object comes from is ./dawn.ts (Node) and ./acquire.ts (everywhere).

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

type InfoLike = Partial<Pick<GPUAdapterInfo, 'vendor' | 'architecture' | 'description' | 'device' | 'isFallbackAdapter'>>;

const SOFTWARE_NAMES = /swiftshader|llvmpipe|lavapipe|softpipe|microsoft basic render|\bwarp\b/i;

/** A CPU emulation? isFallbackAdapter, architecture 'swiftshader', or a known software renderer's name. */
function isSoftwareAdapterInfo(info: InfoLike): boolean {
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
export function summarizeAdapter(adapter: GPUAdapter | GPUDevice, wgslLanguageFeatures?: Iterable<string>): AdapterSummary {
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

export interface Found {
  gpu: GPU;
  adapter: GPUAdapter;
  summary: AdapterSummary;
  source: 'navigator' | 'dawn';
}

/** Where each attempt went, for the error message; `fix`, when set, is the only fix that applies. */
export type Tried = string[] & { fix?: string };

export interface RequestOptions {
  allowSoftware: boolean;
  powerPreference?: GPUPowerPreference | undefined;
}

export async function requestFrom(
  gpu: GPU,
  source: 'navigator' | 'dawn',
  opts: RequestOptions,
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
