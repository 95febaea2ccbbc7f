// The benchmark's shapes: squares 64..2048 trimmed by the time budget, LLM-like shapes
// (M in {1, 16, 128} x N = K in {1024, 4096}: decoding with M = 1, small and larger batches), and one
// convolution-like shape (a 3x3 conv of 64 channels on a 56x56 feature map as im2col: 3136x64x576).
// `--quick` keeps a representative subset, M = 1 included, that fits in 3 minutes on SwiftShader.
// Named sets (NAMED_SHAPES: quick, full, skinny) can be given to --shapes by name.

/** One GEMM shape: lhs [m,k] x rhs [k,n] -> dst [m,n]. */
export interface Shape {
  m: number;
  n: number;
  k: number;
  /** Which family it belongs to (for the report's grouping). */
  family: 'square' | 'llm' | 'conv' | 'custom';
}

export const SQUARES = [64, 128, 256, 512, 1024, 2048];

export const FULL_SHAPES: Shape[] = [
  ...SQUARES.map((s): Shape => ({ m: s, n: s, k: s, family: 'square' })),
  ...[1, 16, 128].flatMap((m) => [1024, 4096].map((nk): Shape => ({ m, n: nk, k: nk, family: 'llm' }))),
  { m: 3136, n: 64, k: 576, family: 'conv' },
];

/**
 * The --quick suite: two squares (tiny: launch and compile overhead; mid-size: throughput), M = 1 and
 * M = 16 at N = K = 1024 (decoding and a small batch: the gemv and the 32-tile kernels), and the
 * convolution shape (tall and thin: the 64-tile kernel with N = 64).
 */
export const QUICK_SHAPES: Shape[] = [
  { m: 64, n: 64, k: 64, family: 'square' },
  { m: 256, n: 256, k: 256, family: 'square' },
  { m: 1, n: 1024, k: 1024, family: 'llm' },
  { m: 16, n: 1024, k: 1024, family: 'llm' },
  { m: 3136, n: 64, k: 576, family: 'conv' },
];

/**
 * Skinny shapes, decoding and short prefill with LLaMA-7B-like weights: M in {1, 4, 16, 64, 128} x
 * N = K in {4096, 11008} (`--shapes skinny`; with `--modes resident --rhs-bits 8,4`). Memory-bound at
 * small M. Meant for a GPU: at 11008 a SwiftShader run takes many minutes per row.
 */
export const SKINNY_SHAPES: Shape[] = [4096, 11008].flatMap((nk) =>
  [1, 4, 16, 64, 128].map((m): Shape => ({ m, n: nk, k: nk, family: 'llm' })),
);

/** Named shape sets, usable as items of --shapes (alone or mixed with MxNxK items). */
export const NAMED_SHAPES: Record<string, Shape[]> = { quick: QUICK_SHAPES, full: FULL_SHAPES, skinny: SKINNY_SHAPES };

export const ops = (s: Pick<Shape, 'm' | 'n' | 'k'>): number => 2 * s.m * s.n * s.k;

export const shapeKey = (s: Pick<Shape, 'm' | 'n' | 'k'>): string => `${s.m}x${s.n}x${s.k}`;

/** Parses "256x256x256,1x4096x4096" (MxNxK) and names of NAMED_SHAPES ("skinny"); drops repeats. Throws with the offending item. */
export function parseShapes(text: string): Shape[] {
  const shapes = text
    .split(',')
    .map((item) => item.trim())
    .filter(Boolean)
    .flatMap((item): Shape[] => {
      const named = NAMED_SHAPES[item.toLowerCase()];
      if (named) return named.map((s) => ({ ...s }));
      const parts = item.toLowerCase().split('x');
      const dims = parts.map((p) => Number(p));
      if (parts.length !== 3 || dims.some((d) => !Number.isInteger(d) || d < 1 || d > 1 << 16)) {
        throw new Error(
          `--shapes: "${item}" is not MxNxK with positive integers (e.g. 256x256x256) nor a named set (${Object.keys(NAMED_SHAPES).join(', ')})`,
        );
      }
      const [m, n, k] = dims;
      const family: Shape['family'] = m === n && n === k ? 'square' : 'custom';
      return [{ m, n, k, family }];
    });
  return shapes.filter((s, i) => shapes.findIndex((t) => shapeKey(t) === shapeKey(s)) === i);
}

/** Canonical report order: squares by size, then LLM-like by N then M, then the rest as given. */
export function sortShapes<T extends Pick<Shape, 'm' | 'n' | 'k' | 'family'>>(shapes: T[]): T[] {
  const rank = { square: 0, llm: 1, conv: 2, custom: 3 } as const;
  return [...shapes].sort((a, b) => {
    if (a.family !== b.family) return rank[a.family] - rank[b.family];
    if (a.family === 'llm') return a.n - b.n || a.m - b.m;
    if (a.family === 'square') return a.m - b.m;
    return 0;
  });
}
