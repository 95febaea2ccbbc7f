// Split-K for the subgroup-matrix kernel (the GEMM stage of pack -> gemm -> output): the host side of its
// split-K tilings (./config.ts SgmatTiling.splitK; ids 'sgmat-64x64-sk', '...-s4'). Shapes with few dst
// tiles (decode and short prefill, M = 16..128 against N = 1024..11008) leave most of a large GPU idle:
// 128 x 1024 is 32 tiles of 64 x 64 for an H100's 132 SMs. Here K is cut into slices; the partial pass
// (./sgmat.wgsl with ./sgmat-split.wgsl) computes one tile over one slice per workgroup and writes raw
// sums to a per-call workspace, and the dot4 split-K kernels' reduce pass (../splitk/reduce.wgsl) sums the
// slices and runs the shared epilogue. Slices and bands are planned by ../splitk/partition.ts.
//
// Split-K, not stream-K: stream-K (each workgroup a contiguous range of k steps across tile boundaries)
// balances the last wave of large grids, but needs a fix-up pass or atomics per tile and, without
// knowing the GPU's size (WebGPU does not report it), cannot size its ranges to the SMs; and at the
// shapes that need it here the grid is far smaller than one wave, which split-K fills as well. Split-K
// reuses the reduce pass, its workspace layout and its partition planning as they are, and each
// slice is a plain run of the one kernel over fewer k steps, so the emulated sweep and the real
// builtins check the same text. The '-u4' variants ('sgmat-64x64-sk-u4') read a nibble rhs the same
// way (./sgmat-rhs-u4.wgsl): only its binding's row size differs.

import type { AdapterCaps } from '../../gpu/caps.ts';
import { getPipeline } from '../../gpu/pipelines.ts';
import { patchGatherBindings, patchGatherWgsl } from '../../pack/patches.ts';
import { namedEntries, uniformLayout } from '../../gpu/reflect.ts';
import { type PackFormat, packedRowBytes } from '../../pack/formats.ts';
import { epilogueLibrary } from '../../epilogue/source.ts';
import { tileBindings } from '../banded.ts';
import { encodeReduce, prepareReduce } from '../splitk/kernel.ts';
import {
  bandWorkspace,
  gatheredWorkspaceFits,
  planSplitK,
  type SplitKDispatch,
  type SplitKGeometry,
  splitKPartition,
  workgroupTarget,
  workspaceBytes,
} from '../splitk/partition.ts';
import type { GemmEncoding, GpuGemmKernel, PreparedGemmKernel } from '../types.ts';
import { roundUp, type GemmShape } from '../../gpu/plan.ts';
import { bestConfig, REFLECTION_CONSTANTS, type SgmatConfig, type SgmatTiling, SPLITK_TILING } from './config.ts';
import { sourceForDevice } from './load-form.ts';
import bindings from './sgmat-bindings.wgsl?raw';
import split from './sgmat-split.wgsl?raw';

/** What the host code reflects of the partial pass (the parser reads no subgroup-matrix syntax). */
export const splitDeclarations = [REFLECTION_CONSTANTS, epilogueLibrary, tileBindings, bindings, split].join('\n');
/** The same for the form that gathers a convolution's lhs: its geometry and input bindings too. */
const splitPatchDeclarations = [splitDeclarations, patchGatherWgsl].join('\n');
/** The partial pass's form of the kernel (composed by ./kernel.ts sgmatSource for a split-K tiling). */
export const splitForm = split;

/** The workspace traffic share of the subgroup-matrix kernels (../splitk/partition.ts: splits <= K / (4 rows)). */
const SGMAT_DIVISOR = 4;

/** The slicing geometry of tiling t: its tile, its k step, and its fixed slice count if any. */
export function splitGeometry(t: SgmatTiling): SplitKGeometry {
  const fixed = t.splitK && t.splitK > 1 ? { splits: t.splitK } : {};
  return { tileM: t.tileM, tileN: t.tileN, step: t.kStep, divisor: SGMAT_DIVISOR, ...fixed };
}

/** Workgroups that fill the GPU with this tiling's workgroups (subgroups x subgroup size invocations). */
export function sgmatWorkgroupTarget(caps: { isSoftware: boolean }, t: SgmatTiling, subgroupSize: number): number {
  return workgroupTarget(caps, t.sgRows * t.sgCols * subgroupSize);
}

/**
 * Whether the registry should run `shape` on 'sgmat-64x64-sk': the adapter runs the subgroup-matrix
 * kernel and its 64 x 64 tile grid alone would leave the GPU idle (2 slices or more; ../splitk/partition.ts).
 */
export function prefersSgmatSplitK(caps: AdapterCaps, shape: GemmShape): boolean {
  const c = bestConfig(caps);
  if (!c) return false;
  const t = SPLITK_TILING;
  const rows = roundUp(shape.M, t.tileM);
  const tiles = (rows / t.tileM) * Math.ceil(shape.N / t.tileN);
  const target = sgmatWorkgroupTarget(caps, t, c.subgroupSize);
  return splitKPartition(tiles, rows, roundUp(shape.K, 64), target, Infinity, splitGeometry(t)).splits >= 2;
}

interface SplitSpec {
  id: string;
  tiling: SgmatTiling;
  format: PackFormat;
  /** The format rhs is read in: `format`, or its 4-bit counterpart for the '-u4' variants (rhsBits 4). */
  rhsFormat: PackFormat;
  rhsBits: 4 | 8;
  /** The configuration on an adapter, or null where the tiling cannot run there. */
  usable: (caps: AdapterCaps) => SgmatConfig | null;
  /** The full source of the partial pass at a configuration (`gather`: its form gathering a convolution's lhs), and its pipeline cache id. */
  source: (c: SgmatConfig, gather?: boolean) => string;
  pipelineId: (c: SgmatConfig) => string;
  /** Whether the partial pass gathers a convolution's lhs on this adapter (room for the tile's row sums). */
  gathers: (caps: AdapterCaps) => boolean;
  needsSelfTest: boolean;
}

/** A split-K subgroup-matrix kernel: partial passes over K slices, then the shared reduce pass. */
export function sgmatSplitKernel(s: SplitSpec): GpuGemmKernel {
  const geometry = splitGeometry(s.tiling);
  return {
    id: s.id,
    backend: 'webgpu',
    packFormat: s.format.id,
    ...(s.rhsBits === 4 ? { rhsPackFormat: s.rhsFormat.id } : {}),
    supports: (caps, shape) => s.usable(caps) !== null && (s.rhsBits === 8 || (shape.bitDepth?.rhs ?? 8) <= 4),
    plan: (shape, limits, caps) => {
      const c = caps ? s.usable(caps) : null;
      const target = sgmatWorkgroupTarget(caps ?? { isSoftware: false }, s.tiling, c?.subgroupSize ?? 32);
      return planSplitK(shape, s.format, limits, target, geometry);
    },
    prepare: async (device, caps, stageKinds) => {
      const c = s.usable(caps);
      if (!c) throw new Error(`${s.id}: no usable subgroup-matrix configuration on this adapter`);
      const source = await sourceForDevice(device, c, s.source(c));
      const [partial, reduce] = await Promise.all([
        getPipeline(device, {
          id: s.pipelineId(c),
          source,
          entryPoint: 'sgmat',
          overrides: {},
          reflect: [splitDeclarations],
        }),
        prepareReduce(device, stageKinds),
      ]);
      // The form that gathers a convolution's lhs: its own partial and reduce pipelines, compiled on first use.
      const patchLhs =
        s.gathers(caps) &&
        (async (): Promise<PreparedGemmKernel> => {
          const gatherSource = await sourceForDevice(device, c, s.source(c, true));
          const [gathering, reduceSums] = await Promise.all([
            getPipeline(device, {
              id: `${s.pipelineId(c)}-patches`,
              source: gatherSource,
              entryPoint: 'sgmat',
              overrides: { LHS_SUMS_IN_KERNEL: 1 },
              reflect: [splitPatchDeclarations],
            }),
            prepareReduce(device, stageKinds, true),
          ]);
          return { encode: (e) => encodeSplit(e, gathering, reduceSums, s.format, s.rhsFormat, splitPatchDeclarations) };
        });
      return {
        encode: (e) => encodeSplit(e, partial, reduce, s.format, s.rhsFormat, splitDeclarations),
        ...(patchLhs ? { patchLhs, gathers: gatheredWorkspaceFits } : {}),
      };
    },
    ...(s.needsSelfTest ? { needsSelfTest: true } : {}),
  };
}

/** Records each band's partial dispatches (one tile and slice per workgroup), then its reduce dispatches. */
function encodeSplit(
  e: GemmEncoding,
  partial: GPUComputePipeline,
  reduce: GPUComputePipeline,
  format: PackFormat,
  rhsFormat: PackFormat,
  declarations: string,
): void {
  const dispatches = e.dispatches as SplitKDispatch[];
  const patches = e.operands.patchLhs;
  const workspace = e.workspace(workspaceBytes(dispatches, patches !== undefined));
  const row = packedRowBytes(e.shape.K, format);
  const rhsRow = packedRowBytes(e.shape.K, rhsFormat);
  const tileLayout = uniformLayout(declarations, 'TileParams');
  const sliceLayout = uniformLayout(declarations, 'SliceParams');
  // A gathered lhs: its input whole and its geometry, in place of the packed rows.
  const gathered = patches && patchGatherBindings(declarations, patches, e.uniforms);
  for (const d of dispatches) {
    if (d.phase === 'reduce') {
      encodeReduce(e, reduce, d, workspace);
      continue;
    }
    const { rowSumsAt, bytes } = bandWorkspace(d, patches !== undefined);
    const entries = namedEntries(declarations, {
      tile: e.uniforms.alloc(tileLayout, {
        depthWords: row / 4,
        bandM: d.m0,
        bandN: d.n0,
        bandRows: d.liveRows,
        bandCols: d.liveCols,
        workgroupBase: d.base,
      }),
      slicing: e.uniforms.alloc(sliceLayout, { splits: d.splits, stepsPerSplit: d.stepsPerSplit, rowSumsAt }),
      ...(gathered ?? { lhsPacked: { buffer: e.operands.lhs, offset: d.m0 * row, size: d.rows * row } }),
      rhsPacked: { buffer: e.operands.rhs, offset: d.n0 * rhsRow, size: d.cols * rhsRow },
      rowSums: { buffer: e.operands.rowSums },
      colSums: { buffer: e.operands.colSums },
      workspace: { buffer: workspace, offset: 0, size: bytes },
    });
    e.pass.setPipeline(partial);
    e.pass.setBindGroup(0, e.device.createBindGroup({ layout: partial.getBindGroupLayout(0), entries }));
    e.pass.dispatchWorkgroups(d.x, d.y);
  }
}
