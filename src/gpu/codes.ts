// The enum codes shared by TypeScript and WGSL, defined once: dst types, the output program's ops
// (defined with the stages, src/problem/stages/pipeline.ts STAGE_OP), requantization roundings and
// elementwise op kinds. TypeScript reads the tables; the shaders read WGSL `const`s generated from the
// same tables (wgslCodes), in front of every source that reads a code: the epilogue's (and so every GEMM
// kernel's, src/epilogue/source.ts), the pack's and the elementwise kernel's. So `case DST_INT16` in a
// shader and DST_TYPE_CODE.int16 here can never disagree.

import type { ConcreteRounding } from '../quant/lowbit.ts';
import { STAGE_OP } from '../problem/stages/pipeline.ts';
import type { DstType } from '../types.ts';

/** EpilogueParams.dstType. */
export const DST_TYPE_CODE: Record<DstType, number> = { int32: 0, uint8: 1, int8: 2, int16: 3 };

/** Words per stage record of the `stages` buffer (src/epilogue/stages.ts); word 0 is a STAGE_OP code. */
export const STAGE_WORDS = 12;

/** PackParams.rounding: how the pack stage requantizes less-than-8-bit operands (src/quant/lowbit.ts). */
export const ROUNDING_CODE: Record<ConcreteRounding, number> = { nearest: 0, 'probabilistic-addmod': 1, 'probabilistic-xorshift': 2 };

/**
 * ElementwiseParams.kind: the kernel's paths (add and sub share one, as do the aligned ops; xnnpackAdd and
 * xnnpackMul are add/sub and mul on kernel path 'xnnpack').
 */
export const ELEMENTWISE_KIND_CODE = { add: 0, mul: 1, aligned: 2, xnnpackAdd: 3, xnnpackMul: 4 } as const;

// The epilogue's STAGE_KINDS override holds one bit per op (src/epilogue/epilogue.wgsl stageIn).
if (Object.values(STAGE_OP).some((code) => code < 0 || code > 31)) throw new Error('internal: an output stage op code outside 0..31');

const snake = (s: string) =>
  s
    .replace(/([a-z0-9])([A-Z])/g, '$1_$2')
    .replace(/[^A-Za-z0-9]+/g, '_')
    .toUpperCase();

function consts(prefix: string, table: Record<string, number>, type: 'u32' | 'i32'): string[] {
  return Object.entries(table).map(([name, code]) => `const ${prefix}_${snake(name)}: ${type} = ${code}${type === 'u32' ? 'u' : 'i'};`);
}

/** The WGSL `const` block of every code above. */
export const wgslCodes: string = [
  '// Generated from src/gpu/codes.ts: the enum codes shared with TypeScript.',
  ...consts('DST', DST_TYPE_CODE, 'u32'),
  ...consts('STAGE', STAGE_OP, 'i32'),
  `const STAGE_WORDS: u32 = ${STAGE_WORDS}u;`,
  ...consts('ROUNDING', ROUNDING_CODE, 'u32'),
  ...consts('ELEMENTWISE', ELEMENTWISE_KIND_CODE, 'u32'),
].join('\n');
