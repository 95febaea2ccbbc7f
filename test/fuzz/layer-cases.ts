// Bad layer and graph inputs for the fuzz harness (./harness.ts, `npm run fuzz`): fast-check draws a valid
// FULLY_CONNECTED or CONV_2D layer (uint8 or int8), or a small graph (conv2d, fullyConnected and an
// elementwise or requantize layer, in either order), and spoils exactly one parameter: a scale whose
// float32 is zero, subnormal or infinite (1e-46, 1e-40, 1e39), a negative or fractional shape, zero
// channels, a weight zero point out of its type's range, weights of the other dtype, a stride above
// 2^31 - 1 (the one limit of every backend: the GPU's patch positions are 32-bit) or not an integer >= 1,
// an unknown activation or kernel path, an output zero point out of range on the graph's last
// layer, the FC reference path in a graph run on WebGPU. Each case carries the field the error must
// name, as the caller wrote it: in the library's terms (`params.weights.zeroPoint`,
// `layers[2].params.output.zeroPoint`) for the library case, in the spec's (`weights.zeroPoint`,
// `layers[2].output.zeroPoint`) for the same case through `qgemm run`. ./layer-run.ts turns a case into
// calls and spec files.

import fc from 'fast-check';

export type Dtype = 'uint8' | 'int8';

/** One spoiled parameter of a FC or conv layer. `lib: false`: no spec can say it (a .npy shape is never negative). */
export type Bad =
  | { kind: 'scale'; where: 'input' | 'output' | 'weights' | 'weightsChannel'; value: number }
  | { kind: 'shape'; where: 'weights' | 'input'; shape: number[]; lib: true }
  | { kind: 'channels'; height: number; width: number }
  | { kind: 'weightZeroPoint'; value: number }
  | { kind: 'mixedDtype' }
  | { kind: 'stride'; stride: [number, number] }
  | { kind: 'activation'; value: unknown }
  | { kind: 'kernelPath'; value: unknown }
  | { kind: 'zeroPoint'; where: 'input' | 'output'; value: number };

export interface LayerCase {
  op: 'fullyConnected' | 'conv2d';
  dtype: Dtype;
  bad: Bad;
}

/** A graph: conv2d, then fullyConnected and an elementwise/requantize layer in `order`; one thing spoiled. */
export interface GraphCase {
  dtype: Dtype;
  order: 'fc-last' | 'elementwise-last';
  tail: 'add' | 'sub' | 'mul' | 'requantize';
  bad:
    | { kind: 'tailOutput'; what: 'zeroPoint' | 'scale'; value: number }
    | { kind: 'tailActivation'; value: unknown }
    | { kind: 'tailKernelPath'; value: unknown }
    | { kind: 'referenceFc' }
    | { kind: 'graphInput'; what: 'zeroPoint' | 'scale'; value: number }
    | { kind: 'layer'; layer: 'conv' | 'fc'; bad: Bad };
}

/** Scales whose float32 is 0, subnormal or infinite, or that are not positive; `lib` adds what JSON cannot say. */
const badScale = (lib: boolean) =>
  fc.constantFrom(1e-46, 1e-45, 1e-40, 1.1e-38, 0, -0.5, 1e39, 3.5e38, ...(lib ? [Number.NaN, Number.POSITIVE_INFINITY, -0] : []));
const zpOutOf = (dtype: Dtype) =>
  dtype === 'uint8' ? fc.constantFrom(-1, 256, 300, 1000, -129) : fc.constantFrom(128, -129, 255, 1000, -1000);
const badActivation = (lib: boolean) =>
  fc.constantFrom<unknown>('relu', 'RELU7', 'TANH', 'SIGN_BIT', '', ' RELU', 3, ...(lib ? [] : [null, ['RELU']]));
const badKernelPath = (lib: boolean) => fc.constantFrom<unknown>('XNNPACK', 'builtin', 'fast', 'ref', '', 7, ...(lib ? [] : [null]));

/** Shapes with a negative or fractional size whose product is still the valid shape's size. */
const BAD_SHAPES = {
  fullyConnected: {
    weights: [
      [-4, -3],
      [8, 1.5],
      [-2, -6],
      [4.5, 8 / 3],
    ],
    input: [
      [-2, -3],
      [4, 1.5],
      [-1, -6],
    ],
  },
  conv2d: {
    weights: [
      [2, -2, -2, 2],
      [2, 2.5, 1.6, 2],
      [-2, 2, 2, -2],
    ],
    input: [
      [1, -3, -3, 2],
      [1, 4.5, 2, 2],
      [-1, 3, -3, 2],
    ],
  },
} as const;

/** A spoiled parameter of a `op` layer of `dtype`; `lib`: also what only a library call can say. */
export function arbBad(op: LayerCase['op'], dtype: Dtype, lib: boolean): fc.Arbitrary<Bad> {
  const arbs: fc.Arbitrary<Bad>[] = [
    fc.record({
      kind: fc.constant('scale' as const),
      where: fc.constantFrom('input', 'output', 'weights', 'weightsChannel'),
      value: badScale(lib),
    }),
    fc.record({ kind: fc.constant('weightZeroPoint' as const), value: zpOutOf(dtype) }),
    fc.constant({ kind: 'mixedDtype' as const }),
    fc.record({ kind: fc.constant('activation' as const), value: badActivation(lib) }),
    fc.record({ kind: fc.constant('kernelPath' as const), value: badKernelPath(lib) }),
    fc.record({ kind: fc.constant('zeroPoint' as const), where: fc.constantFrom('input', 'output'), value: zpOutOf(dtype) }),
  ];
  if (op === 'conv2d') {
    arbs.push(
      fc.record({
        kind: fc.constant('channels' as const),
        height: fc.integer({ min: 1, max: 300 }),
        width: fc.integer({ min: 1, max: 300 }),
      }),
      fc
        .tuple(
          fc.oneof(fc.integer({ min: 2 ** 31, max: 2 ** 45 }), fc.constantFrom(0, -1, 1.5, 2 ** 53)),
          fc.integer({ min: 1, max: 3 }),
          fc.boolean(),
        )
        .map(([bad, good, first]) => ({ kind: 'stride' as const, stride: (first ? [bad, good] : [good, bad]) as [number, number] })),
    );
  }
  if (lib) {
    const shapes = BAD_SHAPES[op];
    arbs.push(
      fc
        .constantFrom<'weights' | 'input'>('weights', 'input')
        .chain((where) =>
          fc.constantFrom(...shapes[where]).map((s) => ({ kind: 'shape' as const, where, shape: [...s], lib: true as const })),
        ),
    );
  }
  return fc.oneof(...arbs);
}

export const arbLayerCase = (lib: boolean): fc.Arbitrary<LayerCase> =>
  fc
    .record({ op: fc.constantFrom<LayerCase['op']>('fullyConnected', 'conv2d'), dtype: fc.constantFrom<Dtype>('uint8', 'int8') })
    .chain(({ op, dtype }) => arbBad(op, dtype, lib).map((bad) => ({ op, dtype, bad })));

/**
 * Graph cases; `referenceFc` only where it is bad: a graph run on WebGPU (Sequential, the CLI's
 * `--backend webgpu`), not runLayers layer by layer.
 */
export const arbGraphCase = (lib: boolean, webgpu: boolean): fc.Arbitrary<GraphCase> =>
  fc
    .record({
      dtype: fc.constantFrom<Dtype>('uint8', 'int8'),
      order: fc.constantFrom<GraphCase['order']>('fc-last', 'elementwise-last'),
      tail: fc.constantFrom<GraphCase['tail']>('add', 'sub', 'mul', 'requantize'),
    })
    .chain(({ dtype, order, tail }) => {
      const bads: fc.Arbitrary<GraphCase['bad']>[] = [
        fc.record({ kind: fc.constant('tailOutput' as const), what: fc.constant('zeroPoint' as const), value: zpOutOf(dtype) }),
        fc.record({ kind: fc.constant('tailOutput' as const), what: fc.constant('scale' as const), value: badScale(lib) }),
        fc
          .record({
            kind: fc.constant('layer' as const),
            layer: fc.constantFrom<'conv' | 'fc'>('conv', 'fc'),
            bad: fc.constant(null),
          })
          .chain((b) =>
            arbBad(b.layer === 'conv' ? 'conv2d' : 'fullyConnected', dtype, lib)
              // zero channels, input shapes and input quantization are the graph input's, not a layer's
              .filter(
                (x) =>
                  x.kind !== 'channels' && !((x.kind === 'shape' || x.kind === 'scale' || x.kind === 'zeroPoint') && x.where === 'input'),
              )
              // weights of the other dtype: only after a layer of this dtype, so that the layer is the one at fault
              .filter((x) => x.kind !== 'mixedDtype' || b.layer === 'fc')
              .map((bad) => ({ kind: 'layer' as const, layer: b.layer, bad })),
          ),
      ];
      if (tail !== 'requantize') {
        bads.push(
          fc.record({ kind: fc.constant('tailActivation' as const), value: badActivation(lib) }),
          fc.record({
            kind: fc.constant('tailKernelPath' as const),
            value: fc.constantFrom<unknown>('optimized', 'reference', 'XNNPACK', 'fast', ''),
          }),
        );
      }
      if (!lib) {
        bads.push(
          fc.record({ kind: fc.constant('graphInput' as const), what: fc.constant('zeroPoint' as const), value: zpOutOf(dtype) }),
          fc.record({ kind: fc.constant('graphInput' as const), what: fc.constant('scale' as const), value: badScale(false) }),
        );
      }
      if (webgpu) bads.push(fc.constant({ kind: 'referenceFc' as const }));
      return fc.oneof(...bads).map((bad) => ({ dtype, order, tail, bad }));
    });

/** Index of each layer of a graph case: conv is first, then fc and the tail in `order`. */
export const graphIndex = (c: Pick<GraphCase, 'order'>) =>
  c.order === 'fc-last' ? { conv: 0, tail: 1, fc: 2 } : { conv: 0, fc: 1, tail: 2 };

/**
 * The field a spoiled layer parameter must be named by. `lib`: the library's terms (`params.` before the
 * layer's parameters, `input` the tensor argument); else the spec's. Several where either is at fault
 * (weights of the other dtype: the weights or the input).
 */
export function layerFields(op: LayerCase['op'], bad: Bad, lib: boolean): string[] {
  const p = lib ? 'params.' : '';
  const w = op === 'conv2d' ? 'filter' : 'weights';
  switch (bad.kind) {
    case 'scale':
      return bad.where === 'weights' || bad.where === 'weightsChannel' ? [`${p}${w}.scale`] : [`${p}${bad.where}.scale`];
    case 'shape':
      return bad.where === 'weights' ? [`${p}${w}.shape`] : ['input.shape'];
    case 'channels':
      return lib ? ['input.shape', `${p}${w}.shape`] : ['input.data', `${w}.data`];
    case 'weightZeroPoint':
      return [`${p}${w}.zeroPoint`];
    case 'mixedDtype':
      return [`${p}${w}.data`, 'input.data'];
    case 'stride':
      return [`${p}stride`];
    case 'activation':
      return [`${p}activation`];
    case 'kernelPath':
      return [`${p}kernelPath`];
    case 'zeroPoint':
      return [`${p}${bad.where}.zeroPoint`];
  }
}

/** The field a spoiled graph must be named by (`lib`: the library's terms, else the spec's). */
export function graphFields(c: GraphCase, lib: boolean): string[] {
  const at = graphIndex(c);
  const p = lib ? '.params' : '';
  const b = c.bad;
  switch (b.kind) {
    case 'tailOutput':
      return [`layers[${at.tail}]${p}.output.${b.what}`];
    case 'tailActivation':
      return [`layers[${at.tail}]${p}.activation`];
    case 'tailKernelPath':
      return [`layers[${at.tail}]${p}.kernelPath`];
    case 'referenceFc':
      return [`layers[${at.fc}]${p}.kernelPath`];
    case 'graphInput':
      return [`input.${b.what}`];
    case 'layer':
      // weights of the other dtype come after a layer of this dtype: the weights are at fault
      return layerFields(b.layer === 'conv' ? 'conv2d' : 'fullyConnected', b.bad, lib)
        .filter((f) => f !== 'input.data')
        .map((f) => `layers[${at[b.layer]}].${f}`);
  }
}

/** Whether `field` is `want` or a part of it (`weights.scale[2]` is a part of `weights.scale`). */
export const namesField = (field: string, want: readonly string[]) =>
  want.some((w) => field === w || field.startsWith(`${w}[`) || field.startsWith(`${w}.`));
