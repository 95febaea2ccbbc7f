// The benchmark's shapes: squares 64..2048 trimmed by the time budget, LLM-like shapes
// (M in {1, 16, 128} x N = K in {1024, 4096}: decoding with M = 1, small and larger batches), one
// convolution-like GEMM (a 3x3 conv of 64 channels on a 56x56 feature map as im2col: 3136x64x576), and
// two convolution layers run as convolutions (NHWC input, OHWI filter: pack the patches -> gemm ->
// output, family 'conv2d', each with its `conv` geometry; M x N x K is its GEMM: output pixels x output
// channels x filter taps times input channels). `--quick` keeps a representative subset, M = 1 and both
// convolution layers included. Named sets (NAMED_SHAPES: quick, full, skinny, conv) can be given to
// --shapes by name, and a convolution layer by its key (convKey: conv56x56x64-k3x3-s1-o64).

import { convGeometry } from '../src/layers/layers.ts';

/**
 * A 2-D convolution layer of batch 1: input NHWC [1, height, width, channels], filter OHWI
 * [outChannels, filterHeight, filterWidth, channels], the same stride in both dimensions, TFLite's
 * SAME or VALID padding (src/layers/layers.ts convGeometry), no dilation.
 */
export interface ConvLayer {
  height: number;
  width: number;
  channels: number;
  filterHeight: number;
  filterWidth: number;
  stride: number;
  padding: 'SAME' | 'VALID';
  outChannels: number;
}

/** One GEMM shape: lhs [m,k] x rhs [k,n] -> dst [m,n]; for a convolution layer, its GEMM and the layer. */
export interface Shape {
  m: number;
  n: number;
  k: number;
  /** Which family it belongs to (for the report's grouping): 'conv' the im2col-shaped GEMM, 'conv2d' a convolution layer. */
  family: 'square' | 'llm' | 'conv' | 'conv2d' | 'custom';
  /** family 'conv2d': the layer (m = output pixels, n = output channels, k = filter taps x input channels). */
  conv?: ConvLayer;
}

/** A convolution layer's shape: its GEMM's M x N x K and the layer. Throws where the filter does not fit (VALID). */
export function convShape(conv: ConvLayer): Shape {
  const oh = convGeometry(conv.height, conv.filterHeight, conv.stride, 1, conv.padding).out;
  const ow = convGeometry(conv.width, conv.filterWidth, conv.stride, 1, conv.padding).out;
  if (oh < 1 || ow < 1) throw new Error(`${convKey(conv)}: the filter is larger than the input`);
  return { m: oh * ow, n: conv.outChannels, k: conv.filterHeight * conv.filterWidth * conv.channels, family: 'conv2d', conv: { ...conv } };
}

/** A convolution layer's name: conv{H}x{W}x{C}-k{KH}x{KW}-s{stride}[-valid]-o{O} (SAME padding unless it says valid). */
export const convKey = (c: ConvLayer): string =>
  `conv${c.height}x${c.width}x${c.channels}-k${c.filterHeight}x${c.filterWidth}-s${c.stride}${c.padding === 'VALID' ? '-valid' : ''}-o${c.outChannels}`;

const CONV_KEY = /^conv(\d+)x(\d+)x(\d+)-k(\d+)x(\d+)-s(\d+)(-valid|-same)?-o(\d+)$/;

/** The layer a convKey names, or null when the text is not one. */
export function parseConvKey(text: string): ConvLayer | null {
  const g = CONV_KEY.exec(text.trim().toLowerCase());
  if (!g) return null;
  const [height, width, channels, filterHeight, filterWidth, stride] = g.slice(1, 7).map(Number);
  return {
    height,
    width,
    channels,
    filterHeight,
    filterWidth,
    stride,
    padding: g[7] === '-valid' ? 'VALID' : 'SAME',
    outChannels: Number(g[8]),
  };
}

/**
 * Two real networks' layers: ResNet's 3x3 convolution of 64 channels on 56x56 (the layer whose im2col
 * GEMM is 3136x64x576), and a MobileNet-like 3x3 stride-2 convolution from 32 to 64 channels on 112x112.
 */
export const CONV_LAYERS: Shape[] = [
  convShape({ height: 56, width: 56, channels: 64, filterHeight: 3, filterWidth: 3, stride: 1, padding: 'SAME', outChannels: 64 }),
  convShape({ height: 112, width: 112, channels: 32, filterHeight: 3, filterWidth: 3, stride: 2, padding: 'SAME', outChannels: 64 }),
];

export const SQUARES = [64, 128, 256, 512, 1024, 2048];

export const FULL_SHAPES: Shape[] = [
  ...SQUARES.map((s): Shape => ({ m: s, n: s, k: s, family: 'square' })),
  ...[1, 16, 128].flatMap((m) => [1024, 4096].map((nk): Shape => ({ m, n: nk, k: nk, family: 'llm' }))),
  { m: 3136, n: 64, k: 576, family: 'conv' },
  ...CONV_LAYERS,
];

/**
 * The --quick suite: two squares (tiny: launch and compile overhead; mid-size: throughput), M = 1 and
 * M = 16 at N = K = 1024 (decoding and a small batch: the gemv and the 32-tile kernels), the
 * convolution-shaped GEMM (tall and thin: the 64-tile kernel with N = 64) and the two convolution layers.
 */
export const QUICK_SHAPES: Shape[] = [
  { m: 64, n: 64, k: 64, family: 'square' },
  { m: 256, n: 256, k: 256, family: 'square' },
  { m: 1, n: 1024, k: 1024, family: 'llm' },
  { m: 16, n: 1024, k: 1024, family: 'llm' },
  { m: 3136, n: 64, k: 576, family: 'conv' },
  ...CONV_LAYERS,
];

/**
 * Skinny shapes, decoding and short prefill with LLaMA-7B-like weights: M in {1, 4, 16, 64, 128} x
 * N = K in {4096, 11008} (`--shapes skinny`; with `--modes resident --rhs-bits 8,4`). Memory-bound at
 * small M. Meant for a GPU: at 11008 a SwiftShader run takes many minutes per row.
 */
export const SKINNY_SHAPES: Shape[] = [4096, 11008].flatMap((nk) =>
  [1, 4, 16, 64, 128].map((m): Shape => ({ m, n: nk, k: nk, family: 'llm' })),
);

/** The convolution layers beside the im2col-shaped GEMM of the first one (`--shapes conv`). */
export const CONV_SHAPES: Shape[] = [{ m: 3136, n: 64, k: 576, family: 'conv' }, ...CONV_LAYERS];

/** Named shape sets, usable as items of --shapes (alone or mixed with MxNxK items). */
export const NAMED_SHAPES: Record<string, Shape[]> = { quick: QUICK_SHAPES, full: FULL_SHAPES, skinny: SKINNY_SHAPES, conv: CONV_SHAPES };

export const ops = (s: Pick<Shape, 'm' | 'n' | 'k'>): number => 2 * s.m * s.n * s.k;

/** A shape's name in the reports: MxNxK, or a convolution layer's convKey. */
export const shapeKey = (s: Pick<Shape, 'm' | 'n' | 'k' | 'conv'>): string => (s.conv ? convKey(s.conv) : `${s.m}x${s.n}x${s.k}`);

/**
 * Parses "256x256x256,1x4096x4096" (MxNxK), convolution layers by convKey ("conv56x56x64-k3x3-s1-o64") and
 * names of NAMED_SHAPES ("skinny"); drops repeats. Throws with the offending item.
 */
export function parseShapes(text: string): Shape[] {
  const shapes = text
    .split(',')
    .map((item) => item.trim())
    .filter(Boolean)
    .flatMap((item): Shape[] => {
      const named = NAMED_SHAPES[item.toLowerCase()];
      if (named) return named.map((s) => ({ ...s }));
      const conv = parseConvKey(item);
      if (conv) {
        const dims = [conv.height, conv.width, conv.channels, conv.filterHeight, conv.filterWidth, conv.stride, conv.outChannels];
        let shape: Shape | null = null;
        try {
          if (dims.every((d) => d >= 1 && d <= 1 << 16)) shape = convShape(conv);
        } catch {
          // the filter does not fit: said below
        }
        if (!shape)
          throw new Error(
            `--shapes: "${item}" is not a convolution layer with positive sizes whose filter fits (conv{H}x{W}x{C}-k{KH}x{KW}-s{S}[-valid]-o{O})`,
          );
        return [shape];
      }
      const parts = item.toLowerCase().split('x');
      const dims = parts.map((p) => Number(p));
      if (parts.length !== 3 || parts.some((p) => !/^\d+$/.test(p)) || dims.some((d) => d < 1 || d > 1 << 16)) {
        throw new Error(
          `--shapes: "${item}" is not MxNxK with positive integers (e.g. 256x256x256), a convolution layer (conv56x56x64-k3x3-s1-o64) nor a named set (${Object.keys(NAMED_SHAPES).join(', ')})`,
        );
      }
      const [m, n, k] = dims;
      const family: Shape['family'] = m === n && n === k ? 'square' : 'custom';
      return [{ m, n, k, family }];
    });
  return shapes.filter((s, i) => shapes.findIndex((t) => shapeKey(t) === shapeKey(s)) === i);
}

/** Canonical report order: squares by size, then LLM-like by N then M, then the rest as given. */
export function sortShapes<T extends Pick<Shape, 'm' | 'n' | 'k' | 'family' | 'conv'>>(shapes: T[]): T[] {
  const rank = { square: 0, llm: 1, conv: 2, conv2d: 3, custom: 4 } as const;
  return [...shapes].sort((a, b) => {
    if (a.family !== b.family) return rank[a.family] - rank[b.family];
    if (a.family === 'llm') return a.n - b.n || a.m - b.m;
    if (a.family === 'square') return a.m - b.m;
    return 0;
  });
}
