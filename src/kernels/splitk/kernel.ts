// The split-K kernels (pack -> GEMM -> output) for small-M GEMMs whose 32x32 tile grid alone would
// leave the GPU idle: ./splitk.wgsl computes raw sums of K slices into a per-call workspace, then
// ./reduce.wgsl sums the slices and runs the fused epilogue, both passes in the GEMM's one compute pass.
// How many slices, and when the registry picks these kernels: ./partition.ts. 'splitk-32x32' reads
// 8-bit rhs ('u8k4-r64'); 'splitk-u4-32x32' reads 4-bit rhs stored two per byte ('u4k8-r64') and is
// the registry's kernel for such a rhs at any M (one slice where splitting does not pay). The reduce
// pass (prepareReduce, encodeReduce) also serves the split-K variants of the subgroup-matrix kernel
// (../sgmat/split-k.ts), whose partial pass writes the same workspace layout. A convolution's lhs is
// gathered from its input by the partial pass itself (PreparedGemmKernel.patchLhs: ../dot4-lhs-patches.wgsl
// with src/pack/patch-gather.wgsl), which writes each slice's lhs row sums behind the raw sums; the
// reduce pass's gathered form (LHS_SUMS_IN_KERNEL) adds them up for the epilogue. No patch pack.

import type { AdapterCaps } from '../../gpu/caps.ts';
import { getPipeline } from '../../gpu/pipelines.ts';
import { packedRowBytes } from '../../pack/formats.ts';
import { namedEntries, uniformLayout } from '../../gpu/reflect.ts';
import { PACK_FORMATS } from '../../pack/formats.ts';
import { epilogueEntries, epilogueOverrides } from '../../epilogue/epilogue.ts';
import { patchGatherBindings } from '../../pack/patches.ts';
import { dot4TileLoop, dot4TileLoopPatches } from '../banded.ts';
import type { GemmEncoding, GpuGemmKernel } from '../types.ts';
import { epilogueLibrary } from '../../epilogue/source.ts';
import { dot4Library } from '../../wgsl/source.ts';
import {
  bandWorkspace,
  gatheredWorkspaceFits,
  planSplitK,
  REDUCE_THREADS,
  SPLITK_TILE,
  type SplitKDispatch,
  workgroupTarget,
  workspaceBytes,
} from './partition.ts';
import reduceWgsl from './reduce.wgsl?raw';
import splitk from './splitk.wgsl?raw';

const partialSource = [dot4Library(true), dot4TileLoop, splitk].join('\n');
/** The partial pass gathering a convolution's lhs. */
const patchSource = [dot4Library(true), dot4TileLoopPatches, splitk].join('\n');
const reduceSource = [epilogueLibrary, reduceWgsl].join('\n');

/**
 * The reduce pipeline (./reduce.wgsl), one per device and set of stage kinds, shared by every split-K
 * kernel; `gathered`: its form that takes the lhs row sums from the workspace (a gathered lhs).
 */
export function prepareReduce(device: GPUDevice, stageKinds: number, gathered = false): Promise<GPUComputePipeline> {
  return getPipeline(device, {
    id: gathered ? 'splitk-reduce-patches' : 'splitk-reduce',
    source: reduceSource,
    entryPoint: 'reduceSplits',
    overrides: { THREADS: REDUCE_THREADS, ...epilogueOverrides(stageKinds), ...(gathered ? { LHS_SUMS_IN_KERNEL: 1 } : {}) },
    reflect: [reduceSource, epilogueLibrary],
  });
}

/** Records reduce dispatch d: the sum of its band's slices in `workspace`, through the epilogue to dst. */
export function encodeReduce(e: GemmEncoding, reduce: GPUComputePipeline, d: SplitKDispatch, workspace: GPUBuffer): void {
  const { rowSumsAt, bytes } = bandWorkspace(d, e.operands.patchLhs !== undefined);
  const common = { bandRows: d.liveRows, bandCols: d.liveCols, workgroupBase: d.base, splits: d.splits, rowSumsAt };
  const entries = [
    ...epilogueEntries(reduceSource, e.epilogue, e.operands.rowSums, e.operands.colSums, e.dst, d, e.uniforms),
    ...namedEntries(reduceSource, {
      reduction: e.uniforms.alloc(uniformLayout(reduceSource, 'ReduceParams'), { ...common, bandM: d.m0, bandN: d.n0 }),
      workspace: { buffer: workspace, offset: 0, size: bytes },
    }),
  ];
  e.pass.setPipeline(reduce);
  e.pass.setBindGroup(0, e.device.createBindGroup({ layout: reduce.getBindGroupLayout(0), entries }));
  e.pass.dispatchWorkgroups(d.x, d.y);
}

/** The ids of these kernels, by the bits of the rhs they read. */
export const SPLITK_ID = { 8: 'splitk-32x32', 4: 'splitk-u4-32x32' } as const;
export type SplitKId = (typeof SPLITK_ID)[8 | 4];

export function splitKKernel(rhsBits: 8 | 4): GpuGemmKernel {
  const id = SPLITK_ID[rhsBits];
  const lhsFormat = PACK_FORMATS['u8k4-r64'];
  const rhsFormat = PACK_FORMATS[rhsBits === 4 ? 'u4k8-r64' : 'u8k4-r64'];
  const partialOverrides = { TILE_M: SPLITK_TILE, TILE_N: SPLITK_TILE, TILE_KW: 16, RHS_NIBBLES: rhsBits === 4 ? 1 : 0 };
  return {
    id,
    backend: 'webgpu',
    packFormat: lhsFormat.id,
    rhsPackFormat: rhsFormat.id,
    supports: (caps, shape) => caps.dot4 && (rhsBits === 8 || (shape.bitDepth?.rhs ?? 8) <= 4),
    // Bands sized with the lhs rows, the larger of the two packed rows.
    plan: (shape, limits, caps) => planSplitK(shape, lhsFormat, limits, workgroupTarget(caps ?? { isSoftware: false })),
    prepare: async (device: GPUDevice, _caps: AdapterCaps, stageKinds: number) => {
      const [partial, reduce] = await Promise.all([
        getPipeline(device, { id, source: partialSource, entryPoint: 'partial', overrides: partialOverrides, reflect: [partialSource] }),
        prepareReduce(device, stageKinds),
      ]);
      // The form that gathers a convolution's lhs: its own partial and reduce pipelines, compiled on first use.
      const patchLhs = async () => {
        const [gathering, reduceSums] = await Promise.all([
          getPipeline(device, {
            id: `${id}-patches`,
            source: patchSource,
            entryPoint: 'partial',
            overrides: partialOverrides,
            reflect: [patchSource],
          }),
          prepareReduce(device, stageKinds, true),
        ]);
        return { encode: (e: GemmEncoding) => encodeSplitK(e, gathering, reduceSums, patchSource) };
      };
      return { encode: (e) => encodeSplitK(e, partial, reduce, partialSource), patchLhs, gathers: gatheredWorkspaceFits };
    },
  };

  /** Records the partial and reduce dispatches in plan order (each band's slices, then their sum). */
  function encodeSplitK(e: GemmEncoding, partial: GPUComputePipeline, reduce: GPUComputePipeline, source: string): void {
    const dispatches = e.dispatches as SplitKDispatch[];
    const patches = e.operands.patchLhs;
    const workspace = e.workspace(workspaceBytes(dispatches, patches !== undefined));
    // A gathered lhs: its input whole and its geometry, in place of the packed rows.
    const gathered = patches && patchGatherBindings(source, patches, e.uniforms);
    const lhsRow = packedRowBytes(e.shape.K, lhsFormat);
    const rhsRow = packedRowBytes(e.shape.K, rhsFormat);
    const splitLayout = uniformLayout(source, 'SplitParams');
    for (const d of dispatches) {
      if (d.phase === 'reduce') {
        encodeReduce(e, reduce, d, workspace);
        continue;
      }
      const { rowSumsAt, bytes } = bandWorkspace(d, patches !== undefined);
      const common = { bandRows: d.liveRows, bandCols: d.liveCols, workgroupBase: d.base, splits: d.splits, bandM: d.m0, rowSumsAt };
      const entries = namedEntries(source, {
        split: e.uniforms.alloc(splitLayout, { ...common, depthWords: lhsRow / 4, stepsPerSplit: d.stepsPerSplit }),
        ...(gathered ?? { lhsPacked: { buffer: e.operands.lhs, offset: d.m0 * lhsRow, size: d.rows * lhsRow } }),
        rhsPacked: { buffer: e.operands.rhs, offset: d.n0 * rhsRow, size: d.cols * rhsRow },
        workspace: { buffer: workspace, offset: 0, size: bytes },
      });
      e.pass.setPipeline(partial);
      e.pass.setBindGroup(0, e.device.createBindGroup({ layout: partial.getBindGroupLayout(0), entries }));
      e.pass.dispatchWorkgroups(d.x, d.y);
    }
  }
}
