// The subgroup-matrix GEMM kernel 'sgmat-64x64' (pack -> GEMM -> output): ./sgmat.wgsl on the int8
// tensor cores that Dawn exposes as chromium-experimental-subgroup-matrix, reading 'u8k4-r64' operands
// band by band like the dot4 kernels, with the shared epilogue. One source serves every int8 fragment
// shape: the configuration (./config.ts) is taken from the adapter when the pipeline is built (its best
// u8 -> u32 or i8 -> i32 fragment, its one subgroup size) and reaches the WGSL as generated constants.
//
// Where it is exercised: with Dawn's real builtins on lavapipe (Mesa >= 26, M8 N8 K8, subgroups of 8;
// tools/lavapipe.sh, test/lavapipe/), and through the emulated builtins of ./emulation.ts on SwiftShader
// at 16x16x32, 16x8x32 and 8x8x8 (test/gpu/sgmat.test.ts). Real hardware fragments (NVIDIA's 16x16x32)
// are checked on the device itself: the kernel declares `needsSelfTest`, so before a device first uses
// it the context runs the exactness self-test of src/scheduler/self-test.ts and, if it fails, disables
// the kernel for that device with a one-line warning; `qgemm verify` runs it over a larger suite.
// A split-K tiling (./config.ts splitK) runs as two passes instead (./split-k.ts): 'sgmat-64x64-sk'.
// The direct tilings load fragments straight from the packed operands in storage: the right ones ('-dr',
// ./sgmat-rhs-direct.wgsl), or both ('-dd', with ./sgmat-lhs-direct.wgsl: no staging in the k loop).
//
// The '-u4' variants ('sgmat-64x64-u4', 'sgmat-128x128-w4x2-k64-b2-u4', 'sgmat-64x64-sk-u4') read a 4-bit
// rhs stored two values per byte ('u4k8-r64', or '-r128' / '-r256' where the tiling has a side that
// wide) and unpack it into the same 8-bit staging (./sgmat-rhs-u4.wgsl in place of ./sgmat-rhs.wgsl):
// half the rhs bytes per k step, the same fragments, sums and epilogue, at every tiling of the family,
// split-K included.
//
// A convolution's lhs is gathered from its input by the tilings that stage their lhs
// (PreparedGemmKernel.patchLhs: ./sgmat-lhs-patches.wgsl with src/pack/patch-gather.wgsl in place of
// ./sgmat-lhs.wgsl), where the workgroup memory also holds the tile's row sums: no patch pack (one
// dispatch per layer; split-K: each slice's partial pass gathers its k range, then the reduce pass). That form is a pipeline of its own: the self-test's convolution layers run it before a
// device first uses the kernel, and `qgemm verify` checks it on its convolution layers.

import type { AdapterCaps } from '../../gpu/caps.ts';
import { getPipeline } from '../../gpu/pipelines.ts';
import { bandedKernel, encodeBanded, tileBindings } from '../banded.ts';
import { formatOf, PACK_FORMATS, type PackFormatId } from '../../pack/formats.ts';
import { patchGatherWgsl } from '../../pack/patches.ts';
import type { GpuGemmKernel, PreparedGemmKernel } from '../types.ts';
import { epilogueOverrides } from '../../epilogue/epilogue.ts';
import { epilogueLibrary } from '../../epilogue/source.ts';
import {
  bestConfig,
  configConstants,
  DEFAULT_TILING,
  isSplitK,
  REFLECTION_CONSTANTS,
  type SgmatConfig,
  SPLITK_TILING,
  type SgmatTiling,
  tilingId,
  tilingLayout,
  tilingProblem,
} from './config.ts';
import onePass from './sgmat-one-pass.wgsl?raw';
import bindings from './sgmat-bindings.wgsl?raw';
import enable from './sgmat-enable.wgsl?raw';
import rhsStaging from './sgmat-rhs.wgsl?raw';
import lhsStaged from './sgmat-lhs.wgsl?raw';
import lhsDirect from './sgmat-lhs-direct.wgsl?raw';
import lhsPatches from './sgmat-lhs-patches.wgsl?raw';
import rhsDirect from './sgmat-rhs-direct.wgsl?raw';
import rhsStagingU4 from './sgmat-rhs-u4.wgsl?raw';
import rightStaged from './sgmat-right.wgsl?raw';
import sgmat from './sgmat.wgsl?raw';
import { sourceForDevice } from './load-form.ts';
import { sgmatSplitKernel, splitForm } from './split-k.ts';

/** The bits of the rhs values a variant reads: 8 (one per byte) or 4 (two per byte, the '-u4' variants). */
export type SgmatRhsBits = 8 | 4;

/**
 * The kernel's full source for configuration c and tiling t: directives, generated constants, libraries,
 * declarations, the one-pass or the split-K form (./sgmat-one-pass.wgsl, ./sgmat-split.wgsl), the rhs
 * staging (8-bit rows, or nibble rows where rhsBits is 4) and the right fragments' loads from it
 * (./sgmat-right.wgsl), or, where t.rhsDirect, both replaced by loads from the packed rhs
 * (./sgmat-rhs-direct.wgsl), the lhs pieces and left fragments' loads (./sgmat-lhs.wgsl, or where
 * t.lhsDirect loads from the packed lhs, ./sgmat-lhs-direct.wgsl, or where `gather`, a convolution's
 * patches gathered from its input, ./sgmat-lhs-patches.wgsl), kernel.
 */
export function sgmatSource(c: SgmatConfig, t: SgmatTiling = DEFAULT_TILING, gather = false, rhsBits: SgmatRhsBits = 8): string {
  if (gather && t.lhsDirect) throw new Error(`${tilingId(t)}: only a tiling that stages its lhs gathers patches`);
  const rhs = t.rhsDirect ? [rhsDirect] : [rhsBits === 4 ? rhsStagingU4 : rhsStaging, rightStaged];
  const form = isSplitK(t) ? splitForm : onePass;
  const lhs = gather ? [patchGatherWgsl, lhsPatches] : [t.lhsDirect ? lhsDirect : lhsStaged];
  return [enable, configConstants(c, t), epilogueLibrary, tileBindings, bindings, form, ...rhs, ...lhs, sgmat].join('\n');
}

/** The source of the '-u4' variant: nibble rhs rows unpacked into the staging. */
export const sgmatSourceU4 = (c: SgmatConfig, t: SgmatTiling = DEFAULT_TILING, gather = false) => sgmatSource(c, t, gather, 4);
/** What the host code reflects: everything the reflection parser reads (no subgroup-matrix syntax). */
export const sgmatDeclarations = [REFLECTION_CONSTANTS, epilogueLibrary, tileBindings, bindings].join('\n');
/** The same for the form that gathers a convolution's lhs: its geometry and input bindings too. */
const sgmatPatchDeclarations = [sgmatDeclarations, patchGatherWgsl].join('\n');

/** A variant's source at configuration c and tiling t; `gather`: the form that gathers a convolution's lhs. */
export type SgmatSource = (c: SgmatConfig, t: SgmatTiling, gather?: boolean) => string;

/** Whether tiling t gathers a convolution's lhs on an adapter with `limits`: staged lhs, room for the row sums. */
function gathers(t: SgmatTiling, limits: AdapterCaps['limits']): boolean {
  return !t.lhsDirect && tilingLayout(t).workgroupBytes + t.tileM * 4 <= limits.maxComputeWorkgroupStorageSize;
}

/** Pipeline ids name the configuration: one source per configuration, one cache entry each. */
function configKey(c: SgmatConfig): string {
  return `${c.componentType}-${c.M}x${c.N}x${c.K}-sg${c.subgroupSize}`;
}

/** The pack format a tiling reads values of `bits` in: rows padded to its larger side. */
function tilingFormat(t: SgmatTiling, bits: SgmatRhsBits = 8): PackFormatId {
  const side = Math.max(t.tileM, t.tileN);
  return formatOf(bits, side > 128 ? 256 : side > 64 ? 128 : 64);
}

/** The configuration the kernel runs with on an adapter: `fixed` where given, else the adapter's best. */
type ConfigChoice = (caps: AdapterCaps) => SgmatConfig | null;

/**
 * A subgroup-matrix kernel: `id`, how its configuration is chosen, and how its source is made from a
 * configuration (the real one here; ./emulation.ts rewrites it). `rhsBits` 4: a rhs of at most 4 bits
 * read two values per byte, rows padded as the 8-bit lhs ('u4k8-r64', '-r128' or '-r256'; the source
 * must compose ./sgmat-rhs-u4.wgsl: sgmatSourceU4).
 */
export function sgmatVariant(
  id: string,
  choose: ConfigChoice,
  source: SgmatSource,
  needsSelfTest: boolean,
  tiling: SgmatTiling = DEFAULT_TILING,
  rhsBits: SgmatRhsBits = 8,
): GpuGemmKernel {
  if (rhsBits === 4 && tiling.rhsDirect) throw new Error(`${id}: direct rhs loads read 8-bit rhs rows only`);
  if (tiling.lhsDirect && !tiling.rhsDirect) throw new Error(`${id}: direct lhs loads are built only with direct rhs loads`);
  // A configuration the tiling cannot run (fragments per subgroup, invocations, workgroup memory) is none.
  const usable: ConfigChoice = (caps) => {
    const c = choose(caps);
    return c && !tilingProblem(c, tiling, caps.limits) ? c : null;
  };
  if (isSplitK(tiling)) {
    return sgmatSplitKernel({
      id,
      tiling,
      format: PACK_FORMATS[tilingFormat(tiling)],
      rhsFormat: PACK_FORMATS[tilingFormat(tiling, rhsBits)],
      rhsBits,
      usable,
      source: (c, gather) => source(c, tiling, gather),
      pipelineId: (c) => `${id}/${configKey(c)}`,
      gathers: (caps) => gathers(tiling, caps.limits),
      needsSelfTest,
    });
  }
  const base = bandedKernel({
    id,
    source: '',
    reflect: sgmatDeclarations,
    entryPoint: 'sgmat',
    overrides: {},
    tileM: tiling.tileM,
    tileN: tiling.tileN,
    format: tilingFormat(tiling),
    supports: (caps, shape) => usable(caps) !== null && (rhsBits === 8 || (shape.bitDepth?.rhs ?? 8) <= 4),
  });
  const format = PACK_FORMATS[base.packFormat];
  const rhsFormat = PACK_FORMATS[tilingFormat(tiling, rhsBits)];
  return {
    ...base,
    ...(rhsBits === 4 ? { rhsPackFormat: rhsFormat.id } : {}),
    prepare: async (device, caps, stageKinds) => {
      const c = usable(caps);
      if (!c) throw new Error(`${id}: no usable subgroup-matrix configuration on this adapter`);
      const pipeline = await getPipeline(device, {
        id: `${id}/${configKey(c)}`,
        source: await sourceForDevice(device, c, source(c, tiling)),
        entryPoint: 'sgmat',
        overrides: epilogueOverrides(stageKinds),
        reflect: [sgmatDeclarations, epilogueLibrary],
      });
      const patchLhs =
        gathers(tiling, caps.limits) &&
        (async (): Promise<PreparedGemmKernel> => {
          const p = await getPipeline(device, {
            id: `${id}/${configKey(c)}-patches`,
            source: await sourceForDevice(device, c, source(c, tiling, true)),
            entryPoint: 'sgmat',
            overrides: { ...epilogueOverrides(stageKinds), LHS_SUMS_IN_KERNEL: 1 },
            reflect: [sgmatPatchDeclarations, epilogueLibrary],
          });
          return { encode: (e) => encodeBanded(e, { pipeline: p, source: sgmatPatchDeclarations, lhsFormat: format, rhsFormat }) };
        });
      return {
        encode: (e) => encodeBanded(e, { pipeline, source: sgmatDeclarations, lhsFormat: format, rhsFormat }),
        ...(patchLhs ? { patchLhs } : {}),
      };
    },
    ...(needsSelfTest ? { needsSelfTest: true } : {}),
  };
}

export const SGMAT_ID = 'sgmat-64x64';
export const SGMAT_SPLITK_ID = 'sgmat-64x64-sk';
export type SgmatId = typeof SGMAT_ID | typeof SGMAT_SPLITK_ID;

/** The registry's kernel: the adapter's best configuration (./config.ts bestConfig), real builtins. */
export const sgmatKernel: GpuGemmKernel = sgmatVariant(SGMAT_ID, bestConfig, sgmatSource, true);
/** The registry's split-K kernel (./split-k.ts), self-tested on a device before its first use. */
export const sgmatSplitKKernel: GpuGemmKernel = sgmatVariant(SGMAT_SPLITK_ID, bestConfig, sgmatSource, true, SPLITK_TILING);

/**
 * The kernel at tiling t (the tuner's family, src/kernels/tuning.ts): the adapter's best fragment
 * configuration, real builtins, id from the tiling ('sgmat-64x64' for the default). Self-tested on the
 * device before its first use, as the registry's kernel is.
 */
export function sgmatTiledKernel(t: SgmatTiling): GpuGemmKernel {
  return sgmatVariant(tilingId(t), bestConfig, sgmatSource, true, t);
}

export const SGMAT_U4_ID = 'sgmat-64x64-u4';
export const SGMAT_SPLITK_U4_ID = 'sgmat-64x64-sk-u4';
export type SgmatU4Id = typeof SGMAT_U4_ID | typeof SGMAT_SPLITK_U4_ID;

/**
 * The '-u4' kernel at tiling t (default: the registry's 'sgmat-64x64-u4'; id: the tiling's, then '-u4'):
 * a rhs of at most 4 bits read two values per byte, the adapter's best configuration, real builtins,
 * self-tested on the device before its first use (over the self-test's 4-bit problems).
 */
export function sgmatU4Kernel(t: SgmatTiling = DEFAULT_TILING): GpuGemmKernel {
  return sgmatVariant(`${tilingId(t)}-u4`, bestConfig, sgmatSourceU4, true, t, 4);
}

/** The registry's split-K '-u4' kernel: the split-K tiling over a nibble rhs. */
export const sgmatSplitKU4Kernel: GpuGemmKernel = sgmatU4Kernel(SPLITK_TILING);
