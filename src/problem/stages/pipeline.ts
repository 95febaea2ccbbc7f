// The output pipeline's stages, one module each (./stage.ts says what a stage defines), in one table,
// and the three things done with a pipeline: validation (normalizeProblem, src/problem/problem.ts),
// reference evaluation (src/reference/pipeline.ts) and lowering, lowerPipeline(), the one lowered
// output program that the GPU epilogue (src/epilogue/stages.ts) and the WebAssembly output stage
// (src/kernels/cpu-wasm/stages.ts) encode as their records. Adding a stage: docs/stages.md.

import type { OutputStage } from '../../types.ts';
import { bias } from './bias.ts';
import { clamp } from './clamp.ts';
import { quantizeDownInt32ByFixedPoint } from './quantize-down-int32-by-fixed-point.ts';
import { quantizeDownInt32ToUint8Scale } from './quantize-down-int32-to-uint8-scale.ts';
import { requantizeFloat32 } from './requantize-float32.ts';
import { saturatingCast } from './saturating-cast.ts';
import { scaleInt32ByFixedPointAndExponent } from './scale-int32-by-fixed-point-and-exponent.ts';
import type { LoweredStage, StageDefinition, StageOf, StageShape } from './stage.ts';
import { tanh } from './tanh.ts';
import { truncatingCast } from './truncating-cast.ts';

/** Every stage type of src/types.ts, by type. */
const STAGES: { [T in OutputStage['type']]: StageDefinition<StageOf<T>, unknown> } = {
  bias,
  quantizeDownInt32ToUint8Scale,
  quantizeDownInt32ByFixedPoint,
  scaleInt32ByFixedPointAndExponent,
  requantizeFloat32,
  clamp,
  saturatingCast,
  truncatingCast,
  tanh,
};

/**
 * The ops of the lowered output program: every stage's own, one code each, shared by every back end
 * (the WGSL STAGE_* constants are generated from it, src/gpu/codes.ts; the WebAssembly module compares
 * with it, src/kernels/cpu-wasm/gen/gen-output.ts).
 */
export const STAGE_OP = {
  ...bias.ops,
  ...quantizeDownInt32ToUint8Scale.ops,
  ...quantizeDownInt32ByFixedPoint.ops,
  ...scaleInt32ByFixedPointAndExponent.ops,
  ...requantizeFloat32.ops,
  ...clamp.ops,
  ...truncatingCast.ops,
  ...tanh.ops,
};
const codes = Object.values(STAGE_OP);
if (new Set(codes).size !== codes.length) throw new Error(`internal: two output stage ops share a code (${codes.join(', ')})`);

/** The stage types, in the order errors list them. */
export const STAGE_TYPES = Object.keys(STAGES) as OutputStage['type'][];

/** A stage's definition, or undefined for an unknown type. */
export function stageDefinition(type: unknown): StageDefinition<OutputStage, unknown> | undefined {
  return typeof type === 'string' && Object.hasOwn(STAGES, type)
    ? (STAGES[type as OutputStage['type']] as unknown as StageDefinition<OutputStage, unknown>)
    : undefined;
}

/** What normalizeProblem keeps of a pipeline: its stages and what each one's validation derived. */
interface PipelineOf {
  pipeline: readonly OutputStage[];
  derived: readonly unknown[];
}

/** The reference evaluation of stage i of p on accumulator x of dst element (m, n). */
export function evaluateStage(p: PipelineOf, i: number, x: number, m: number, n: number): number {
  const stage = p.pipeline[i];
  const c = 'axis' in stage && stage.axis === 'col' ? n : m;
  return stageDefinition(stage.type)!.evaluate(stage, x, c, p.derived[i]);
}

/** The lowered output program of p's pipeline: one op per stage, in order. */
export function lowerPipeline(p: PipelineOf): LoweredStage[] {
  return p.pipeline.map((stage, i) => stageDefinition(stage.type)!.lower(stage, p.derived[i]));
}

export type { StageShape };
