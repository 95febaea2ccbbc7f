// The one home of the GEMM kernel family and its one choice table: (adapter capability, shape class)
// -> kernel. Every kernel, GPU or CPU, is listed here, and this is the only code that chooses among
// them (ruy's path selection; onnxruntime's CanApply/Apply ladder). `force` (an option, or the env
// variable QGEMM_KERNEL for tests and the benchmark) runs one named kernel instead, or fails clearly
// when that kernel cannot run the case. The per-kernel tests loop over these lists.

import { InputError } from '../errors.ts';
import type { AdapterCaps } from '../gpu/caps.ts';
import type { GemmShape } from '../gpu/plan.ts';
import type { PackFormatId } from '../pack/formats.ts';
import type { NormalizedProblem } from '../spec/problem.ts';
import { cpuJsKernel } from './cpu-js/kernel.ts';
import { CPU_WASM_RELAXED, CPU_WASM_SIMD } from './cpu-wasm/kernel.ts';
import { dot4TiledKernel } from './dot4-tiled/kernel.ts';
import { gemvKernel } from './gemv/kernel.ts';
import { sgmatKernel } from './sgmat/kernel.ts';
import type { CpuCaps, CpuGemmKernel, GpuGemmKernel } from './types.ts';

export const GPU_KERNELS: readonly GpuGemmKernel[] = [
  sgmatKernel,
  dot4TiledKernel(64, 'native'),
  dot4TiledKernel(32, 'native'),
  gemvKernel('native'),
  dot4TiledKernel(64, 'emulated'),
  dot4TiledKernel(32, 'emulated'),
  gemvKernel('emulated'),
];

/**
 * Fastest first: relaxed-SIMD WebAssembly where it is proven exact, the exact 16-bit WebAssembly SIMD
 * kernel, then JavaScript (everywhere). The WebAssembly kernels run on worker threads where there is
 * a shared memory (src/kernels/cpu-wasm/).
 */
export const CPU_KERNELS: readonly CpuGemmKernel[] = [CPU_WASM_RELAXED, CPU_WASM_SIMD, cpuJsKernel];

export interface SelectOptions {
  /** Run this kernel (an id from GPU_KERNELS or CPU_KERNELS). Default: env QGEMM_KERNEL, else the table's choice. */
  force?: string;
  /** The pack format of an operand that is already packed: only kernels reading it qualify. */
  packFormat?: PackFormatId;
  /** Kernels disabled on this device (a failed self-test): never chosen, even when forced. */
  disabled?: ReadonlySet<string>;
  /** Test hook: choose among these instead of GPU_KERNELS. */
  kernels?: readonly GpuGemmKernel[];
}

/** QGEMM_KERNEL from the environment (Node), or undefined. */
export function forcedKernelFromEnv(): string | undefined {
  const env = (globalThis as { process?: { env?: Record<string, string | undefined> } }).process?.env;
  return env?.QGEMM_KERNEL || undefined;
}


function forced<K extends { id: string }>(
  id: string,
  list: readonly K[],
  other: readonly { id: string }[],
  ok: (k: K) => boolean,
  what: string,
): K | null {
  const k = list.find((x) => x.id === id);
  if (!k) {
    if (other.some((x) => x.id === id)) return null; // a kernel of the other backend: not ours to force
    const ids = [...list, ...other].map((x) => x.id).join(', ');
    throw new InputError('kernel', `unknown kernel ${JSON.stringify(id)}; known kernels: ${ids}`);
  }
  if (!ok(k)) throw new InputError('kernel', `kernel ${id} cannot run ${what}`);
  return k;
}

/** The GPU kernel for `shape` on an adapter with `caps`. */
export function selectGemmKernel(caps: AdapterCaps, shape: GemmShape, opts: SelectOptions = {}): GpuGemmKernel {
  const fits = (k: GpuGemmKernel) => k.supports(caps, shape) && (!opts.packFormat || k.packFormat === opts.packFormat) && !opts.disabled?.has(k.id);
  const kernels = opts.kernels ?? GPU_KERNELS;
  const force = opts.force ?? forcedKernelFromEnv();
  if (force && !opts.disabled?.has(force)) {
    const k = forced(
      force,
      kernels,
      CPU_KERNELS,
      fits,
      `${shape.M}x${shape.N}x${shape.K} on this adapter${opts.packFormat ? ` with ${opts.packFormat} operands` : ''}`,
    );
    if (k) return k;
  }
  const suffix = caps.dot4 ? '' : '-emulated';
  // The choice table. gemv serves M <= 4 (one row group, so rhs is read once); from M = 5 a 32-row
  // tile reads rhs once for more rows; 64-tiles where both sides are large, on the tensor cores
  // (subgroup matrices) where the adapter has them and they passed their self-test.
  const small = shape.M <= 32 || shape.N <= 32;
  const table: [boolean, string][] = [
    [shape.M <= 4, `gemv${suffix}`],
    [small, `dot4-32x32${suffix}`],
    [true, 'sgmat-64x64'],
    [true, `dot4-64x64${suffix}`],
  ];
  for (const [when, id] of table) {
    const k = kernels.find((x) => x.id === id);
    if (when && k && fits(k)) return k;
  }
  const any = kernels.find(fits);
  if (!any)
    throw new InputError(
      'kernel',
      `no GPU kernel can run ${shape.M}x${shape.N}x${shape.K}${opts.packFormat ? ` with ${opts.packFormat} operands` : ''}`,
    );
  return any;
}

/** The CPU kernel for problem `p` on a CPU with `caps`. */
export function selectCpuKernel(caps: CpuCaps, p: NormalizedProblem, opts: Pick<SelectOptions, 'force'> = {}): CpuGemmKernel {
  const force = opts.force ?? forcedKernelFromEnv();
  if (force) {
    const k = forced(force, CPU_KERNELS, GPU_KERNELS, (x) => x.supports(caps, p), `${p.M}x${p.N}x${p.K} on this CPU`);
    if (k) return k;
  }
  return CPU_KERNELS.find((k) => k.supports(caps, p)) ?? cpuJsKernel;
}

/** The ids of every kernel, by backend: what a `kernel` option or QGEMM_KERNEL may name. */
export function kernelIds(): { webgpu: string[]; cpu: string[] } {
  return { webgpu: GPU_KERNELS.map((k) => k.id), cpu: CPU_KERNELS.map((k) => k.id) };
}
