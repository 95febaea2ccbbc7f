// The WebGPU side of the elementwise ops (TFLite add/sub/mul, builtin or XNNPACK's arithmetic,
// alignedAdd/alignedSub): runs a plan made by prepareElementwise (src/problem/elementwise-plan.ts; the
// math is specified in src/problem/elementwise.ts) through ./elementwise.wgsl, bit-exact with the CPU
// reference (src/reference/elementwise.ts), in bands and dispatches planned by src/gpu/plan.ts (outputs
// larger than a binding and grids larger than the workgroup limit split).
// The inputs go up packed 4 bytes per u32 as they are stored (C or Fortran order; broadcasting is by
// strides in the kernel), the per-call parameters through a uniform struct laid out by reflection
// (src/gpu/reflect.ts), the per-channel alignment data through a storage buffer; the output comes back
// packed 4 per u32, C order. Everything runs inside validation and out-of-memory error scopes; a lost
// device is reported as DeviceLostError (src/api.ts then retries once on a fresh device).

import { DeviceLostError } from '../errors.ts';
import { float32Bits } from '../quant/float32.ts';
import { checkBufferSize, type PlanLimits } from '../gpu/caps.ts';
import { getPipeline } from '../gpu/pipelines.ts';
import { planElementwise, roundUp } from '../gpu/plan.ts';
import { namedEntries, uniformLayout } from '../gpu/reflect.ts';
import { SLOT, UniformSlab } from '../gpu/uniforms.ts';
import { lossSettled, runInErrorScope } from '../gpu/scopes.ts';
import { ELEMENTWISE_KIND_CODE, wgslCodes } from '../gpu/codes.ts';
import { float32Library } from '../wgsl/source.ts';
import type { ElementwisePlan, ElementwiseResult } from '../problem/elementwise.ts';
import elementwiseWgsl from './elementwise.wgsl?raw';
import { writeHostBytes } from '../gpu/write.ts';
import { BufferUsage, MapMode } from '../gpu/usage.ts';

/** What the elementwise kernel needs of a GpuContext (a GpuContext is one). */
export interface ElementwiseGpuTarget {
  readonly device: GPUDevice;
  readonly limits: PlanLimits;
  /** Why the device is gone, or null (GpuContext.lostReason): a DeviceLostError carries it, as a GEMM's does. */
  readonly lostReason: string | null;
}

const WORKGROUP_SIZE = 64;
/** The kernel path of each op (add and sub share one, as do the aligned ops), on TFLite's builtin arithmetic and on XNNPACK's. */
const KIND = { add: 'add', sub: 'add', mul: 'mul', alignedAdd: 'aligned', alignedSub: 'aligned' } as const;
const XNNPACK_KIND = { add: 'xnnpackAdd', sub: 'xnnpackAdd', mul: 'xnnpackMul' } as const;
const source = [wgslCodes, float32Library, elementwiseWgsl].join('\n');

/** The uniform values of ElementwiseParams for a plan (every member, by name). */
function elementwiseUniforms(p: ElementwisePlan): Record<string, number> {
  const channelsA = p.alignA ? p.alignA.mantissa.length : 0;
  return {
    count: p.count,
    kind: ELEMENTWISE_KIND_CODE[p.xnnpack ? XNNPACK_KIND[p.op as 'add' | 'sub' | 'mul'] : KIND[p.op]],
    subtract: p.sign < 0 ? 1 : 0,
    signedData: p.dtype === 'int8' ? 1 : 0,
    dim1: p.dims4[1],
    dim2: p.dims4[2],
    dim3: p.dims4[3],
    aStride0: p.aStrides4[0],
    aStride1: p.aStrides4[1],
    aStride2: p.aStrides4[2],
    aStride3: p.aStrides4[3],
    bStride0: p.bStrides4[0],
    bStride1: p.bStrides4[1],
    bStride2: p.bStrides4[2],
    bStride3: p.bStrides4[3],
    aChannelDim: p.aChannelDim4,
    bChannelDim: p.bChannelDim4,
    bChannelBase: 2 * channelsA,
    zeroA: p.zeroA,
    zeroB: p.zeroB,
    zeroOut: p.zeroOut,
    actMin: p.min,
    actMax: p.max,
    leftShift: p.leftShift,
    input1Multiplier: p.input1.multiplier,
    input1Shift: p.input1.shift,
    input2Multiplier: p.input2.multiplier,
    input2Shift: p.input2.shift,
    outputMultiplier: p.output.multiplier,
    outputShift: p.output.shift,
    xnnpackAMultiplier: p.xnnpack?.aMultiplier ?? 0,
    xnnpackBMultiplier: p.xnnpack?.bMultiplier ?? 0,
    xnnpackShift: p.xnnpack?.shift ?? 1,
    xnnpackScaleBits: float32Bits(p.xnnpack?.scale ?? 0),
  };
}

/** (mantissa, shift) pairs of a's channels then b's: the `channels` storage buffer. At least one pair. */
function channelData(p: ElementwisePlan): Int32Array {
  const pairs: number[] = [];
  for (const align of [p.alignA, p.alignB]) {
    if (!align) continue;
    for (let c = 0; c < align.mantissa.length; c++) pairs.push(align.mantissa[c], align.shift[c]);
  }
  if (pairs.length === 0) pairs.push(0, 0);
  return Int32Array.from(pairs);
}

/** Bytes padded to a whole number of u32 words (at least one). */
function padded(bytes: Uint8Array): Uint8Array {
  const out = new Uint8Array(Math.max(4, roundUp(bytes.byteLength, 4)));
  out.set(bytes);
  return out;
}

/** Where an input's bytes are: a CPU array (uploaded) or a GPU buffer (read where it is, at the plan's strides). */
export type ElementwiseSource = ArrayBufferView | GPUBuffer;

/**
 * A buffer of this op's own, pushed on `temps` (destroyed after the call); one above the target's
 * maxBufferSize is a LimitExceededError, as the GEMM's are (checkBufferSize).
 */
function tempBuffer(target: ElementwiseGpuTarget, temps: GPUBuffer[], size: number, usage: number, label: string): GPUBuffer {
  checkBufferSize(target.limits, size, `elementwise ${label}`);
  const b = target.device.createBuffer({ size, usage, label: `qgemm elementwise ${label}` });
  temps.push(b);
  return b;
}

/**
 * Records one plan into a new command encoder: the inputs bound (CPU ones uploaded into temporary
 * buffers pushed on `temps`), every band dispatched into `out` (dense, C order, 4 per u32).
 */
async function encodeElementwise(
  target: ElementwiseGpuTarget,
  p: ElementwisePlan,
  inputs: [ElementwiseSource, ElementwiseSource],
  out: GPUBuffer,
  temps: GPUBuffer[],
): Promise<GPUCommandEncoder> {
  const { device, limits } = target;
  const buffer = (size: number, usage: number, label: string) => tempBuffer(target, temps, size, usage, label);
  const storage = (data: ArrayBufferView, label: string) => {
    const bytes = padded(new Uint8Array(data.buffer, data.byteOffset, data.byteLength));
    const b = buffer(bytes.byteLength, BufferUsage.STORAGE | BufferUsage.COPY_DST, label);
    writeHostBytes(device.queue, b, 0, bytes.buffer, bytes.byteOffset, bytes.byteLength);
    return b;
  };
  const [a, b] = inputs.map((x, i) => (ArrayBuffer.isView(x) ? storage(x, 'ab'[i]) : x));
  const channels = channelData(p);
  const plan = planElementwise(Math.ceil(p.count / 4), [a.size, b.size, channels.byteLength], WORKGROUP_SIZE, limits);
  const layout = uniformLayout(source, 'ElementwiseParams');
  const pipeline = await getPipeline(device, { id: 'elementwise', source, entryPoint: 'elementwise', overrides: { WORKGROUP_SIZE } });
  // one slot per dispatch, in one buffer of this call's
  const slab = new UniformSlab(() => buffer(plan.length * SLOT, BufferUsage.UNIFORM | BufferUsage.COPY_DST, 'params'));
  const ch = storage(channels, 'channels');
  const encoder = device.createCommandEncoder({ label: `qgemm elementwise ${p.op}` });
  const pass = encoder.beginComputePass();
  pass.setPipeline(pipeline);
  const base = elementwiseUniforms(p);
  for (const d of plan) {
    const entries = namedEntries(source, {
      params: slab.alloc(layout, { ...base, wordBegin: d.wordBegin, bandWords: d.words, workgroupBase: d.base }),
      aData: { buffer: a },
      bData: { buffer: b },
      channels: { buffer: ch },
      outData: { buffer: out, offset: d.wordBegin * 4, size: d.words * 4 },
    });
    pass.setBindGroup(0, device.createBindGroup({ layout: pipeline.getBindGroupLayout(0), entries }));
    pass.dispatchWorkgroups(d.x, d.y);
  }
  slab.upload(device.queue);
  pass.end();
  return encoder;
}

/** The lost-device error of an elementwise op, whatever the failure looked like (an aborted map: lossSettled). */
async function lostOr(target: ElementwiseGpuTarget, p: ElementwisePlan, e: unknown): Promise<unknown> {
  if (target.lostReason === null) await lossSettled(target.device, e);
  const reason = target.lostReason;
  return reason !== null && !(e instanceof DeviceLostError) ? DeviceLostError.of(reason, `elementwise ${p.op}`, e) : e;
}

/** Runs a prepared elementwise plan on the target's device and reads the result back. */
export async function elementwiseOnGpu(target: ElementwiseGpuTarget, p: ElementwisePlan): Promise<ElementwiseResult> {
  const lostCheck = () => {
    if (target.lostReason !== null) throw DeviceLostError.of(target.lostReason);
  };
  lostCheck();
  const dataOut = p.dtype === 'uint8' ? new Uint8Array(p.count) : new Int8Array(p.count);
  if (p.count === 0) return { data: dataOut, shape: [...p.shape], dtype: p.dtype };

  const { device } = target;
  const outBytes = Math.ceil(p.count / 4) * 4;
  const temps: GPUBuffer[] = [];
  const buffer = (size: number, usage: number, label: string) => tempBuffer(target, temps, size, usage, label);
  try {
    const result = await runInErrorScope(
      device,
      async () => {
        const out = buffer(outBytes, BufferUsage.STORAGE | BufferUsage.COPY_SRC, 'out');
        const staging = buffer(outBytes, BufferUsage.MAP_READ | BufferUsage.COPY_DST, 'readback');
        const encoder = await encodeElementwise(target, p, [p.a, p.b], out, temps);
        encoder.copyBufferToBuffer(out, 0, staging, 0, outBytes);
        device.queue.submit([encoder.finish()]);
        await staging.mapAsync(MapMode.READ);
        const bytes = new Uint8Array(staging.getMappedRange().slice(0, p.count));
        staging.unmap();
        return bytes;
      },
      `elementwise ${p.op} (${p.shape.join('x')})`,
    );
    lostCheck();
    dataOut.set(p.dtype === 'uint8' ? result : new Int8Array(result.buffer, result.byteOffset, result.byteLength));
    return { data: dataOut, shape: [...p.shape], dtype: p.dtype };
  } catch (e) {
    throw await lostOr(target, p, e);
  } finally {
    for (const t of temps) t.destroy();
  }
}

/**
 * Runs a prepared plan between GPU buffers, with no read-back: each input is a CPU array or a GPU buffer
 * whose element (i0..i3) lies at byte sum(i·stride) of the plan's a/bStrides4; `out` (STORAGE, at least
 * the count rounded up to 4 bytes) receives the result dense in C order. Resolves once the submission
 * is known valid. The caller holds the device.
 */
export async function elementwiseBetweenBuffers(
  target: ElementwiseGpuTarget,
  p: ElementwisePlan,
  inputs: [ElementwiseSource, ElementwiseSource],
  out: GPUBuffer,
): Promise<void> {
  if (target.lostReason !== null) throw DeviceLostError.of(target.lostReason);
  if (p.count === 0) return;
  const temps: GPUBuffer[] = [];
  try {
    await runInErrorScope(
      target.device,
      async () => target.device.queue.submit([(await encodeElementwise(target, p, inputs, out, temps)).finish()]),
      `elementwise ${p.op} (${p.shape.join('x')})`,
    );
    if (target.lostReason !== null) throw DeviceLostError.of(target.lostReason);
  } catch (e) {
    throw await lostOr(target, p, e);
  } finally {
    for (const t of temps) t.destroy();
  }
}
