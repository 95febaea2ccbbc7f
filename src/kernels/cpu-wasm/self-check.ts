// The relaxed-SIMD kernels' exactness self-check (engine.ts runs it before it turns relaxed SIMD on): the
// relaxed kernel against the 16-bit one on random problems over warm-up rounds, the 6x8 micro-kernel and
// the few-row kernels over a prepacked rhs, in both of the engine's tiers. A lowering of the relaxed dot
// that saturates (x64 without VNNI: pmaddubsw) fails it, and the 16-bit kernel serves.

import { normalizeProblem } from '../../problem/problem.ts';
import type { GemmProblem } from '../../types.ts';
import { freeBlock, type RelaxedMode, type WasmEngine } from './engine.ts';
import type { RhsBlock } from './prepare.ts';
import { packRhsBlock } from './rhs-block.ts';
import { runOnEngine } from './run.ts';

/**
 * The relaxed kernel equals the 16-bit one on random problems, every time over warm-up rounds (engine.ts):
 * the 6x8 kernel, and its few-row kernels over a prepacked rhs (gen-relaxed-few.ts, relaxedFewAgrees),
 * each on problems large enough that the engine optimizes it within the rounds, so that both tiers'
 * code is compared: V8 starts a function in its baseline tier and optimizes it once it has run a while,
 * for these kernels about 32K iterations of their loop (measured under Node 24: the 1x4 kernel reached
 * the optimizing tier in round 3 of 8 at K x N = 1000 x 1024, and never at 1000 x 40;
 * bench/results/2026-11-27-cpu-relaxed-selfcheck-tiers.txt).
 */
export async function selfCheck(e: WasmEngine, mode: RelaxedMode): Promise<boolean> {
  let seed = 0x2545f491;
  const next = () => (seed = (Math.imul(seed, 1664525) + 1013904223) >>> 0);
  const operand = (rows: number, cols: number, signed: boolean, order: 'row-major' | 'col-major') => {
    const words = new Uint32Array(Math.ceil((rows * cols) / 4));
    for (let i = 0; i < words.length; i++) words[i] = next();
    const data = signed ? new Int8Array(words.buffer, 0, rows * cols) : new Uint8Array(words.buffer, 0, rows * cols);
    return { data, rows, cols, order };
  };
  const shapes: [number, number, number][] = [
    [13, 19, 37],
    [64, 64, 256],
    [7, 33, 5],
    [1, 40, 1000],
  ];
  // The few-row kernels' rhs, packed once for every round: 64 of its rows drawn, then repeated (a draw for
  // each of its 1M bytes took ~20 ms, in JavaScript the engine has not optimized yet).
  const drawn = operand(64, 1024, (next() & 1) === 1, 'row-major').data;
  const fewRhs = { data: drawn instanceof Int8Array ? new Int8Array(1000 * 1024) : new Uint8Array(1000 * 1024), rows: 1000, cols: 1024 };
  for (let at = 0; at < fewRhs.data.length; at += drawn.length) fewRhs.data.set(drawn.subarray(0, fewRhs.data.length - at), at);
  const fewBlock = packRhsBlock(e, normalizeProblem({ lhs: operand(1, 1000, false, 'row-major'), rhs: fewRhs }), 'relaxed');
  try {
    for (let round = 0; round < 8; round++) {
      for (const [M, N, K] of shapes) {
        const problem = normalizeProblem({
          lhs: operand(M, K, (next() & 1) === 1, 'row-major'),
          rhs: operand(K, N, (next() & 1) === 1, (next() & 1) === 1 ? 'row-major' : 'col-major'),
          lhsZeroPoint: (next() & 255) - 64,
          rhsZeroPoint: (next() & 255) - 64,
        });
        const want = (await runOnEngine(e, problem, 'i16', 1)).data;
        const got = (await runOnEngine(e, problem, 'relaxed', 1, 1, mode)).data;
        for (let i = 0; i < want.length; i++) if (got[i] !== want[i]) return false;
      }
      const few = {
        lhs: operand(3, 1000, (next() & 1) === 1, 'row-major'),
        rhs: fewRhs,
        lhsZeroPoint: (next() & 255) - 64,
        rhsZeroPoint: 7,
      };
      if (!(await relaxedFewAgrees(e, mode, few, fewBlock))) return false;
      await new Promise((r) => setTimeout(r, 1));
    }
    return true;
  } finally {
    freeBlock(e, fewBlock.packed);
  }
}

/**
 * The relaxed few-row kernels (gen-relaxed-few.ts: 1x4, 2x2, and 4x1 over a partial tile) over `block`
 * (`input`'s rhs packed by packRhsBlock for the relaxed kernel) equal the 16-bit kernel with the first
 * 1, 2, ..., M rows of its lhs (selfCheck). The lhs is row-major and the problem has no pipeline, so that
 * the first rows of the 16-bit kernel's result are each one's.
 */
export async function relaxedFewAgrees(e: WasmEngine, mode: RelaxedMode, input: GemmProblem, block: RhsBlock): Promise<boolean> {
  const full = normalizeProblem(input);
  const want = (await runOnEngine(e, full, 'i16', 1)).data;
  for (let rows = 1; rows <= full.M; rows++) {
    const lhs = { ...input.lhs, data: input.lhs.data.subarray(0, rows * full.K), rows };
    const got = (await runOnEngine(e, normalizeProblem({ ...input, lhs }), 'relaxed', 1, 1, mode, block)).data;
    for (let i = 0; i < got.length; i++) if (got[i] !== want[i]) return false;
  }
  return true;
}
