// The host side of the shared epilogue (pack -> gemm -> OUTPUT, ./epilogue.wgsl): the per-call values
// of its EpilogueParams uniform (dst layout, zero points, stage count, less-than-8-bit fractions) and
// the resources it binds, by name. Every GEMM kernel binds these beside its own resources, so the
// epilogue's layout lives here and in its WGSL only.

import type { Overrides } from '../gpu/pipelines.ts';
import type { GemmDispatch } from '../gpu/plan.ts';
import { namedEntries, uniformLayout } from '../gpu/reflect.ts';
import type { UniformSlab } from '../gpu/uniforms.ts';
import { unpackFractions } from '../quant/lowbit.ts';
import type { NormalizedProblem } from '../problem/problem.ts';
import { DST_TYPE_CODE } from '../gpu/codes.ts';
import { epilogueLibrary } from './source.ts';
import type { EncodedStages } from './stages.ts';

/**
 * The epilogue's pipeline constants: STAGE_KINDS, the ops (one bit per STAGE_OP code, EncodedStages.kinds)
 * that the output programs run through this pipeline may hold. The compiler drops the other ops' code, so
 * a kernel compiles in a fraction of the time of the whole interpreter; a pipeline serves every program
 * whose kinds are among its own.
 */
export function epilogueOverrides(stageKinds: number): Overrides {
  return { STAGE_KINDS: stageKinds >>> 0 };
}

/** Every stage kind: the whole interpreter (STAGE_KINDS' default in epilogue.wgsl). */
export const ALL_STAGE_KINDS = 0xffffffff;

/** The epilogue's inputs for one GEMM call. */
export interface EpilogueCall {
  /** EpilogueParams values, all but dstBase (which is per band). */
  values: Record<string, number>;
  stages: GPUBuffer;
}

export function epilogueValues(p: NormalizedProblem, stages: EncodedStages, dstStride: number): Record<string, number> {
  const f = unpackFractions(p.bitDepth?.lhs ?? 8, p.bitDepth?.rhs ?? 8);
  return {
    M: p.M,
    N: p.N,
    K: p.K,
    dstStride,
    dstType: DST_TYPE_CODE[p.dstType],
    dstColMajor: p.dstOrder === 'col-major' ? 1 : 0,
    lhsZeroPoint: stages.lhsZeroPoint,
    lhsZeroPointOffset: stages.lhsZeroPointOffset,
    rhsZeroPoint: stages.rhsZeroPoint,
    rhsZeroPointOffset: stages.rhsZeroPointOffset,
    stageCount: stages.stageCount,
    xxIdentity: +f.xx.identity,
    xxIntQuotient: f.xx.intQuotient,
    xxScaledRemainingNumerator: f.xx.scaledRemainingNumerator,
    x1Identity: +f.x1.identity,
    x1IntQuotient: f.x1.intQuotient,
    x1ScaledRemainingNumerator: f.x1.scaledRemainingNumerator,
    onexIdentity: +f.onex.identity,
    onexIntQuotient: f.onex.intQuotient,
    onexScaledRemainingNumerator: f.onex.scaledRemainingNumerator,
  };
}

const layout = () => uniformLayout(epilogueLibrary, 'EpilogueParams');

/** The epilogue's bind group entries for dispatch d, by the names epilogue.wgsl declares. */
export function epilogueEntries(
  source: string,
  call: EpilogueCall,
  rowSums: GPUBuffer,
  colSums: GPUBuffer,
  dst: GPUBuffer,
  d: GemmDispatch,
  slab: UniformSlab,
): GPUBindGroupEntry[] {
  return namedEntries(source, {
    epilogue: slab.alloc(layout(), { ...call.values, dstBase: d.dstBase }),
    rowSums: { buffer: rowSums },
    colSums: { buffer: colSums },
    stages: { buffer: call.stages },
    dst: { buffer: dst, offset: d.dstOffset, size: d.dstSize },
  });
}
