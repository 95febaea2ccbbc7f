// What the GEMM kernels that read packed operands band by band share (pack -> GEMM -> output: dot4-tiled,
// dot4-wide, gemv, subgroup-matrix): their WGSL declarations (./tile.wgsl), the dot4 kernels' k-tile
// loop (./dot4-tile.wgsl), its lhs staging (./dot4-lhs.wgsl, or ./dot4-lhs-patches.wgsl gathering a
// convolution's lhs) and register block (./dot4-block.wgsl), and one encoder: per dispatch,
// TileParams with the kernel's tile values and the two packed-operand bindings, beside the epilogue's
// resources, then the dispatch. The bands and dispatches themselves come from src/gpu/plan.ts planGemm;
// a kernel says its source and its tile.

import type { AdapterCaps } from '../gpu/caps.ts';
import { getPipeline, type Overrides } from '../gpu/pipelines.ts';
import { type GemmDispatch, type GemmShape, planGemm } from '../gpu/plan.ts';
import { namedEntries, uniformLayout } from '../gpu/reflect.ts';
import { PACK_FORMATS, type PackFormat, type PackFormatId, packedRowBytes } from '../pack/formats.ts';
import { patchGatherBindings, patchGatherWgsl } from '../pack/patches.ts';
import { epilogueEntries, epilogueOverrides } from '../epilogue/epilogue.ts';
import { epilogueLibrary, gemmKernelSource } from '../epilogue/source.ts';
import dot4BlockWgsl from './dot4-block.wgsl?raw';
import dot4LhsWgsl from './dot4-lhs.wgsl?raw';
import dot4LhsPatchesWgsl from './dot4-lhs-patches.wgsl?raw';
import dot4TileWgsl from './dot4-tile.wgsl?raw';
import tileWgsl from './tile.wgsl?raw';
import type { GemmEncoding, GpuGemmKernel, PreparedGemmKernel } from './types.ts';

/** ./tile.wgsl: TileParams and the packed-operand bindings, declared once for the banded kernels. */
export const tileBindings = tileWgsl;

/** Packed words per global load of the dot4 kernels: u32, vec2<u32> or vec4<u32>. */
export type VecWords = 1 | 2 | 4;
export const VEC_WORDS: readonly VecWords[] = [4, 2, 1];

/**
 * The generated constants of a dot4 kernel's global load width: VEC_WORDS, the type PackedLoad of one
 * load, packedWord (word j of a load) and packedLoadOf (a load made of the first VEC_WORDS words of a
 * vec4, for a gathered lhs). Rows are packed with K padded to 64 (16 words), so every
 * width divides a row and no load crosses one.
 */
const loadConstants: Record<VecWords, string> = {
  1: 'const VEC_WORDS: u32 = 1u;\nalias PackedLoad = u32;\nfn packedWord(v: PackedLoad, j: u32) -> u32 { return v; }\nfn packedLoadOf(v: vec4<u32>) -> PackedLoad { return v.x; }\n',
  2: 'const VEC_WORDS: u32 = 2u;\nalias PackedLoad = vec2<u32>;\nfn packedWord(v: PackedLoad, j: u32) -> u32 { return v[j]; }\nfn packedLoadOf(v: vec4<u32>) -> PackedLoad { return v.xy; }\n',
  4: 'const VEC_WORDS: u32 = 4u;\nalias PackedLoad = vec4<u32>;\nfn packedWord(v: PackedLoad, j: u32) -> u32 { return v[j]; }\nfn packedLoadOf(v: vec4<u32>) -> PackedLoad { return v; }\n',
};
export function dot4LoadConstants(vecWords: VecWords): string {
  return `// Generated: global loads of ${vecWords} packed word(s) (src/kernels/banded.ts).\n${loadConstants[vecWords]}`;
}

/** dst rows or columns per invocation of the dot4-tiled kernel: 4 or 8 (whole 4x4 quads). */
export type ThreadSide = 4 | 8;
export const THREAD_SIDES: readonly ThreadSide[] = [4, 8];
/**
 * The thread tile of the dot4 kernels: THREAD_M x THREAD_N dst elements per invocation as generated
 * constants (the register block's quads are chosen by constant conditions on them, so they are not
 * overrides), then the register block on them (./dot4-block.wgsl: Quad, dot4Quad, Block).
 */
export function dot4ThreadBlock(threadM: ThreadSide, threadN: ThreadSide): string {
  return `const THREAD_M: u32 = ${threadM}u;\nconst THREAD_N: u32 = ${threadN}u;\n${dot4BlockWgsl}`;
}

/** ./tile.wgsl with the packed operands declared as arrays of PackedLoad (see dot4LoadConstants). */
export const dot4TileBindings = tileWgsl.replaceAll('array<vec4<u32>>', 'array<PackedLoad>');
if (dot4TileBindings.split('array<PackedLoad>').length !== 3)
  throw new Error('tile.wgsl: expected lhsPacked and rhsPacked as array<vec4<u32>>');

/** The dot4 kernels' sources, per kernel, load width, thread tile and dot4 variant (made once each, on first use). */
const dot4Sources = new Map<string, string>();
/**
 * A dot4 kernel's whole source: its load and thread-tile constants, the bindings of dot4TileBindings, then
 * `pieces` (the kernel's own WGSL, e.g. the k-tile loop and its gemm.wgsl), with the epilogue library and
 * dot4 as native or emulated (gemmKernelSource). `kernel` names the kernel for the cache.
 */
export function dot4KernelSource(
  kernel: string,
  pieces: readonly string[],
  vecWords: VecWords,
  threadM: ThreadSide,
  threadN: ThreadSide,
  dot4: 'native' | 'emulated',
): string {
  const key = `${kernel}-${vecWords}-${threadM}x${threadN}-${dot4}`;
  let s = dot4Sources.get(key);
  if (!s) {
    const constants = dot4LoadConstants(vecWords) + dot4ThreadBlock(threadM, threadN);
    s = gemmKernelSource([constants, dot4TileBindings, ...pieces].join('\n'), dot4 === 'native');
    dot4Sources.set(key, s);
  }
  return s;
}

/**
 * ./dot4-tile.wgsl with its lhs staging, for a kernel that generates its own load constants: from packed
 * rows (./dot4-lhs.wgsl), or gathered from a convolution's input (./dot4-lhs-patches.wgsl with
 * src/pack/patch-gather.wgsl).
 */
export const dot4TileLoopBody = {
  packed: [dot4LhsWgsl, dot4TileWgsl].join('\n'),
  patches: [patchGatherWgsl, dot4LhsPatchesWgsl, dot4TileWgsl].join('\n'),
} as const;
const vec4Blocks = dot4LoadConstants(4) + dot4ThreadBlock(4, 4);
/**
 * ./dot4-tile.wgsl, the k-tile loop of the dot4 kernels (tiled: the full depth; split-K: a slice), with
 * vec4<u32> loads, 4x4 per invocation and the lhs staged from packed rows: the form that kernels
 * declaring their operands as arrays of vec4<u32> include (split-K). dot4TileLoopPatches: the same with
 * the lhs gathered from a convolution's input.
 */
export const dot4TileLoop = [vec4Blocks, dot4TileLoopBody.packed].join('\n');
export const dot4TileLoopPatches = [vec4Blocks, dot4TileLoopBody.patches].join('\n');

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
  // A gathered lhs (the patchLhs form): its input whole and its geometry, in place of the packed rows.
  const patches = e.operands.patchLhs;
  const gathered = patches && patchGatherBindings(b.source, patches, e.uniforms);
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
        ...(gathered ?? { lhsPacked: { buffer: e.operands.lhs, offset: d.m0 * lhsRow, size: d.rows * lhsRow } }),
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
  /**
   * The source of its form that gathers a convolution's lhs from the input and computes the lhs row sums
   * itself (PreparedGemmKernel.patchLhs), where it has one; compiled on first use.
   */
  patchSource?: string;
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
      const overrides = { ...spec.overrides, ...(caps.slowCompiler ? spec.slowCompilerOverrides : {}), ...epilogueOverrides(stageKinds) };
      const pipeline = await getPipeline(device, {
        id: spec.id,
        source: spec.source,
        entryPoint: spec.entryPoint,
        overrides,
        reflect: [spec.reflect ?? spec.source, epilogueLibrary],
      });
      const patchSource = spec.patchSource;
      const patchLhs =
        patchSource &&
        (async (): Promise<PreparedGemmKernel> => {
          const p = await getPipeline(device, {
            id: `${spec.id}-patches`,
            source: patchSource,
            entryPoint: spec.entryPoint,
            overrides: { ...overrides, LHS_SUMS_IN_KERNEL: 1 },
            reflect: [patchSource, epilogueLibrary],
          });
          return { encode: (e) => encodeBanded(e, { pipeline: p, source: patchSource, lhsFormat: format, rhsFormat: format }) };
        });
      return {
        encode: (e) => encodeBanded(e, { pipeline, source: spec.reflect ?? spec.source, lhsFormat: format, rhsFormat: format }),
        ...(patchLhs ? { patchLhs } : {}),
      };
    },
  };
}
