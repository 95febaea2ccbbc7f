// Backend selection (the entry the CLI, the benchmark and `gemm()` share): 'cpu' runs the fast CPU
// path (src/reference/gemm.ts cpuGemm); 'webgpu' runs pack -> gemm -> output on a WebGPU device,
// software adapters included, and fails clearly without one; 'auto' uses a hardware adapter when there
// is one and the CPU otherwise (a software adapter is slower than the CPU path: see the README).
// One GpuContext per kind is kept and re-made after a device loss; a call that meets a loss is retried
// once on a fresh device, and 'auto' then falls back to the CPU with a warning.

import { DeviceLostError } from '../errors.ts';
import { isHardwareAdapterAvailable } from '../gpu/device.ts';
import { cpuGemm } from '../reference/gemm.ts';
import type { GemmProblem, GemmResult } from '../types.ts';
import { GpuContext, type GpuContextOptions } from './gpu.ts';

export type Backend = 'cpu' | 'webgpu' | 'auto';

export type Op = { op: 'gemm'; problem: GemmProblem };

export interface RunOptions extends GpuContextOptions {
  /** Called with a warning (CPU fallback after a device loss). Default: console.warn. */
  warn?: (message: string) => void;
}

const contexts = new Map<string, Promise<GpuContext>>();

/** The shared context for 'webgpu' (software allowed) or 'auto' (hardware only), re-made once lost. */
export async function sharedContext(allowSoftware: boolean, opts: GpuContextOptions = {}): Promise<GpuContext> {
  const key = allowSoftware ? 'any' : 'hardware';
  const existing = contexts.get(key);
  if (existing) {
    const ctx = await existing.catch(() => null);
    if (ctx && !ctx.lost) return ctx;
  }
  const created = GpuContext.create({ ...opts, allowSoftware });
  contexts.set(key, created);
  created.catch(() => contexts.delete(key));
  return created;
}

let hardware: Promise<boolean> | null = null;

export async function runOp(op: Op, backend: Backend, opts: RunOptions = {}): Promise<GemmResult & { backend: 'cpu' | 'webgpu' }> {
  const onCpu = () => ({ ...cpuGemm(op.problem), backend: 'cpu' as const });
  if (backend === 'cpu') return onCpu();
  const allowSoftware = backend === 'webgpu';
  if (!allowSoftware && !(await (hardware ??= isHardwareAdapterAvailable()))) return onCpu();
  for (let attempt = 0; ; attempt++) {
    try {
      const ctx = await sharedContext(allowSoftware, opts);
      return { ...(await ctx.gemm(op.problem)), backend: 'webgpu' };
    } catch (e) {
      if (!(e instanceof DeviceLostError)) throw e;
      if (attempt === 0) continue; // re-acquire a device and run again
      if (backend === 'auto') {
        (opts.warn ?? console.warn)(`qgemm: ${e.message}; falling back to the CPU`);
        return onCpu();
      }
      throw e;
    }
  }
}

/** What `qgemm info` prints: the adapter that --backend webgpu would use. */
export async function describeDevice(): Promise<unknown> {
  const ctx = await sharedContext(true);
  return { adapter: ctx.summary, dot4: ctx.dot4, limits: ctx.limits };
}
