// What an output stage is (the OUTPUT of pack -> gemm -> output), defined once per stage in a module of
// this folder: its validation (fields named in errors), its reference evaluation on one int32
// accumulator (what src/reference/pipeline.ts runs, and every back end is tested against), and its
// lowering to one op of the lowered output program (its own op codes), which both back ends interpret:
// the GPU's fused epilogue (src/epilogue/stages.ts, epilogue.wgsl) and the WebAssembly output stage
// (src/kernels/cpu-wasm/stages.ts, gen/gen-output.ts). ./pipeline.ts lists the stages.

import type { Axis, DstType, OutputStage, PerChannel } from '../../types.ts';

/** An operand of a lowered op: a scalar-or-vector along the stage's axis, or an immediate. */
type StageOperand = { channel: PerChannel } | { imm: number };

/** One stage, lowered: its op, the axis its channel operands run along, its operands in order. */
export interface LoweredStage {
  /** A code of its stage's `ops`, unique among all stages' (./pipeline.ts STAGE_OP). */
  op: number;
  axis: Axis;
  operands: StageOperand[];
}

/** What a stage's validation knows of the problem: the length of a vector along an axis. */
export interface StageShape {
  length(axis: Axis): number;
  /** How that length is described in an error ('axis "row": one per dst row, M'). */
  what(axis: Axis): string;
}

/**
 * How a field is written in a spec (the CLI's JSON; src/cli/spec.ts reads every stage by these):
 * an integer, a scalar or an int32 array, a float32 scalar or array (a JSON number rounded to float32),
 * an int32 array, the axis (required, or '?' optional), or one of some strings (with a default: optional).
 */
export type FieldKind =
  | 'int'
  | 'perChannel'
  | 'float32PerChannel'
  | 'vector'
  | 'axis'
  | 'axis?'
  | { oneOf: readonly string[]; default?: string };

/**
 * One output stage. `D` is what its validation derives once per problem (tanh: its fixed-point
 * constants), handed to its evaluation and its lowering.
 */
export interface StageDefinition<S extends OutputStage, D = undefined> {
  /**
   * The ops it lowers to that no other stage defines, by name, with their codes (unique across the
   * stages: ./pipeline.ts STAGE_OP; the WGSL STAGE_* constants are generated from them).
   */
  readonly ops: Readonly<Record<string, number>>;
  /** Its fields besides `type`, in the order a spec lists them. */
  readonly fields: Readonly<Record<Exclude<keyof S, 'type'>, FieldKind>>;
  /** Checks the stage's fields; `field` names it ('pipeline[2]'). Returns what it derives. */
  validate(stage: S, field: string, shape: StageShape): D;
  /** For a cast stage (which must come last): the dst type it makes. */
  castTo?(stage: S): DstType;
  /** The reference evaluation: accumulator x after the stage, c its channel index along the stage's axis. */
  evaluate(stage: S, x: number, c: number, derived: D): number;
  /** The stage as one op of the lowered output program. */
  lower(stage: S, derived: D): LoweredStage;
}

export type StageOf<T extends OutputStage['type']> = Extract<OutputStage, { type: T }>;

/** The value of a scalar-or-vector parameter at channel i. */
export function channel(v: PerChannel, i: number): number {
  return typeof v === 'number' ? v : v[i];
}

/** The axis of a stage that has one, 'row' for the others (their operands are all scalars). */
export const axisOf = (stage: OutputStage): Axis => ('axis' in stage && stage.axis === 'col' ? 'col' : 'row');
