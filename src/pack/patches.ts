// The host side of ./patches.wgsl, the PACK stage (PACK -> gemm -> output) of a convolution's lhs: its
// geometry, its dispatches (whole input in one binding; packed-row chunks and grids as ./plan.ts cuts
// them) and their encoding. The GEMM then reads the packed patches like any prepacked lhs
// (src/scheduler/prepack.ts prepackPatches).

import { InputError, LimitExceededError } from '../errors.ts';
import { checkKnownKeys } from '../problem/check.ts';
import type { PlanLimits } from '../gpu/caps.ts';
import { getPipeline } from '../gpu/pipelines.ts';
import { namedEntries, uniformLayout } from '../gpu/reflect.ts';
import type { UniformSlab } from '../gpu/uniforms.ts';
import { type PackFormat, packedRowBytes } from './formats.ts';
import patchGather from './patch-gather.wgsl?raw';
import patches from './patches.wgsl?raw';
import rowSum from './row-sum.wgsl?raw';
import { type PackDispatch, planPack } from './plan.ts';

const WORKGROUP_SIZE = 64;
const source = [rowSum, patchGather, patches].join('\n');

/** ./patch-gather.wgsl: the patch layout, its geometry uniform and input binding, for a kernel that gathers its lhs. */
export const patchGatherWgsl = patchGather;

/**
 * A 2-D convolution's patches: input NHWC [batch, height, width, channels], a filter of
 * filterHeight x filterWidth, strides, dilations, the leading padding and the output size, as TFLite
 * computes them (src/layers/layers.ts convGeometry). Patch row (b, oh, ow) has filterHeight *
 * filterWidth * channels values in the filter's OHWI order.
 */
export interface PatchGeometry {
  batch: number;
  height: number;
  width: number;
  channels: number;
  filterHeight: number;
  filterWidth: number;
  strideHeight: number;
  strideWidth: number;
  dilationHeight: number;
  dilationWidth: number;
  padTop: number;
  padLeft: number;
  outHeight: number;
  outWidth: number;
}

/**
 * How the patch matrix of g is its input itself, row for row (the NHWC bytes as an [M, K] row-major
 * matrix): 'pixels' for a 1x1 filter at stride 1 without padding (a row per pixel, K = C), 'images' for
 * a filter the size of the image without padding or dilation (a row per image, K = H W C, as a
 * classifier's last convolution on a 1x1 map is too); null for any other geometry.
 */
export function patchesAreInput(g: PatchGeometry): 'pixels' | 'images' | null {
  if (g.padTop !== 0 || g.padLeft !== 0) return null;
  const one = g.filterHeight === 1 && g.filterWidth === 1;
  if (one && g.strideHeight === 1 && g.strideWidth === 1 && g.outHeight === g.height && g.outWidth === g.width) return 'pixels';
  const whole = g.filterHeight === g.height && g.filterWidth === g.width && g.outHeight === 1 && g.outWidth === 1;
  if (whole && g.dilationHeight === 1 && g.dilationWidth === 1) return 'images';
  return null;
}

/** The patch matrix's shape: rows = output pixels, cols = filter taps times channels. */
export function patchShape(g: PatchGeometry): { rows: number; cols: number } {
  return { rows: g.batch * g.outHeight * g.outWidth, cols: g.filterHeight * g.filterWidth * g.channels };
}

/**
 * The patch matrix on the host, naive and normative: rows (b, oh, ow) x (kh, kw, c), padding holding the
 * input zero point. The CPU path's im2col, the GPU path's for an input above one binding, and the
 * reference against which the GPU's patch pack and gathers are checked (verify, the self-test).
 */
export function im2col(input: Uint8Array | Int8Array, g: PatchGeometry, zeroPoint: number): Uint8Array | Int8Array {
  const { rows, cols: K } = patchShape(g);
  const cols = input instanceof Uint8Array ? new Uint8Array(rows * K) : new Int8Array(rows * K);
  cols.fill(zeroPoint);
  const C = g.channels;
  let row = 0;
  for (let b = 0; b < g.batch; b++)
    for (let oh = 0; oh < g.outHeight; oh++)
      for (let ow = 0; ow < g.outWidth; ow++, row++)
        for (let kh = 0; kh < g.filterHeight; kh++) {
          const ih = oh * g.strideHeight - g.padTop + kh * g.dilationHeight;
          if (ih < 0 || ih >= g.height) continue;
          for (let kw = 0; kw < g.filterWidth; kw++) {
            const iw = ow * g.strideWidth - g.padLeft + kw * g.dilationWidth;
            if (iw < 0 || iw >= g.width) continue;
            const src = ((b * g.height + ih) * g.width + iw) * C;
            cols.set(input.subarray(src, src + C), row * K + (kh * g.filterWidth + kw) * C);
          }
        }
  return cols;
}

const FIELDS = Object.keys({
  batch: 0,
  height: 0,
  width: 0,
  channels: 0,
  filterHeight: 0,
  filterWidth: 0,
  strideHeight: 0,
  strideWidth: 0,
  dilationHeight: 0,
  dilationWidth: 0,
  padTop: 0,
  padLeft: 0,
  outHeight: 0,
  outWidth: 0,
} satisfies Record<keyof PatchGeometry, 0>) as (keyof PatchGeometry)[];

/**
 * The largest patch position ./patches.wgsl computes: oh * stride + kh * dilation (and ow, kw alike) in
 * 32-bit integers, read as i32 before the leading padding is taken off. Every geometry field and every
 * such position is at most this, on every backend (src/layers/layers.ts convShape takes the same limit).
 */
export const MAX_PATCH_POSITION = 2 ** 31 - 1;

/**
 * Every field a non-negative integer (sizes positive) up to MAX_PATCH_POSITION, the padding within the
 * filter, the last patch starting before the input's end, every tap position up to MAX_PATCH_POSITION;
 * the input holds `inputLength` values.
 */
export function checkPatchGeometry(g: PatchGeometry, inputLength: number): void {
  if (!g || typeof g !== 'object') throw new InputError('geometry', 'expected a PatchGeometry');
  checkKnownKeys('geometry', g, FIELDS); // a misspelt `padBottom`, `strideH` would be passed over
  for (const f of FIELDS) {
    const v = g[f];
    const min = f === 'padTop' || f === 'padLeft' ? 0 : 1;
    if (!Number.isInteger(v) || v < min || v > MAX_PATCH_POSITION)
      throw new InputError(`geometry.${f}`, `expected an integer in ${min}..${MAX_PATCH_POSITION} (2^31 - 1), got ${v}`);
  }
  if (inputLength !== g.batch * g.height * g.width * g.channels) {
    throw new InputError('input', `expected ${g.batch * g.height * g.width * g.channels} values (NHWC), got ${inputLength}`);
  }
  for (const [pad, size, filter, stride, dilation, out, what] of [
    [g.padTop, g.height, g.filterHeight, g.strideHeight, g.dilationHeight, g.outHeight, 'Height'],
    [g.padLeft, g.width, g.filterWidth, g.strideWidth, g.dilationWidth, g.outWidth, 'Width'],
  ] as const) {
    const effective = (filter - 1) * dilation + 1;
    if (pad >= effective)
      throw new InputError(
        `geometry.pad${what === 'Height' ? 'Top' : 'Left'}`,
        `expected less than the filter's extent ${effective}, got ${pad}`,
      );
    if ((out - 1) * stride - pad >= size) {
      throw new InputError(`geometry.out${what}`, `the last of ${out} outputs at stride ${stride} starts past the input (${size})`);
    }
    const last = (out - 1) * stride + (filter - 1) * dilation;
    if (last > MAX_PATCH_POSITION) {
      throw new InputError(
        `geometry.stride${what}`,
        `the last tap lies at position ${last} of the padded input, above ${MAX_PATCH_POSITION} (2^31 - 1, the 32-bit positions of the patch packing)`,
      );
    }
  }
}

/** What one patch pack writes: the input's bytes on the GPU, into `packed` and `sums` in `format`. */
export interface PatchJob {
  geometry: PatchGeometry;
  src: GPUBuffer;
  /** Bytes from one input pixel to the next in `src`: the channels, or a GPU matrix's row stride. */
  pixelStride: number;
  signed: boolean;
  /** The input zero point, as the input's type stores it. */
  zeroPoint: number;
  format: PackFormat;
  plan: PackDispatch[];
  packed: GPUBuffer;
  sums: GPUBuffer;
}

/** The dispatches: the whole input in one binding (else LimitExceededError), packed rows chunked to fit. */
export function planPatches(g: PatchGeometry, inputBytes: number, format: PackFormat, limits: PlanLimits): PackDispatch[] {
  if (inputBytes > limits.maxStorageBufferBindingSize) {
    throw new LimitExceededError(
      'maxStorageBufferBindingSize',
      `the convolution input needs ${inputBytes} bytes in one binding, above maxStorageBufferBindingSize ${limits.maxStorageBufferBindingSize}`,
    );
  }
  const { rows, cols } = patchShape(g);
  const bytes = Math.ceil(inputBytes / 4) * 4;
  return planPack({ bytes, outerStride: 1, depthStride: 1 }, bytes, rows, cols, format, limits, 'convolution patches');
}

export function patchPipeline(device: GPUDevice): Promise<GPUComputePipeline> {
  return getPipeline(device, { id: 'pack-patches', source, entryPoint: 'packPatches', overrides: { WORKGROUP_SIZE }, reflect: [source] });
}

/** What ./patch-gather.wgsl reads of a patch matrix: its PatchGeometry uniform's values. */
export function patchGeometryValues(x: {
  geometry: PatchGeometry;
  pixelStride: number;
  signed: boolean;
  zeroPoint: number;
}): Record<string, number> {
  const g = x.geometry;
  const { rows, cols } = patchShape(g);
  return {
    rows,
    depth: cols,
    H: g.height,
    W: g.width,
    C: g.channels,
    KW: g.filterWidth,
    outH: g.outHeight,
    outW: g.outWidth,
    strideH: g.strideHeight,
    strideW: g.strideWidth,
    dilationH: g.dilationHeight,
    dilationW: g.dilationWidth,
    padTop: g.padTop,
    padLeft: g.padLeft,
    signFlip: x.signed ? 0x80 : 0,
    padValue: (x.zeroPoint & 0xff) ^ (x.signed ? 0x80 : 0),
    pixelStride: x.pixelStride,
  };
}

/**
 * The bindings of ./patch-gather.wgsl for a GEMM kernel that gathers its lhs from a convolution's input
 * (src/kernels/types.ts PatchLhs), by name for namedEntries: the geometry uniform, allocated in `slab` as
 * `source` lays it out, and the input's first `bindingBytes`.
 */
export function patchGatherBindings(
  source: string,
  x: { buffer: GPUBuffer; bindingBytes: number; geometry: PatchGeometry; pixelStride: number; signed: boolean; zeroPoint: number },
  slab: UniformSlab,
): { geometry: GPUBufferBinding; patchInput: GPUBufferBinding } {
  return {
    geometry: slab.alloc(uniformLayout(source, 'PatchGeometry'), patchGeometryValues(x)),
    patchInput: { buffer: x.buffer, size: x.bindingBytes },
  };
}

/** Records a patch job into `pass` (one uniform slot per dispatch). */
export function encodePatches(
  device: GPUDevice,
  pass: GPUComputePassEncoder,
  pipeline: GPUComputePipeline,
  job: PatchJob,
  slab: UniformSlab,
): void {
  const g = job.geometry;
  const { rows, cols } = patchShape(g);
  const rowBytes = packedRowBytes(cols, job.format);
  const layout = uniformLayout(source, 'PatchParams');
  const geometry = slab.alloc(uniformLayout(source, 'PatchGeometry'), patchGeometryValues(job));
  const bindGroupLayout = pipeline.getBindGroupLayout(0);
  pass.setPipeline(pipeline);
  for (const d of job.plan) {
    const params = slab.alloc(layout, { outerRows: d.rows, outerBase: d.outerBase, workgroupBase: d.base, depthWords: rowBytes / 4 });
    pass.setBindGroup(
      0,
      device.createBindGroup({
        layout: bindGroupLayout,
        entries: namedEntries(source, {
          params,
          geometry,
          patchInput: { buffer: job.src, offset: d.srcBase, size: d.srcSize },
          packed: { buffer: job.packed, offset: d.outerBase * rowBytes, size: d.rows * rowBytes },
          sums: { buffer: job.sums, offset: 0, size: Math.ceil(rows / job.format.rowAlign) * job.format.rowAlign * 4 },
        }),
      }),
    );
    pass.dispatchWorkgroups(d.x, d.y);
  }
}
