// The gemv kernels (pack -> GEMM -> output) for M <= 4 (matrix-vector products, LLM decoding): ./gemv.wgsl,
// up to 4 dst rows x 4 columns per workgroup, K split over THREADS invocations and reduced with
// subgroupAdd (./gemv-reduce-subgroup.wgsl, adapters with 'subgroups') or in workgroup memory
// (./gemv-reduce-workgroup.wgsl). Each (reduction, rhs format, dot4 variant) is one kernel of the
// registry, so the per-kernel tests run each: 'gemv', 'gemv-workgroup', 'gemv-emulated' (workgroup
// reduction, manual dot4) read 8-bit rhs ('u8k4-r64'); 'gemv-u4', 'gemv-u4-workgroup' read 4-bit rhs
// stored two per byte ('u4k8-r64'). They run any M (row groups of 4, rhs re-read per group); the
// registry gives them M <= 4, where rhs is read once.

import type { AdapterCaps } from '../../gpu/caps.ts';
import { getPipeline } from '../../gpu/pipelines.ts';
import { type GemmDispatch, type GemmShape, planGemm } from '../../gpu/plan.ts';
import { PACK_FORMATS } from '../../pack/formats.ts';
import { encodeBanded, tileBindings } from '../banded.ts';
import type { GpuGemmKernel } from '../types.ts';
import { epilogueOverrides } from '../../epilogue/epilogue.ts';
import { epilogueLibrary } from '../../epilogue/source.ts';
import { dot4Library } from '../../wgsl/source.ts';
import gemv from './gemv.wgsl?raw';
import reduceSubgroup from './gemv-reduce-subgroup.wgsl?raw';
import reduceWorkgroup from './gemv-reduce-workgroup.wgsl?raw';

const THREADS = 64;

interface GemvVariant {
  reduce: 'subgroup' | 'workgroup';
  rhsBits: 8 | 4;
  dot4: 'native' | 'emulated';
}

/** The WGSL of one variant: `enable subgroups;` must open the module, before every declaration. */
function gemvSource(v: GemvVariant): string {
  const subgroup = v.reduce === 'subgroup';
  return [
    subgroup ? 'enable subgroups;' : '',
    epilogueLibrary,
    dot4Library(v.dot4 === 'native'),
    subgroup ? reduceSubgroup : reduceWorkgroup,
    tileBindings,
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

export function gemvKernel(v: GemvVariant): GpuGemmKernel {
  const id = gemvId(v);
  const source = gemvSource(v);
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
    prepare: async (device: GPUDevice, _caps: AdapterCaps, stageKinds: number) => {
      const pipeline = await getPipeline(device, {
        id,
        source,
        entryPoint: 'gemv',
        overrides: { ...overrides, ...epilogueOverrides(stageKinds) },
        reflect: [source, epilogueLibrary],
      });
      // TileParams.bandRows: the band's dst rows (gemv runs row groups of 4 up to them).
      const bandRows = (d: GemmDispatch, shape: GemmShape) => Math.min(d.rows, shape.M - d.m0);
      return { encode: (e) => encodeBanded(e, { pipeline, source, lhsFormat, rhsFormat, bandRows }) };
    },
  };
}
