// Pack formats: the layouts the pack stage (pack -> gemm -> output) writes and the GEMM kernels read.
// A kernel declares the ones it consumes (lhs and rhs), a prepacked operand records the one it was
// packed in, and the scheduler refuses to feed an operand to a kernel that reads another layout. The
// 8-bit formats differ only in row padding, so an operand packed with more padding serves every kernel
// whose row alignment divides its own (formatServes): a 'u8k4-r128' operand feeds the 64-row kernels too.
// The same holds among the 4-bit formats ('u4k8-r64', '-r128', '-r256'), never across the two widths.

import { roundUp } from '../gpu/plan.ts';

/**
 * A packed layout: 4 consecutive k values per u32 (8 when valueBits is 4), K padded to `depthAlign`,
 * outer rows to `rowAlign`.
 */
export interface PackLayout {
  rowAlign: number;
  depthAlign: number;
  /** Bits per packed value: 8 (default) or 4 (two values per byte). */
  valueBits?: number;
}

/** Bytes of one packed row of `depth` values in `layout`. */
export const packedRowBytes = (depth: number, layout: PackLayout) => (roundUp(depth, layout.depthAlign) * (layout.valueBits ?? 8)) / 8;

export type PackFormatId = 'u8k4-r64' | 'u8k4-r128' | 'u8k4-r256' | 'u4k8-r64' | 'u4k8-r128' | 'u4k8-r256';

export interface PackFormat extends PackLayout {
  id: PackFormatId;
  valueBits: 4 | 8;
  description: string;
}

export const PACK_FORMATS: Record<PackFormatId, PackFormat> = {
  'u8k4-r64': {
    id: 'u8k4-r64',
    description:
      'uint8 domain (int8 XOR 0x80), one packed row per lhs row or rhs column, 4 consecutive k per u32 ' +
      '(byte j = k + j), K zero-padded to a multiple of 64, rows to a multiple of 64; int32 row/column sums. ' +
      'Padding rows hold unspecified values: a kernel may read them, and never stores the dst elements they give.',
    rowAlign: 64,
    depthAlign: 64,
    valueBits: 8,
  },
  'u8k4-r128': {
    id: 'u8k4-r128',
    description: 'as u8k4-r64, with rows padded to a multiple of 128 (the 128 x 128 tiles of dot4-128x128)',
    rowAlign: 128,
    depthAlign: 64,
    valueBits: 8,
  },
  'u8k4-r256': {
    id: 'u8k4-r256',
    description: 'as u8k4-r64, with rows padded to a multiple of 256 (the 256-wide tiles of the subgroup-matrix kernel)',
    rowAlign: 256,
    depthAlign: 64,
    valueBits: 8,
  },
  'u4k8-r64': {
    id: 'u4k8-r64',
    description:
      'values of at most 4 bits (requantized as in u8k4-r64, src/quant/lowbit.ts), two per byte: 8 consecutive ' +
      'k per u32, byte j holding k + j in its low nibble and k + j + 4 in its high nibble, so that ' +
      '(w & 0x0f0f0f0f) and ((w >> 4) & 0x0f0f0f0f) are the two u8k4 words of k..k+3 and k+4..k+7. ' +
      'K zero-padded to a multiple of 64 (32 bytes), rows to a multiple of 64; int32 sums of the values.',
    rowAlign: 64,
    depthAlign: 64,
    valueBits: 4,
  },
  'u4k8-r128': {
    id: 'u4k8-r128',
    description: "as u4k8-r64, with rows padded to a multiple of 128 (the 128-wide tiles of the subgroup-matrix kernel's '-u4' variants)",
    rowAlign: 128,
    depthAlign: 64,
    valueBits: 4,
  },
  'u4k8-r256': {
    id: 'u4k8-r256',
    description: "as u4k8-r64, with rows padded to a multiple of 256 (the 256-wide tiles of the subgroup-matrix kernel's '-u4' variants)",
    rowAlign: 256,
    depthAlign: 64,
    valueBits: 4,
  },
};

/** The format of `valueBits` values with rows padded to `rowAlign` (64, 128 or 256). */
export function formatOf(valueBits: 4 | 8, rowAlign: 64 | 128 | 256): PackFormatId {
  return `${valueBits === 4 ? 'u4k8' : 'u8k4'}-r${rowAlign}` as PackFormatId;
}

/**
 * The format prepack() stores an operand in: a rhs of at most 4 bits two values per byte where the
 * adapter runs the kernels that read it (dot4: src/kernels/gemv, src/kernels/splitk; and the tensor
 * cores' '-u4' tilings, src/kernels/sgmat, which the registry picks for it where tiles pay), else 8-bit lanes.
 * lhs stays in 8-bit lanes (no kernel reads 4-bit lhs: activations are the small operand).
 * Rows are padded to 128 at either width: that serves the 128-tile kernels (the tuner's 128-wide tilings
 * among them) and every 64-row one; 256 would serve the 256-wide tilings too, but pads up to 255 rows
 * of weights, so it is taken only where a kernel that reads 256-row packs may run: `rows` is the largest
 * row padding of the kernels the operand is for, where known (a context forced to one kernel, as the
 * tuner's measurements are, or one whose tuning table names a 256-wide tiling). `valueBits`: the value
 * width of the one kernel the operand is for (a context forced to a kernel that reads 8-bit lanes keeps a
 * 4-bit rhs in them).
 */
export function prepackFormat(caps: { dot4: boolean }, side: 'lhs' | 'rhs', bits: number, rows = 0, valueBits?: 4 | 8): PackFormatId {
  return formatOf(side === 'rhs' && bits <= 4 && caps.dot4 && valueBits !== 8 ? 4 : 8, rows > 128 ? 256 : 128);
}

/** Whether an operand packed as `packed` can be read by a kernel that consumes `wanted`. */
export function formatServes(packed: PackFormatId, wanted: PackFormatId): boolean {
  const p = PACK_FORMATS[packed];
  const w = PACK_FORMATS[wanted];
  return p.valueBits === w.valueBits && p.depthAlign % w.depthAlign === 0 && p.rowAlign % w.rowAlign === 0;
}
