// The one home of the GEMM kernel family and its one choice table: (adapter capability, shape class)
// -> kernel. Every kernel, GPU or CPU, is listed here, and this is the only code that chooses among
// them (ruy's path selection; onnxruntime's CanApply/Apply ladder). `force` (an option, or the env
// variable QGEMM_KERNEL for tests and the benchmark) runs one named kernel instead, or fails clearly
// when that kernel cannot run the case. The per-kernel tests loop over these lists.

import { InputError } from '../errors.ts';
import type { AdapterCaps } from '../gpu/caps.ts';
import type { GemmShape } from '../gpu/plan.ts';
import { formatServes, PACK_FORMATS, type PackFormatId } from '../pack/formats.ts';
import type { NormalizedProblem } from '../problem/problem.ts';
import { cpuJsKernel } from './cpu-js/kernel.ts';
import { CPU_WASM_RELAXED, CPU_WASM_SIMD } from './cpu-wasm/kernel.ts';
import { DOT4_TILED_ID, type Dot4TiledId, dot4TiledKernel } from './dot4-tiled/kernel.ts';
import { DOT4_WIDE_ID, type Dot4WideId, dot4WideKernel } from './dot4-wide/kernel.ts';
import { GEMV_ID, type GemvId, gemvKernel } from './gemv/kernel.ts';
import {
  SGMAT_ID,
  SGMAT_SPLITK_ID,
  SGMAT_SPLITK_U4_ID,
  SGMAT_U4_ID,
  type SgmatId,
  type SgmatU4Id,
  sgmatKernel,
  sgmatSplitKKernel,
  sgmatSplitKU4Kernel,
  sgmatU4Kernel,
} from './sgmat/kernel.ts';
import { prefersSgmatSplitK } from './sgmat/split-k.ts';
import { SPLITK_ID, type SplitKId, splitKKernel } from './splitk/kernel.ts';
import { prefersSplitK } from './splitk/partition.ts';
import { type CpuCaps, type CpuGemmKernel, type GpuGemmKernel, kernelFormats } from './types.ts';
import { brief } from '../problem/echo.ts';
import { processEnv } from '../runtime.ts';

/** The id of every GPU kernel, each exported by its kernel's module. */
type GpuKernelId = SgmatId | SgmatU4Id | Dot4WideId | Dot4TiledId | GemvId | SplitKId;

export const GPU_KERNELS: readonly GpuGemmKernel[] = [
  sgmatKernel,
  sgmatSplitKKernel,
  dot4WideKernel('native'),
  dot4TiledKernel(64, 'native'),
  dot4TiledKernel(32, 'native'),
  gemvKernel({ reduce: 'subgroup', rhsBits: 8, dot4: 'native' }),
  gemvKernel({ reduce: 'workgroup', rhsBits: 8, dot4: 'native' }),
  splitKKernel(8),
  // 4-bit rhs stored two values per byte ('u4k8-r*'): the tensor cores where tiles pay, split-K for any M.
  sgmatU4Kernel(),
  sgmatSplitKU4Kernel,
  splitKKernel(4),
  gemvKernel({ reduce: 'subgroup', rhsBits: 4, dot4: 'native' }),
  gemvKernel({ reduce: 'workgroup', rhsBits: 4, dot4: 'native' }),
  dot4WideKernel('emulated'),
  dot4TiledKernel(64, 'emulated'),
  dot4TiledKernel(32, 'emulated'),
  gemvKernel({ reduce: 'workgroup', rhsBits: 8, dot4: 'emulated' }),
];

/**
 * Fastest first: relaxed-SIMD WebAssembly where it is proven exact, the exact 16-bit WebAssembly SIMD
 * kernel, then JavaScript (everywhere). The WebAssembly kernels run on worker threads where there is
 * a shared memory (src/kernels/cpu-wasm/).
 */
export const CPU_KERNELS: readonly CpuGemmKernel[] = [CPU_WASM_RELAXED, CPU_WASM_SIMD, cpuJsKernel];

interface SelectOptions {
  /** Run this kernel (an id from GPU_KERNELS or CPU_KERNELS). Default: env QGEMM_KERNEL, else the table's choice. */
  force?: string;
  /** The pack format of an operand that is already packed: only kernels reading it qualify. */
  packFormat?: PackFormatId;
  /** The same, per side (a prepacked lhs, a prepacked rhs). */
  lhsPackFormat?: PackFormatId;
  rhsPackFormat?: PackFormatId;
  /** Kernels disabled on this device (a failed self-test): never chosen, even when forced. */
  disabled?: ReadonlySet<string>;
  /** Test hook: choose among these instead of GPU_KERNELS. */
  kernels?: readonly GpuGemmKernel[];
  /** A tuning table's choice (./tuning.ts): taken before the rules where it fits; its kernels can be forced. */
  tuned?: TunedChoice;
}

/** What the registry needs of a tuning table: its kernel for a shape, and every kernel it names. */
export interface TunedChoice {
  kernelFor(shape: GemmShape): GpuGemmKernel | null;
  readonly kernels: readonly GpuGemmKernel[];
}

/** The kernel QGEMM_KERNEL forces where no `kernel` option is given (undefined where it is unset). */
export function forcedKernelFromEnv(): string | undefined {
  return processEnv()?.QGEMM_KERNEL || undefined;
}

/**
 * The kernel `id` of `list` that passes `ok`; null for a kernel of the other backend. An InputError names
 * `field`: the `kernel` option, or QGEMM_KERNEL where the id came from the environment.
 */
function forced<K extends { id: string }>(
  id: string,
  field: string,
  list: readonly K[],
  other: readonly { id: string }[],
  ok: (k: K) => boolean,
  what: string,
): K | null {
  const k = list.find((x) => x.id === id);
  if (!k) {
    if (other.some((x) => x.id === id)) return null; // a kernel of the other backend: not ours to force
    const ids = [...list, ...other].map((x) => x.id).join(', ');
    throw new InputError(field, `unknown kernel ${brief(id)}; known kernels: ${ids}`);
  }
  if (!ok(k)) throw new InputError(field, `kernel ${id} cannot run ${what}`);
  return k;
}

/** The field a forced kernel id came from. */
const forceField = (force: string | undefined) => (force === undefined ? 'QGEMM_KERNEL' : 'kernel');

/** The GPU kernel for `shape` on an adapter with `caps`. */
export function selectGemmKernel(caps: AdapterCaps, shape: GemmShape, opts: SelectOptions = {}): GpuGemmKernel {
  const fits = (k: GpuGemmKernel) => {
    const f = kernelFormats(k);
    return (
      k.supports(caps, shape) &&
      (!opts.packFormat || formatServes(opts.packFormat, f.lhs) || formatServes(opts.packFormat, f.rhs)) &&
      (!opts.lhsPackFormat || formatServes(opts.lhsPackFormat, f.lhs)) &&
      (!opts.rhsPackFormat || formatServes(opts.rhsPackFormat, f.rhs)) &&
      !opts.disabled?.has(k.id)
    );
  };
  const formats = [opts.packFormat, opts.lhsPackFormat, opts.rhsPackFormat].filter(Boolean).join(', ');
  const kernels = opts.kernels ?? GPU_KERNELS;
  const force = opts.force ?? forcedKernelFromEnv();
  if (force && !opts.disabled?.has(force)) {
    const k = forced(
      force,
      forceField(opts.force),
      [...kernels, ...(opts.tuned?.kernels ?? [])],
      CPU_KERNELS,
      fits,
      `${shape.M}x${shape.N}x${shape.K} on this adapter${formats ? ` with ${formats} operands` : ''}`,
    );
    if (k) return k;
  }
  const tuned = opts.tuned?.kernelFor(shape);
  if (tuned && fits(tuned)) return tuned;
  const dot4 = caps.dot4 ? 'native' : 'emulated';
  // The choice table. Skinny shapes are bound by reading rhs: gemv serves M <= 4 (one row group, so
  // rhs is read once; subgroupAdd reductions where the adapter has subgroups). M >= 64 (and N > 32) goes
  // to the tensor cores (subgroup matrices) where the adapter has them and they passed their self-test:
  // split-K ('sgmat-64x64-sk') where the 64x64 tile grid alone would leave the GPU idle (few tiles, large
  // K: ./sgmat/split-k.ts prefersSgmatSplitK), else one pass. Else, for 5 <= M <= 128,
  // split-K where the 32x32 tile grid alone would leave the GPU idle (few tiles, large K:
  // ./splitk/partition.ts prefersSplitK), else a 32-row tile reads rhs once for more rows; 64-tiles
  // where both sides are large, on the tensor cores (subgroup matrices) where the adapter has them and
  // they passed their self-test; without them, 128-tiles of 8 x 8 register blocks (dot4-128x128) where
  // both sides fill at least two such tiles (less padding than that would eat the gain of twice the
  // arithmetic per loaded byte), except where compiling is slow (a software adapter: it compiles in
  // over 2 s on SwiftShader and runs no faster there than dot4-64x64). 4-bit rhs (bitDepth.rhs <= 4,
  // or prepacked so) is read two values per byte: by the tensor cores' 'sgmat-64x64-u4' (nibbles
  // unpacked into its 8-bit staging) where an 8-bit rhs would get tiles (M, N > 32, not split-K) and the
  // adapter has them and they passed their self-test, and by its split-K form 'sgmat-64x64-sk-u4' where an
  // 8-bit rhs would get 'sgmat-64x64-sk' (M >= 64); else by the gemv and split-K kernels ('-u4') for
  // M <= 128, where the rhs bytes dominate; above, it is packed in 8-bit lanes for the tiled kernels,
  // unless it was prepacked in nibbles (split-K u4 runs any M). Without dot4 only the '-emulated' kernels run.
  const nibblePacked = opts.rhsPackFormat !== undefined && PACK_FORMATS[opts.rhsPackFormat].valueBits === 4; // 'u4k8-r*'
  const nibbles = caps.dot4 && (nibblePacked || (!opts.rhsPackFormat && (shape.bitDepth?.rhs ?? 8) <= 4));
  const rhsBits = nibbles ? 4 : 8;
  const small = shape.M <= 32 || shape.N <= 32;
  const table: [boolean, GpuKernelId][] = [
    [shape.M <= 4 && caps.subgroups, GEMV_ID.subgroup[rhsBits]],
    [shape.M <= 4, caps.dot4 ? GEMV_ID.workgroup[rhsBits] : GEMV_ID.emulated],
    [!nibbles && shape.M >= 64 && shape.N > 32 && prefersSgmatSplitK(caps, shape), SGMAT_SPLITK_ID],
    [!nibbles && shape.M >= 64 && shape.N > 32, SGMAT_ID],
    [nibbles && shape.M >= 64 && shape.N > 32 && prefersSgmatSplitK(caps, shape), SGMAT_SPLITK_U4_ID],
    [nibbles && !small && !prefersSplitK(caps, shape), SGMAT_U4_ID],
    [shape.M <= 128 && (nibbles || prefersSplitK(caps, shape)), SPLITK_ID[rhsBits]],
    [nibbles && nibblePacked, SPLITK_ID[4]],
    [small, DOT4_TILED_ID[32][dot4]],
    [true, SGMAT_ID],
    [shape.M >= 256 && shape.N >= 256 && !caps.slowCompiler, DOT4_WIDE_ID[dot4]],
    [true, DOT4_TILED_ID[64][dot4]],
  ];
  for (const [when, id] of table) {
    const k = kernels.find((x) => x.id === id);
    if (when && k && fits(k)) return k;
  }
  const any = kernels.find(fits);
  if (!any)
    throw new InputError('kernel', `no GPU kernel can run ${shape.M}x${shape.N}x${shape.K}${formats ? ` with ${formats} operands` : ''}`);
  return any;
}

/** The CPU kernel for problem `p` on a CPU with `caps`. */
export function selectCpuKernel(caps: CpuCaps, p: NormalizedProblem, opts: Pick<SelectOptions, 'force'> = {}): CpuGemmKernel {
  const force = opts.force ?? forcedKernelFromEnv();
  if (force) {
    const k = forced(
      force,
      forceField(opts.force),
      CPU_KERNELS,
      GPU_KERNELS,
      (x) => x.supports(caps, p),
      `${p.M}x${p.N}x${p.K} on this CPU`,
    );
    if (k) return k;
  }
  return CPU_KERNELS.find((k) => k.supports(caps, p)) ?? cpuJsKernel;
}

/** The ids of every kernel, by backend: what a `kernel` option or QGEMM_KERNEL may name. */
export function kernelIds(): { webgpu: string[]; cpu: string[] } {
  return { webgpu: GPU_KERNELS.map((k) => k.id), cpu: CPU_KERNELS.map((k) => k.id) };
}
