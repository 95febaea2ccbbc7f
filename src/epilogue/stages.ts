// The output pipeline as data for the fused OUTPUT stage (pack -> gemm -> OUTPUT): every op of the
// lowered output program (src/problem/stages/) becomes one STAGE_WORDS-word i32 record that
// ./epilogue.wgsl interprets (op codes STAGE_* generated from src/problem/stages/stage.ts STAGE_OP by
// src/gpu/codes.ts), followed by the per-channel vectors the records point to and the zero-point
// vectors. One shader serves every output program; only this buffer changes, and `kinds` says which
// ops the shader must be compiled for (./epilogue.ts epilogueOverrides).

import type { NormalizedProblem } from '../problem/problem.ts';
import { lowerPipeline } from '../problem/stages/pipeline.ts';
import { UINT8_DOMAIN_SHIFT, type PerChannel } from '../types.ts';
import { STAGE_WORDS } from '../gpu/codes.ts';

export interface EncodedStages {
  /** Records, then vectors. Never empty (a storage binding cannot be). */
  data: Int32Array<ArrayBuffer>;
  stageCount: number;
  /** The ops the records hold, one bit per STAGE_OP code: what the epilogue is compiled for (stageKinds). */
  kinds: number;
  /** uint8-domain zero points: scalar value, or the vector's offset in `data` (offset -1 for scalars). */
  lhsZeroPoint: number;
  lhsZeroPointOffset: number;
  rhsZeroPoint: number;
  rhsZeroPointOffset: number;
}

/** int8 operands are packed as v + 128 (pack.wgsl), so their zero points move by 128, mod 2^32. */
function shiftZeroPoint(z: PerChannel, signed: boolean): PerChannel {
  if (!signed) return z;
  return typeof z === 'number' ? (z + UINT8_DOMAIN_SHIFT) | 0 : z.map((v) => (v + UINT8_DOMAIN_SHIFT) | 0);
}

/**
 * The lowered output program (src/problem/stages/pipeline.ts lowerPipeline) as STAGE_WORDS-word records:
 * [op, axis (1: col), operands...], a channel operand as two words [isVector, value or offset of its
 * vector in `data`], an immediate as one. Then the vectors, then the zero-point vectors.
 */
export function encodeStages(p: NormalizedProblem): EncodedStages {
  const records: number[] = [];
  const vectors: number[] = [];
  const base = () => p.pipeline.length * STAGE_WORDS;
  /** [isVector, value-or-offset] for a scalar-or-vector parameter. */
  const param = (v: PerChannel): [number, number] => {
    if (typeof v === 'number') return [0, v];
    const offset = base() + vectors.length;
    for (const x of v) vectors.push(x);
    return [1, offset];
  };
  let kinds = 0;
  for (const { op, axis, operands } of lowerPipeline(p)) {
    kinds |= 1 << op;
    const fields = [op, axis === 'col' ? 1 : 0, ...operands.flatMap((o) => ('imm' in o ? [o.imm] : param(o.channel)))];
    if (fields.length > STAGE_WORDS) throw new Error(`internal: a stage record of ${fields.length} words`);
    records.push(...fields, ...new Array(STAGE_WORDS - fields.length).fill(0));
  }
  const [lhsVec, lhsZ] = param(shiftZeroPoint(p.lhsZeroPoint, p.lhsType === 'int8'));
  const [rhsVec, rhsZ] = param(shiftZeroPoint(p.rhsZeroPoint, p.rhsType === 'int8'));
  const data = Int32Array.from([...records, ...vectors, 0]);
  return {
    data,
    stageCount: p.pipeline.length,
    kinds,
    lhsZeroPoint: lhsVec ? 0 : lhsZ,
    lhsZeroPointOffset: lhsVec ? lhsZ : -1,
    rhsZeroPoint: rhsVec ? 0 : rhsZ,
    rhsZeroPointOffset: rhsVec ? rhsZ : -1,
  };
}
