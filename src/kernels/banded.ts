// What the GEMM kernels that read packed operands band by band share (pack -> GEMM -> output: dot4-tiled,
// dot4-wide, gemv, subgroup-matrix): their WGSL declarations (./tile.wgsl), the dot4 kernels' k-tile
// loop (./dot4-tile.wgsl), and one encoder: per dispatch, TileParams with the kernel's tile values and
// the two packed-operand bindings, beside the epilogue's resources, then the dispatch. The bands and
// dispatches themselves come from src/gpu/plan.ts planGemm; a kernel says its source and its tile.

import type { AdapterCaps } from '../gpu/caps.ts';
import { getPipeline, type Overrides } from '../gpu/pipelines.ts';
import { type GemmDispatch, type GemmShape, planGemm } from '../gpu/plan.ts';
import { namedEntries, uniformLayout } from '../gpu/reflect.ts';
import { PACK_FORMATS, type PackFormat, type PackFormatId, packedRowBytes } from '../pack/formats.ts';
import { epilogueEntries, epilogueOverrides } from '../epilogue/epilogue.ts';
import { epilogueLibrary } from '../epilogue/source.ts';
import dot4TileWgsl from './dot4-tile.wgsl?raw';
import tileWgsl from './tile.wgsl?raw';
import type { GemmEncoding, GpuGemmKernel } from './types.ts';

/** ./tile.wgsl: TileParams and the packed-operand bindings, declared once for the banded kernels. */
export const tileBindings = tileWgsl;
/** ./dot4-tile.wgsl: the k-tile loop of the dot4 kernels (tiled: the full depth; split-K: a slice). */
export const dot4TileLoop = dot4TileWgsl;

/** How one banded kernel is encoded: its pipeline, the WGSL reflected, its formats and tile values. */
interface BandedEncoding {
  pipeline: GPUComputePipeline;
  /** The WGSL that declares its bindings (the kernel's source, or its declarations). */
  source: string;
  lhsFormat: PackFormat;
  rhsFormat: PackFormat;
  /** TileParams.bandRows of dispatch d. Default: its live rows (rounded up to the tile). */
  bandRows?(d: GemmDispatch, shape: GemmShape): number;
}

/**
 * The one encoder of the kernels that declare ./tile.wgsl: per dispatch, TileParams with the kernel's
 * tile values and the two packed-operand bindings beside the epilogue's resources, then the dispatch.
 */
export function encodeBanded(e: GemmEncoding, b: BandedEncoding): void {
  const layout = uniformLayout(b.source, 'TileParams');
  const lhsRow = packedRowBytes(e.shape.K, b.lhsFormat);
  const rhsRow = packedRowBytes(e.shape.K, b.rhsFormat);
  const bindGroupLayout = b.pipeline.getBindGroupLayout(0);
  e.pass.setPipeline(b.pipeline);
  for (const d of e.dispatches) {
    const entries = [
      ...epilogueEntries(b.source, e.epilogue, e.operands.rowSums, e.operands.colSums, e.dst, d, e.uniforms),
      ...namedEntries(b.source, {
        tile: e.uniforms.alloc(layout, {
          depthWords: lhsRow / 4,
          bandM: d.m0,
          bandN: d.n0,
          bandRows: b.bandRows ? b.bandRows(d, e.shape) : d.liveRows,
          bandCols: d.liveCols,
          workgroupBase: d.base,
        }),
        lhsPacked: { buffer: e.operands.lhs, offset: d.m0 * lhsRow, size: d.rows * lhsRow },
        rhsPacked: { buffer: e.operands.rhs, offset: d.n0 * rhsRow, size: d.cols * rhsRow },
      }),
    ];
    e.pass.setBindGroup(0, e.device.createBindGroup({ layout: bindGroupLayout, entries }));
    e.pass.dispatchWorkgroups(d.x, d.y);
  }
}

/** What a banded kernel is made of. */
interface BandedKernelSpec {
  id: string;
  source: string;
  /** The WGSL to reflect layouts and bindings from, when the parser cannot read `source`. Default: source. */
  reflect?: string;
  entryPoint: string;
  overrides: Overrides;
  /**
   * Overrides that replace some of `overrides` where compiling is slow (AdapterCaps.slowCompiler: a software
   * adapter, where a pipeline's compile time, not its speed, is what a user waits for; docs/gpu.md).
   */
  slowCompilerOverrides?: Overrides;
  /** The dst block one workgroup (or tile index) computes. */
  tileM: number;
  tileN: number;
  supports: GpuGemmKernel['supports'];
  /** The pack format it reads (its row alignment must be a multiple of the tiles). Default 'u8k4-r64'. */
  format?: PackFormatId;
}

/** A GEMM kernel of the registry that reads 'u8k4-*' operands band by band (see encodeBanded). */
export function bandedKernel(spec: BandedKernelSpec): GpuGemmKernel {
  const format = PACK_FORMATS[spec.format ?? 'u8k4-r64'];
  return {
    id: spec.id,
    backend: 'webgpu',
    packFormat: format.id,
    supports: spec.supports,
    plan: (shape, limits) => planGemm(shape, format, spec.tileM, spec.tileN, limits),
    prepare: async (device: GPUDevice, caps: AdapterCaps, stageKinds: number) => {
      const pipeline = await getPipeline(device, {
        id: spec.id,
        source: spec.source,
        entryPoint: spec.entryPoint,
        overrides: { ...spec.overrides, ...(caps.slowCompiler ? spec.slowCompilerOverrides : {}), ...epilogueOverrides(stageKinds) },
        reflect: [spec.reflect ?? spec.source, epilogueLibrary],
      });
      return { encode: (e) => encodeBanded(e, { pipeline, source: spec.reflect ?? spec.source, lhsFormat: format, rhsFormat: format }) };
    },
  };
}
