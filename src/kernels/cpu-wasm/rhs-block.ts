// A prepacked 8-bit rhs on the WebAssembly engine (kernel.ts prepackCpu, and the relaxed self-check):
// packed once into kernel `kind`'s panels with their column sums, in a block of linear memory that
// outlives the GEMMs which read it (engine.ts allocateBlock); the 16-bit kernel's block also keeps the
// byte lanes of its few-row kernels (gen-nibble.ts). The pack step of pack -> gemm -> output, done ahead.

import type { NormalizedProblem } from '../../problem/problem.ts';
import { allocateBlock, ensureMemory, freeBlock, heapEnd, type WasmEngine } from './engine.ts';
import { KERNELS, NR, QUAD_BYTE_ORDER, QUAD_NP_ALIGN, STRIP_PANELS, type WasmKernelKind } from './layout.ts';
import { bytes, forgetPlan, type RhsBlock, rhsEncoding, roundUp, writeContext } from './prepare.ts';

/**
 * The block of a K x N 8-bit rhs packed for kernel `kind` (packRhsBlock): its panels' Kp and Np (the
 * relaxed kernel's columns padded to whole column groups of its few-row kernels, QUAD_NP_ALIGN columns,
 * gen-relaxed-few.ts), the bytes of the panels, of the panels and column sums, and in all (the 16-bit
 * kernel also keeps the byte lanes of its few-row kernels, gen-nibble.ts: k padded to 4, columns to
 * QUAD_NP_ALIGN, in strips).
 */
function rhsBlockLayout(K: number, N: number, kind: WasmKernelKind) {
  const { kstep, elem } = KERNELS[kind];
  const Kp = roundUp(K, kstep);
  const Np = roundUp(N, kind === 'relaxed' ? QUAD_NP_ALIGN : NR);
  const panelBytes = Np * Kp * elem;
  const packedBytes = panelBytes + 4 * Np;
  const rawBytes = kind === 'i16' ? roundUp(N, QUAD_NP_ALIGN) * roundUp(K, 4) : 0;
  return { Kp, Np, panelBytes, packedBytes, rawBytes, size: packedBytes + rawBytes };
}

/** Bytes of the block packRhsBlock makes for a K x N rhs and kernel `kind`. */
export const rhsBlockBytes = (K: number, N: number, kind: WasmKernelKind): number => rhsBlockLayout(K, N, kind).size;

/**
 * Packs p's 8-bit rhs for kernel `kind` into a new block of e's memory (engine.ts allocateBlock,
 * rhsBlockBytes long; prepackCpu's weights, and the self-check's): the panels (gen-pack.ts pack_rhs),
 * then the column sums, then for the 16-bit kernel the byte lanes.
 */
export function packRhsBlock(e: WasmEngine, p: NormalizedProblem, kind: WasmKernelKind): RhsBlock {
  const { rhs: op, rhsType: type, K, N } = p;
  const { Kp, Np, panelBytes, packedBytes, rawBytes, size } = rhsBlockLayout(K, N, kind);
  const at = allocateBlock(e, size);
  try {
    // The operand's bytes go past the heap, then pack_rhs writes the block (layout.ts CTX, gen-pack.ts).
    // Its panel loads read padding rows and columns too (a select evaluates both of its operands, then
    // drops those values): the memory spans Kp x Np source bytes, as prepare.ts reserves for a call's rhs.
    const src = heapEnd(e);
    ensureMemory(e, src + Kp * Np);
    const buf = e.memory.buffer;
    const data = bytes(op.data);
    new Uint8Array(buf, src, K * N).set(data);
    const { xor, sh } = rhsEncoding(kind, type === 'int8');
    const rowMajor = op.order === 'row-major';
    forgetPlan(e);
    writeContext(buf, {
      N,
      K,
      Kp,
      Np,
      rhsSrc: src,
      rhsSo: rowMajor ? 1 : K,
      rhsSk: rowMajor ? N : 1,
      rhsXor: xor,
      rhsSh: sh,
      rhsPacked: at,
      colSums: at + panelBytes,
    });
    e.exports[`pack_rhs_${kind}`](0, Np / NR);
    const raw = rawBytes ? at + packedBytes : null;
    if (raw !== null) {
      // Column n's quad q in strip n >> 5 (K padded to 4, times 32 bytes), quad q (128 bytes), panel
      // (n >> 3) & 3 (32 bytes), half (n & 7) >> 2, lane n & 3. Walked in the operand's storage order, so
      // that it is read once, in sequence.
      const out = new Uint8Array(buf, raw, rawBytes).fill(0);
      const stripBytes = roundUp(K, 4) * 8 * STRIP_PANELS;
      const column = Int32Array.from(
        { length: N },
        (_, n) => (n >> 5) * stripBytes + ((n >> 3) & 3) * 32 + ((n & 7) >> 2) * 16 + (n & 3) * 4,
      );
      const quad = Int32Array.from({ length: K }, (_, k) => (k >> 2) * 32 * STRIP_PANELS + QUAD_BYTE_ORDER[k & 3]);
      if (rowMajor) {
        for (let k = 0, i = 0; k < K; k++) {
          const q = quad[k];
          for (let n = 0; n < N; n++, i++) out[column[n] + q] = data[i];
        }
      } else {
        for (let n = 0, i = 0; n < N; n++) {
          const c = column[n];
          for (let k = 0; k < K; k++, i++) out[c + quad[k]] = data[i];
        }
      }
    }
    return { kind, packed: at, sums: at + panelBytes, raw, nibble: null };
  } catch (x) {
    freeBlock(e, at); // a failed pack (the memory could not grow) leaves no block behind
    throw x;
  }
}
