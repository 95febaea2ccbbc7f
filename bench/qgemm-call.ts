// qgemm-call.ts: one qgemm call of the benchmark in its mode, timed, the same in Node
// (bench/impls/qgemm-node.ts, GEMM and conv rows) and in the Chrome page (bench/chrome-page.ts, injected
// by its source as __qgemmCall, so it is self-contained: nothing but its arguments at run time). `call`
// and `resident`: ctx.gemm, whose wall time includes the readback; `device`: ctx.gemmOnGpu, timed up to
// the result on the GPU, then read back (for verification) and released outside the timing.

import type { GemmCallOptions, GemmTiming, GpuContext, GpuGemmProblem } from '../src/scheduler/context.ts';
import type { GemmResult } from '../src/types.ts';
import type { Mode } from './impls/types.ts';

export async function qgemmCall(
  ctx: GpuContext,
  mode: Mode,
  problem: GpuGemmProblem,
  timing?: GemmTiming,
  opts: GemmCallOptions = {},
): Promise<{ result: GemmResult; wallMs: number }> {
  const t0 = performance.now();
  if (mode !== 'device') {
    const result = await ctx.gemm(problem, timing, opts);
    return { result, wallMs: performance.now() - t0 };
  }
  const dst = await ctx.gemmOnGpu(problem, timing);
  const wallMs = performance.now() - t0;
  try {
    return { result: await ctx.read(dst), wallMs };
  } finally {
    ctx.releaseMatrix(dst);
  }
}
