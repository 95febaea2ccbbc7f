// The output pipeline on the CPU (pack -> gemm -> OUTPUT): each stage of src/types.ts applied to one
// int32 accumulator, in order, exactly as gemmlowp's internal/output.h, by the reference evaluation its
// module defines (src/problem/stages/). Shared by the naive reference and the fast CPU paths (they differ
// only in how the accumulators are computed); the GPU's fused output stage (src/epilogue/epilogue.wgsl)
// and the WebAssembly one are tested against it.

import { evaluateStage } from '../problem/stages/pipeline.ts';
import type { NormalizedProblem } from '../problem/problem.ts';

/** Applies p.pipeline to acc, the accumulator of dst element (m, n). Returns the int32 (or cast) value. */
export function applyOutputPipeline(p: NormalizedProblem, acc: number, m: number, n: number): number {
  let x = acc;
  for (let i = 0; i < p.pipeline.length; i++) x = evaluateStage(p, i, x, m, n);
  return x;
}
