// Encoding shared by the GEMM kernels that read 'u8k4-*' packed operands band by band (dot4-tiled,
// gemv, subgroup-matrix): per dispatch, the kernel's TileParams uniform and its two packed-operand
// bindings, beside the epilogue's resources, then the dispatch. The bands and dispatches themselves
// come from src/gpu/plan.ts planGemm; a kernel only says its source and its tile.

import type { AdapterCaps } from '../gpu/caps.ts';
import { getPipeline, type Overrides } from '../gpu/pipelines.ts';
import { planGemm, roundUp } from '../gpu/plan.ts';
import { namedEntries, uniformLayout } from '../gpu/reflect.ts';
import { PACK_FORMATS, type PackFormatId } from '../pack/formats.ts';
import { epilogueEntries } from '../epilogue/epilogue.ts';
import type { GemmEncoding, GpuGemmKernel } from './types.ts';

/**
 * Records e.dispatches of a kernel whose WGSL declares `tile: TileParams`, `lhsPacked`, `rhsPacked`;
 * `source` is the WGSL read by reflection (the kernel's source, or its declarations).
 */
function encodeBanded(e: GemmEncoding, pipeline: GPUComputePipeline, source: string): void {
  const layout = uniformLayout(source, 'TileParams');
  const rowBytes = roundUp(e.shape.K, PACK_FORMATS['u8k4-r64'].depthAlign);
  const bindGroupLayout = pipeline.getBindGroupLayout(0);
  e.pass.setPipeline(pipeline);
  for (const d of e.dispatches) {
    const entries = [
      ...epilogueEntries(source, e.epilogue, e.operands.rowSums, e.operands.colSums, e.dst, d, e.uniforms),
      ...namedEntries(source, {
        tile: e.uniforms.alloc(layout, {
          depthWords: rowBytes / 4,
          bandM: d.m0,
          bandN: d.n0,
          bandRows: d.liveRows,
          bandCols: d.liveCols,
          workgroupBase: d.base,
        }),
        lhsPacked: { buffer: e.operands.lhs, offset: d.m0 * rowBytes, size: d.rows * rowBytes },
        rhsPacked: { buffer: e.operands.rhs, offset: d.n0 * rowBytes, size: d.cols * rowBytes },
      }),
    ];
    e.pass.setBindGroup(0, e.device.createBindGroup({ layout: bindGroupLayout, entries }));
    e.pass.dispatchWorkgroups(d.x, d.y);
  }
}

/** What a banded kernel is made of. */
export interface BandedKernelSpec {
  id: string;
  source: string;
  /** The WGSL to reflect layouts and bindings from, when the parser cannot read `source`. Default: source. */
  reflect?: string;
  entryPoint: string;
  overrides: Overrides;
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
    prepare: async (device: GPUDevice, _caps: AdapterCaps) => {
      const pipeline = await getPipeline(device, {
        id: spec.id,
        source: spec.source,
        entryPoint: spec.entryPoint,
        overrides: spec.overrides,
      });
      return { encode: (e) => encodeBanded(e, pipeline, spec.reflect ?? spec.source) };
    },
  };
}
