// Pack formats: the layouts the pack stage (pack -> gemm -> output) writes and the GEMM kernels read.
// A kernel declares the one it consumes, a prepacked operand records the one it was packed in, and the
// scheduler refuses to feed an operand to a kernel that reads another layout.

import type { PackLayout } from '../gpu/plan.ts';

export type PackFormatId = 'u8k4-r64';

export interface PackFormat extends PackLayout {
  id: PackFormatId;
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
  },
};
