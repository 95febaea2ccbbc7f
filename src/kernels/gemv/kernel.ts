// The gemv kernels (pack -> GEMM -> output) for M <= 4 (matrix-vector products, LLM decoding): ./gemv.wgsl,
// up to 4 dst rows x 4 columns per workgroup, K split over THREADS invocations and reduced with
// subgroupAdd (./gemv-reduce-subgroup.wgsl, adapters with 'subgroups') or in workgroup memory
// (./gemv-reduce-workgroup.wgsl). Each (reduction, rhs format, dot4 variant) is one kernel of the
// registry, so the per-kernel tests run each: 'gemv', 'gemv-workgroup', 'gemv-emulated' (workgroup
// reduction, manual dot4) read 8-bit rhs ('u8k4-r64'); 'gemv-u4', 'gemv-u4-workgroup' read 4-bit rhs
// stored two per byte ('u4k8-r64'). They run any M (row groups of 4, rhs re-read per group); the
// registry gives them M <= 4, where rhs is read once. Each reads lhs packed (./gemv-lhs-packed.wgsl), or
// computes its row sums itself from an lhs nobody packed: the caller's unpacked 8-bit lhs in its rawLhs
// variant (./gemv-lhs-raw.wgsl), a convolution's patches gathered from its input in its patchLhs variant
// (./gemv-lhs-patches.wgsl with src/pack/patch-gather.wgsl); src/scheduler/gemm.ts then skips the lhs
// pack pass. Where compiling is slow (a software adapter) neither variant is offered: there every
// workgroup's rebuild of the lhs words runs at CPU speed, slower than the one pack dispatch it saves.

import type { AdapterCaps } from '../../gpu/caps.ts';
import { getPipeline } from '../../gpu/pipelines.ts';
import { type GemmDispatch, type GemmShape, planGemm } from '../../gpu/plan.ts';
import { PACK_FORMATS, type PackFormat, packedRowBytes } from '../../pack/formats.ts';
import { namedEntries, uniformLayout } from '../../gpu/reflect.ts';
import { encodeBanded, tileBindings } from '../banded.ts';
import type { GemmEncoding, GpuGemmKernel, PreparedGemmKernel } from '../types.ts';
import { epilogueEntries, epilogueOverrides } from '../../epilogue/epilogue.ts';
import { epilogueLibrary } from '../../epilogue/source.ts';
import { patchGatherWgsl } from '../../pack/patches.ts';
import { dot4Library } from '../../wgsl/source.ts';
import gemv from './gemv.wgsl?raw';
import lhsPacked from './gemv-lhs-packed.wgsl?raw';
import lhsPatches from './gemv-lhs-patches.wgsl?raw';
import lhsRaw from './gemv-lhs-raw.wgsl?raw';
import reduceSubgroup from './gemv-reduce-subgroup.wgsl?raw';
import reduceWorkgroup from './gemv-reduce-workgroup.wgsl?raw';

const THREADS = 64;

interface GemvVariant {
  reduce: 'subgroup' | 'workgroup';
  rhsBits: 8 | 4;
  dot4: 'native' | 'emulated';
}

/** Where a variant's lhs chunks come from: the packed lhs, the caller's unpacked bytes, a convolution's input. */
type LhsSource = 'packed' | 'raw' | 'patches';
const LHS_WGSL: Record<LhsSource, string[]> = { packed: [lhsPacked], raw: [lhsRaw], patches: [patchGatherWgsl, lhsPatches] };

/** The WGSL of one variant: `enable subgroups;` must open the module, before every declaration. */
function gemvSource(v: GemvVariant, lhs: LhsSource): string {
  const subgroup = v.reduce === 'subgroup';
  return [
    subgroup ? 'enable subgroups;' : '',
    epilogueLibrary,
    dot4Library(v.dot4 === 'native'),
    subgroup ? reduceSubgroup : reduceWorkgroup,
    tileBindings,
    ...LHS_WGSL[lhs],
    gemv,
  ].join('\n');
}

/** The ids of these kernels: by reduction and rhs bits on dot4U8Packed; the one on the manual dot4. */
export const GEMV_ID = {
  subgroup: { 8: 'gemv', 4: 'gemv-u4' },
  workgroup: { 8: 'gemv-workgroup', 4: 'gemv-u4-workgroup' },
  emulated: 'gemv-emulated',
} as const;
export type GemvId = (typeof GEMV_ID)['subgroup' | 'workgroup'][8 | 4] | typeof GEMV_ID.emulated;

function gemvId(v: GemvVariant): GemvId {
  if (v.dot4 === 'emulated') {
    if (v.reduce !== 'workgroup' || v.rhsBits !== 8) throw new Error('internal: the emulated gemv reduces in workgroup memory, 8-bit rhs');
    return GEMV_ID.emulated;
  }
  return GEMV_ID[v.reduce][v.rhsBits];
}

/** TileParams.bandRows: the band's dst rows (gemv runs row groups of 4 up to them). */
const bandRows = (d: GemmDispatch, shape: GemmShape) => Math.min(d.rows, shape.M - d.m0);

/**
 * The rawLhs variant's encoder: as encodeBanded, but the lhs bound unpacked (LhsSource and lhsRaw, the
 * whole buffer: M <= 4 rows) and no packed lhs; the epilogue's rowSums binding, which this pipeline
 * never reads (LHS_SUMS_IN_KERNEL), is given the lhs buffer.
 */
function encodeRaw(e: GemmEncoding, pipeline: GPUComputePipeline, source: string, lhsFormat: PackFormat, rhsFormat: PackFormat): void {
  const raw = e.operands.rawLhs;
  if (!raw) throw new Error('internal: the rawLhs gemv needs PackedPair.rawLhs');
  const tileLayout = uniformLayout(source, 'TileParams');
  const lhsLayout = uniformLayout(source, 'LhsSource');
  const rhsRow = packedRowBytes(e.shape.K, rhsFormat);
  const bindGroupLayout = pipeline.getBindGroupLayout(0);
  const lhsSource = e.uniforms.alloc(lhsLayout, {
    depth: e.shape.K,
    outerStride: raw.outerStride,
    depthStride: raw.depthStride,
    signFlip: raw.signed ? 0x80 : 0,
  });
  e.pass.setPipeline(pipeline);
  for (const d of e.dispatches) {
    const entries = [
      ...epilogueEntries(source, e.epilogue, raw.buffer, e.operands.colSums, e.dst, d, e.uniforms),
      ...namedEntries(source, {
        tile: e.uniforms.alloc(tileLayout, {
          depthWords: packedRowBytes(e.shape.K, lhsFormat) / 4,
          bandM: d.m0,
          bandN: d.n0,
          bandRows: bandRows(d, e.shape),
          bandCols: d.liveCols,
          workgroupBase: d.base,
        }),
        rhsPacked: { buffer: e.operands.rhs, offset: d.n0 * rhsRow, size: d.cols * rhsRow },
        lhsSource,
        lhsRaw: { buffer: raw.buffer, size: Math.min(raw.buffer.size, Math.ceil(raw.bytes / 4) * 4) },
      }),
    ];
    e.pass.setBindGroup(0, e.device.createBindGroup({ layout: bindGroupLayout, entries }));
    e.pass.dispatchWorkgroups(d.x, d.y);
  }
}

export function gemvKernel(v: GemvVariant): GpuGemmKernel {
  const id = gemvId(v);
  const source = gemvSource(v, 'packed');
  const rawSource = gemvSource(v, 'raw');
  const patchSource = gemvSource(v, 'patches');
  const lhsFormat = PACK_FORMATS['u8k4-r64'];
  const rhsFormat = PACK_FORMATS[v.rhsBits === 4 ? 'u4k8-r64' : 'u8k4-r64'];
  const overrides = { THREADS, RHS_NIBBLES: v.rhsBits === 4 ? 1 : 0 };
  return {
    id,
    backend: 'webgpu',
    packFormat: lhsFormat.id,
    rhsPackFormat: rhsFormat.id,
    supports: (caps, shape) =>
      (v.dot4 === 'emulated' || caps.dot4) &&
      (v.reduce === 'workgroup' || caps.subgroups) &&
      (v.rhsBits === 8 || (shape.bitDepth?.rhs ?? 8) <= 4),
    // 4x4 dst blocks; bands sized with the lhs rows, the larger of the two packed rows.
    plan: (shape, limits) => planGemm(shape, lhsFormat, 4, 4, limits),
    prepare: async (device: GPUDevice, caps: AdapterCaps, stageKinds: number) => {
      const pipeline = await getPipeline(device, {
        id,
        source,
        entryPoint: 'gemv',
        overrides: { ...overrides, ...epilogueOverrides(stageKinds) },
        reflect: [source, epilogueLibrary],
      });
      // One pipeline per lhs layout (k contiguous in its storage or strided), compiled on first use.
      const rawLhs = async (kContiguous: boolean): Promise<PreparedGemmKernel> => {
        const p = await getPipeline(device, {
          id: `${id}-raw-lhs`,
          source: rawSource,
          entryPoint: 'gemv',
          overrides: { ...overrides, LHS_SUMS_IN_KERNEL: 1, LHS_CONTIGUOUS: kContiguous ? 1 : 0, ...epilogueOverrides(stageKinds) },
          reflect: [rawSource, epilogueLibrary],
        });
        return { encode: (e) => encodeRaw(e, p, rawSource, lhsFormat, rhsFormat) };
      };
      // A convolution's patches gathered from its input, compiled on first use.
      const patchLhs = async (): Promise<PreparedGemmKernel> => {
        const p = await getPipeline(device, {
          id: `${id}-patches`,
          source: patchSource,
          entryPoint: 'gemv',
          overrides: { ...overrides, LHS_SUMS_IN_KERNEL: 1, ...epilogueOverrides(stageKinds) },
          reflect: [patchSource, epilogueLibrary],
        });
        return { encode: (e) => encodeBanded(e, { pipeline: p, source: patchSource, lhsFormat, rhsFormat, bandRows }) };
      };
      // Where compiling is slow (a software adapter), neither: each costs a pipeline more per output
      // program, and the CPU emulation runs every workgroup's rebuild of the lhs words at CPU speed, slower
      // than the one pack dispatch it saves (bench/results/2026-11-27-swiftshader-decode-overhead-3.txt).
      return {
        encode: (e) => encodeBanded(e, { pipeline, source, lhsFormat, rhsFormat, bandRows }),
        ...(caps.slowCompiler ? {} : { rawLhs, patchLhs }),
      };
    },
  };
}
