// The adapter's own ceilings, measured in the same run on the same adapter, and the roofline
// of each qgemm row against them:
//   dot4Tops            a register-only dot4I8Packed kernel (16 independent chains per invocation);
//   copyGBs             a large buffer-to-buffer copy, bytes read + written per second;
//   readGBs             a compute kernel streaming reads over a buffer many times the size of any GPU's
//                       cache (1 GiB where the adapter binds it), bytes read per second: what a kernel
//                       reading its operands can reach (Dawn's copy stayed at 848 GB/s read + written on
//                       both an H100 and an H200, below what the gemv read);
//   subgroupMatrixTops  a register-only i8 subgroup-matrix multiply-accumulate loop, where the adapter
//                       offers 'chromium-experimental-subgroup-matrix' (Dawn instance toggle
//                       allow_unsafe_apis); null elsewhere.
// Each is timed by wall clock as the difference between a long and a short run of the same work (which
// cancels launch and submission), median of 3. They run on a Dawn instance of their own (same module,
// same Vulkan drivers as the qgemm rows), so that its toggles touch nothing else.

import { createRequire } from 'node:module';
import { openErrorScope } from '../src/gpu/scopes.ts';
import { loadForm, toLegacyForm } from '../src/kernels/sgmat/load-form.ts';

export interface Ceilings {
  dot4Tops: number | null;
  copyGBs: number | null;
  /** Absent in reports from before 2026-11-30. */
  readGBs?: number | null;
  subgroupMatrixTops: number | null;
  /** How each was measured or why it is null. */
  notes: string[];
}

interface DawnModule {
  create(flags: string[]): GPU;
  globals: Record<string, unknown>;
}

async function loadDawn(dawnPath?: string): Promise<DawnModule> {
  if (dawnPath) return createRequire(import.meta.url)(dawnPath) as DawnModule;
  return (await import(/* @vite-ignore */ 'webgpu')) as unknown as DawnModule;
}

/** The instance must outlive its adapter and devices (a collected instance crashes Dawn): keep it here. */
let instance: GPU | null = null;

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[xs.length >> 1];

/** Seconds per unit of work: grows `n` until the long run takes `targetMs`, then (t(4n) - t(n)) / 3n. */
async function secondsPerUnit(run: (n: number) => Promise<number>, start: number, targetMs: number, maxN: number): Promise<number> {
  let n = start;
  await run(n);
  while (n * 4 < maxN && (await run(n * 4)) < targetMs) n *= 4;
  const d: number[] = [];
  for (let i = 0; i < 3; i++) {
    const lo = await run(n);
    const hi = await run(n * 4);
    d.push((hi - lo) / (3 * n));
  }
  return Math.max(median(d), 1e-9) / 1000;
}

async function timed(device: GPUDevice, encode: (e: GPUCommandEncoder) => void): Promise<number> {
  const e = device.createCommandEncoder();
  encode(e);
  const t0 = performance.now();
  device.queue.submit([e.finish()]);
  await device.queue.onSubmittedWorkDone();
  return performance.now() - t0;
}

/**
 * A runner of `code` over `groups` workgroups. A kernel that does not compile here is an error, not a
 * ceiling: an invalid pipeline's dispatches do nothing, and timing them would give an absurd figure.
 */
async function computeRunner(device: GPUDevice, code: string, groups: number, outBytes: number, more: GPUBindGroupEntry[] = []) {
  const close = openErrorScope(device, 'the kernel does not compile here');
  const module = device.createShaderModule({ code });
  const pipeline = device.createComputePipeline({ layout: 'auto', compute: { module, entryPoint: 'main' } });
  await close();
  const out = device.createBuffer({ size: outBytes, usage: GPUBufferUsage.STORAGE });
  const params = device.createBuffer({ size: 16, usage: GPUBufferUsage.UNIFORM | GPUBufferUsage.COPY_DST });
  const entries: GPUBindGroupEntry[] = [{ binding: 0, resource: { buffer: out } }, { binding: 1, resource: { buffer: params } }, ...more];
  const bindGroup = device.createBindGroup({ layout: pipeline.getBindGroupLayout(0), entries });
  return (n: number) => {
    device.queue.writeBuffer(params, 0, new Uint32Array([n, 0x01020304, 7, 0]));
    return timed(device, (e) => {
      const pass = e.beginComputePass();
      pass.setPipeline(pipeline);
      pass.setBindGroup(0, bindGroup);
      pass.dispatchWorkgroups(groups);
      pass.end();
    });
  };
}

/**
 * Streaming reads: each invocation XORs READS_PER_STEP 16-byte words a grid stride apart per step, over
 * the whole buffer, `p.x` times; one word out per invocation keeps the loads live.
 */
const READS_PER_STEP = 4;
function readKernel(): string {
  const reads = Array.from({ length: READS_PER_STEP }, (_, r) => r);
  return `@group(0) @binding(0) var<storage, read_write> o: array<u32>;
@group(0) @binding(1) var<uniform> p: vec4u;
@group(0) @binding(2) var<storage, read> src: array<vec4u>;
@compute @workgroup_size(256) fn main(@builtin(global_invocation_id) g: vec3u, @builtin(num_workgroups) w: vec3u) {
  let total = arrayLength(&src);
  let stride = w.x * 256u;
  ${reads.map((r) => `var a${r} = vec4u(p.y + ${r}u);`).join('\n  ')}
  for (var n = 0u; n < p.x; n++) {
    for (var i = g.x; i < total; i += ${READS_PER_STEP}u * stride) {
      ${reads.map((r) => `a${r} ^= src[i + ${r}u * stride];`).join('\n      ')}
    }
    a0 += vec4u(n);
  }
  let a = ${reads.map((r) => `a${r}`).join(' ^ ')};
  o[g.x] = a.x ^ a.y ^ a.z ^ a.w;
}`;
}

const CHAINS = 16;
function dot4Kernel(): string {
  const chains = Array.from({ length: CHAINS }, (_, c) => c);
  return `@group(0) @binding(0) var<storage, read_write> o: array<i32>;
@group(0) @binding(1) var<uniform> p: vec4u;
@compute @workgroup_size(256) fn main(@builtin(global_invocation_id) g: vec3u) {
  let x = g.x * 2654435761u;
  var y = p.y;
  ${chains.map((c) => `var a${c} = i32(g.x) + ${c};`).join('\n  ')}
  for (var i = 0u; i < p.x; i++) {
    ${chains.map((c) => `a${c} += dot4I8Packed(x + ${c}u, y);`).join('\n    ')}
    y += 0x01010101u;
  }
  o[g.x] = ${chains.map((c) => `a${c}`).join(' ^ ')};
}`;
}

/**
 * i8 x i8 -> i32 subgroup-matrix loop: one fragment pair loaded, CH accumulator chains. The builtins' current
 * form (src/kernels/sgmat/load-form.ts: offset and stride in words of C; rewritten where Dawn lacks it).
 */
function subgroupMatrixKernel(M: number, N: number, K: number, CH: number, perGroup: number): string {
  const chains = Array.from({ length: CH }, (_, c) => c);
  return `enable subgroups;
enable chromium_experimental_subgroup_matrix;
diagnostic(off, chromium.subgroup_matrix_uniformity);
@group(0) @binding(0) var<storage, read_write> C: array<i32>;
@group(0) @binding(1) var<uniform> p: vec4u;
@compute @workgroup_size(128) fn main(@builtin(workgroup_id) wg: vec3u, @builtin(subgroup_id) sg: u32) {
  let a = subgroupMatrixLoad<subgroup_matrix_left<i8, ${K}, ${M}>, row_major>(&C, 0u, ${K / 4}u);
  let b = subgroupMatrixLoad<subgroup_matrix_right<i8, ${N}, ${K}>, col_major>(&C, ${(M * K) / 4}u, ${K / 4}u);
  ${chains.map((c) => `var c${c} = subgroup_matrix_result<i32, ${N}, ${M}>();`).join('\n  ')}
  for (var i = 0u; i < p.x; i++) {
    ${chains.map((c) => `c${c} = subgroupMatrixMultiplyAccumulate(a, b, c${c});`).join('\n    ')}
  }
  let base = (wg.x * ${perGroup}u + sg) * ${CH * M * N}u;
  ${chains.map((c) => `subgroupMatrixStore<row_major>(&C, base + ${c * M * N}u, c${c}, ${N}u);`).join('\n  ')}
}`;
}

interface MatrixConfig {
  M: number;
  N: number;
  K: number;
  componentType: string;
  resultComponentType: string;
}

export async function measureCeilings(opts: { dawnPath?: string; software: boolean; log?: (line: string) => void }): Promise<Ceilings> {
  const notes: string[] = [];
  const out: Ceilings = { dot4Tops: null, copyGBs: null, readGBs: null, subgroupMatrixTops: null, notes };
  const mod = await loadDawn(opts.dawnPath);
  instance ??= mod.create(['enable-dawn-features=allow_unsafe_apis']);
  const adapter = await instance.requestAdapter({ powerPreference: 'high-performance' });
  if (!adapter) {
    notes.push('no adapter on a fresh Dawn instance');
    return out;
  }
  const sgMatrix = adapter.features.has('chromium-experimental-subgroup-matrix' as GPUFeatureName);
  const features = (sgMatrix ? ['subgroups', 'chromium-experimental-subgroup-matrix'] : []) as GPUFeatureName[];
  const limits = adapter.limits;
  const device = await adapter.requestDevice({
    requiredFeatures: features,
    requiredLimits: { maxBufferSize: limits.maxBufferSize, maxStorageBufferBindingSize: limits.maxStorageBufferBindingSize },
  });
  const targetMs = opts.software ? 150 : 30;
  try {
    const groups = opts.software ? 8 : 132 * 64;
    const run = await computeRunner(device, dot4Kernel(), groups, groups * 256 * 4);
    const s = await secondsPerUnit(run, 4, targetMs, 1 << 22);
    out.dot4Tops = Number(((groups * 256 * CHAINS * 8) / s / 1e12).toPrecision(4));
    notes.push(`dot4Tops: ${groups} workgroups of 256 invocations, ${CHAINS} dot4I8Packed chains each (8 ops per dot4)`);
  } catch (e) {
    notes.push(`dot4Tops: ${(e as Error).message.split('\n')[0]}`);
  }
  try {
    const size = Math.min(opts.software ? 16 << 20 : 256 << 20, Math.floor(limits.maxBufferSize / 4) * 4);
    const src = device.createBuffer({ size, usage: GPUBufferUsage.COPY_SRC });
    const dst = device.createBuffer({ size, usage: GPUBufferUsage.COPY_DST });
    const run = (n: number) =>
      timed(device, (e) => {
        for (let i = 0; i < n; i++) e.copyBufferToBuffer(src, 0, dst, 0, size);
      });
    const s = await secondsPerUnit(run, 1, targetMs, 256);
    out.copyGBs = Number(((2 * size) / s / 1e9).toPrecision(4));
    notes.push(`copyGBs: copyBufferToBuffer of ${size >> 20} MiB, bytes read + written`);
    src.destroy();
    dst.destroy();
  } catch (e) {
    notes.push(`copyGBs: ${(e as Error).message.split('\n')[0]}`);
  }
  try {
    // A whole number of steps of every invocation: size a multiple of groups x 256 x READS_PER_STEP words.
    const groups = opts.software ? 8 : 132 * 16;
    const step = groups * 256 * READS_PER_STEP * 16;
    const most = Math.min(opts.software ? 16 << 20 : 1 << 30, limits.maxStorageBufferBindingSize, limits.maxBufferSize);
    const size = Math.floor(most / step) * step;
    if (size === 0) throw new Error(`the adapter binds at most ${most} bytes`);
    const src = device.createBuffer({ size, usage: GPUBufferUsage.STORAGE });
    const run = await computeRunner(device, readKernel(), groups, groups * 256 * 4, [{ binding: 2, resource: { buffer: src } }]);
    const s = await secondsPerUnit(run, 1, targetMs, 256);
    out.readGBs = Number((size / s / 1e9).toPrecision(4));
    notes.push(`readGBs: ${groups} workgroups of 256 invocations reading ${size >> 20} MiB in 16-byte words, bytes read`);
    src.destroy();
  } catch (e) {
    notes.push(`readGBs: ${(e as Error).message.split('\n')[0]}; the roofline's memory floor uses copyGBs`);
  }
  if (!sgMatrix) {
    notes.push("subgroupMatrixTops: null, the adapter does not offer 'chromium-experimental-subgroup-matrix'");
  } else {
    try {
      const configs = [...((adapter.info as unknown as { subgroupMatrixConfigs?: Iterable<MatrixConfig> }).subgroupMatrixConfigs ?? [])];
      const c = configs.filter((x) => x.componentType === 'i8' && x.resultComponentType === 'i32').sort((a, b) => b.M * b.N - a.M * a.N)[0];
      if (!c) throw new Error('no i8 -> i32 subgroup-matrix configuration');
      const perGroup = 128 / Math.max(1, (adapter.info as unknown as { subgroupMinSize?: number }).subgroupMinSize ?? 32);
      const CH = 8;
      const groups = 132 * 16;
      // In the builtins' form this Dawn takes (the kernel's probe, src/kernels/sgmat/load-form.ts).
      const subgroupSize = (adapter.info as unknown as { subgroupMinSize?: number }).subgroupMinSize ?? 32;
      const form = await loadForm(device, { componentType: 'i8', M: c.M, N: c.N, K: c.K, subgroupSize });
      const kernel = subgroupMatrixKernel(c.M, c.N, c.K, CH, perGroup);
      const run = await computeRunner(
        device,
        form === 'current' ? kernel : toLegacyForm(kernel),
        groups,
        Math.max(4096, groups * perGroup * CH * c.M * c.N * 4),
      );
      const s = await secondsPerUnit(run, 64, targetMs, 1 << 20);
      const subgroups = groups * (128 / ((adapter.info as unknown as { subgroupMaxSize?: number }).subgroupMaxSize ?? 32));
      out.subgroupMatrixTops = Number(((subgroups * CH * 2 * c.M * c.N * c.K) / s / 1e12).toPrecision(4));
      notes.push(`subgroupMatrixTops: i8 ${c.M}x${c.N}x${c.K} fragments, ${CH} chains per subgroup, ${groups} workgroups of 128`);
    } catch (e) {
      notes.push(`subgroupMatrixTops: ${(e as Error).message.split('\n')[0]}`);
    }
  }
  device.destroy();
  opts.log?.(
    `ceilings: dot4 ${out.dot4Tops} TOPS, copy ${out.copyGBs} GB/s, read ${out.readGBs} GB/s, subgroup matrix ${out.subgroupMatrixTops ?? 'n/a'} TOPS`,
  );
  return out;
}

/**
 * Bytes a GEMM must move at least: lhs and rhs read once, dst written once. `rhsBytes`: the weights as
 * stored, where they are not K*N bytes (4-bit weights: N packed rows of K nibbles).
 */
export const minBytes = (m: number, n: number, k: number, dstBytes: number, rhsBytes: number = k * n): number =>
  m * k + rhsBytes + m * n * dstBytes;

/** Which ceiling bounds a kernel: subgroup-matrix kernels the tensor-core one, the rest dot4. */
export function computeCeilingTops(kernel: string | null, c: Ceilings): number | null {
  if (kernel && /sgmat|subgroup-matrix|tensor/i.test(kernel)) return c.subgroupMatrixTops;
  return c.dot4Tops;
}

/** A row's roofline: the floor, the fraction of it reached, and the bytes its memory floor counts. */
export interface Roofline {
  floorMs: number;
  fraction: number;
  /** minBytes of the row: lhs + rhs (as stored, for 4-bit weights) + dst. */
  bytes: number;
}

/**
 * floorMs = max(2MNK / compute ceiling, minBytes / memory bandwidth); fraction = floorMs / gpuMedianMs.
 * The bandwidth is readGBs where it was measured (a kernel's reads), else copyGBs (reports from before
 * 2026-11-30). For a memory-bound shape (every small-M one) the fraction is the share of it reached on the
 * bytes that must move; above 1 where those bytes came from the GPU's cache (the bench re-reads one
 * operand set), not from memory.
 */
export function roofline(
  row: { m: number; n: number; k: number; gpuMedianMs: number | null; kernel: string | null },
  c: Ceilings,
  dstBytes: number,
  rhsBytes?: number,
): Roofline | null {
  const tops = computeCeilingTops(row.kernel, c);
  const bandwidth = c.readGBs ?? c.copyGBs;
  if (!row.gpuMedianMs || !tops || !bandwidth) return null;
  const bytes = minBytes(row.m, row.n, row.k, dstBytes, rhsBytes);
  const computeMs = ((2 * row.m * row.n * row.k) / (tops * 1e12)) * 1e3;
  const memoryMs = (bytes / (bandwidth * 1e9)) * 1e3;
  const floorMs = Math.max(computeMs, memoryMs);
  return { floorMs: Number(floorMs.toPrecision(4)), fraction: Number((floorMs / row.gpuMedianMs).toPrecision(4)), bytes };
}
