// Type-level checks of GemmProblem (src/types.ts), compiled by `tsc --noEmit` and never run: a pipeline
// written `as const`, or frozen, is a readonly array and type-checks as the runtime takes it.

import { cpuGemm, gemm, type GemmProblem, type OutputStage } from '../../src/index.ts';

export async function readonlyPipelines(): Promise<void> {
  const lhs = { data: new Uint8Array(4), rows: 2, cols: 2 };
  const rhs = { data: new Int8Array(4), rows: 2, cols: 2 };
  cpuGemm({ lhs, rhs, pipeline: [{ type: 'saturatingCast', to: 'uint8' }] as const });
  const frozen: readonly OutputStage[] = Object.freeze([{ type: 'clamp', min: 0, max: 9 }]);
  await gemm({ lhs, rhs, pipeline: frozen });
  const problem: GemmProblem = { lhs, rhs, pipeline: frozen };
  void problem;
}
