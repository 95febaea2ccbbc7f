// Bad input to the graph API (src/layers/graph.ts planGraph, runLayers, checkLayers) and to conv2d's
// geometry, on the CPU: null where a value belongs is refused naming it (never taken as absent), a
// given quantization must be {scale, zeroPoint} of numbers, options that are not an object, a hole in
// the layer list and a BigInt in a weights shape are InputErrors naming the field, not TypeErrors; so
// are unknown keys, an elementwise operand of more than 4 dimensions, and convGeometry's bad arguments. A
// refusal names the field to change: the layer whose name took a later layer's default, the weights
// (not their data) given as null, the dilation (not the input) that puts a filter tap past 2^31 - 1, an
// input whose name is not an identifier in brackets (`inputs["x.shape"]`).

import { describe, expect, it } from 'vitest';
import { deriveStages } from '../../src/layers/derive.ts';
import { conv2d, convGeometry, convShape } from '../../src/layers/layers.ts';
import { checkLayers } from '../../src/layers/graph.ts';
import { runLayers, type SequentialLayer } from '../../src/layers/sequential.ts';

const q = (scale: number, zeroPoint: number) => ({ scale, zeroPoint });
const x = { data: new Int8Array(6), shape: [2, 3] };
const inputs = { input: q(0.5, 0) };
const fc = (p: object = {}, l: object = {}) =>
  ({
    op: 'fullyConnected',
    ...l,
    params: { weights: { data: new Int8Array(9), shape: [3, 3], scale: 0.03 }, output: q(0.3, 0), ...p },
  }) as SequentialLayer;
const add = (p: object) => ({ op: 'add', inputs: ['layers[0]', 'layers[0]'], params: { output: q(0.6, 0), ...p } }) as SequentialLayer;

/** The field both checkLayers (a throw) and runLayers (a rejection) name for these layers. */
async function fieldOf(layers: SequentialLayer[], opts: object = { inputs }, input: object = x): Promise<string[]> {
  const named = (e: unknown) =>
    (e as { name?: string }).name === 'InputError' ? (e as { field: string }).field : `not an InputError: ${e}`;
  let checked = 'passed';
  try {
    checkLayers(layers, input as never, opts as never);
  } catch (e) {
    checked = named(e);
  }
  const runOpts = opts === null ? null : { ...opts, backend: 'cpu' };
  const ran = await runLayers(layers, input as never, runOpts as never).then(() => 'ran', named);
  return [checked, ran];
}

describe('graph bad input', () => {
  it('null where a value belongs is refused naming it', async () => {
    for (const [layers, field] of [
      [[fc(), add({ activation: null })], 'layers[1].params.activation'],
      [[fc(), fc({}, { name: null })], 'layers[1].name'],
      [[fc(), fc({ input: null })], 'layers[1].params.input'],
      [[fc({ input: null })], 'layers[0].params.input'],
      [[fc(), add({ a: null })], 'layers[1].params.a'],
      [[fc(), { op: 'requantize', params: { output: q(0.6, 0), input: null } }], 'layers[1].params.input'],
    ] as [SequentialLayer[], string][]) {
      const got = await fieldOf(layers);
      // checkLayers plans only; an activation's value is checked where the layer's output range is derived
      expect(got[1], field).toBe(field);
      if (!field.endsWith('activation')) expect(got[0], field).toBe(field);
    }
    for (const v of [Number.NaN, 0, ''])
      expect(await fieldOf([fc(), fc({ input: v })])).toEqual(['layers[1].params.input', 'layers[1].params.input']);
    await expect(runLayers([fc()], x, { inputs, backend: null as never })).rejects.toMatchObject({ field: 'backend' });
  });
  it('options that are not an object, a hole in the layers, a BigInt in a shape or a scale', async () => {
    expect(await fieldOf([fc()], null as never)).toEqual(['options', 'options']);
    // biome-ignore lint/suspicious/noSparseArray: the hole is the case
    expect(await fieldOf([fc(), , fc()] as SequentialLayer[])).toEqual(['layers[1]', 'layers[1]']);
    const img = { data: new Int8Array(32), shape: [1, 4, 4, 2] };
    const conv = (shape: unknown[]) =>
      ({
        op: 'conv2d',
        params: { filter: { data: new Int8Array(6), shape, scale: 0.02 }, padding: 'SAME', output: q(0.25, 0) },
      }) as SequentialLayer;
    expect(await fieldOf([conv([3, 1, 1, 2n])], { inputs }, img)).toEqual([
      'layers[0].params.filter.shape',
      'layers[0].params.filter.shape',
    ]);
    const bigScale = [conv([3, 1, 1, 2]), { op: 'requantize', params: { input: { scale: 1n, zeroPoint: 0 }, output: q(0.3, 0) } }];
    expect(await fieldOf(bigScale as SequentialLayer[], { inputs }, img)).toEqual([
      'layers[1].params.input.scale',
      'layers[1].params.input.scale',
    ]);
  });
  it('an elementwise operand of more than 4 dimensions is refused where its shape came from, before any layer runs', async () => {
    const five = { data: new Int8Array(6), shape: [1, 1, 1, 2, 3] };
    expect(await fieldOf([{ op: 'requantize', params: { output: q(0.3, 0) } }], { inputs }, five)).toEqual(['input.shape', 'input.shape']);
    const fcKeep = fc({ keepNumDims: true }, { name: 'f' });
    const sum = { op: 'add', inputs: ['f', 'f'], params: { output: q(0.6, 0) } } as SequentialLayer;
    expect(await fieldOf([fcKeep, sum], { inputs }, five)).toEqual(['layers[1].inputs[0]', 'layers[1].inputs[0]']);
  });
  it("a key a layer or its params do not have (a misspelling, or another op's) is refused naming it", async () => {
    expect(await fieldOf([fc({ kernalPath: 'reference' })])).toEqual(['layers[0].params.kernalPath', 'layers[0].params.kernalPath']);
    expect(await fieldOf([fc({ stride: [1, 1] })])).toEqual(['layers[0].params.stride', 'layers[0].params.stride']);
    const rq = { op: 'requantize', inputs: ['input', 'input'], params: { output: q(0.3, 0), activation: 'RELU' } };
    expect(await fieldOf([rq as never])).toEqual(['layers[0].inputs', 'layers[0].inputs']);
    // A key whose value is undefined is absent.
    expect(await fieldOf([{ ...rq, inputs: undefined } as never])).toEqual(['layers[0].params.activation', 'layers[0].params.activation']);
  });
  it('convGeometry refuses a padding it does not know (lower case included) or a size that is not an integer >= 1', () => {
    expect(convGeometry(5, 3, 1, 1, 'SAME')).toEqual({ out: 5, pad: 1 });
    for (const [args, field] of [
      [[5, 3, 1, 1, 'same'], 'padding'],
      [[5, 3, 0, 1, 'VALID'], 'stride'],
      [[5, 3, 1, 1.5, 'VALID'], 'dilation'],
      [[0, 3, 1, 1, 'VALID'], 'size'],
    ] as const) {
      expect(() => convGeometry(...(args as unknown as Parameters<typeof convGeometry>)), field).toThrow(
        expect.objectContaining({ name: 'InputError', field }),
      );
    }
  });
  it('deriveStages refuses options that are not an object, and input or weight scales that are not float32 scales', () => {
    const o = {
      op: 'FULLY_CONNECTED',
      path: 'optimized',
      input: q(0.5, 0),
      weightScales: Float32Array.of(0.01),
      weightType: 'int8',
      output: q(0.25, 0),
      channels: 1,
      dtype: 'int8',
      activation: 'NONE',
    } as const;
    expect(deriveStages(o).at(-1)).toEqual({ type: 'saturatingCast', to: 'int8' });
    for (const [bad, field] of [
      [null, 'options'],
      [{ ...o, input: q(0, 0) }, 'input.scale'],
      [{ ...o, weightScales: [0.01] }, 'weightScales'],
      [{ ...o, weightScales: Float32Array.of(0.01, Number.NaN) }, 'weightScales[1]'],
    ] as const) {
      expect(() => deriveStages(bad as never), field).toThrow(expect.objectContaining({ name: 'InputError', field }));
    }
  });
  it("conv2d's stride or dilation given as null is refused naming it", async () => {
    const img = { data: new Int8Array(32), shape: [1, 4, 4, 2] };
    const params = { filter: { data: new Int8Array(6), shape: [3, 1, 1, 2], scale: 0.02 }, input: q(0.5, 0), output: q(0.25, 0) };
    for (const key of ['stride', 'dilation']) {
      await expect(conv2d(img, { ...params, [key]: null } as never, { backend: 'cpu' })).rejects.toMatchObject({ field: `params.${key}` });
    }
  });
});

describe('the field a refusal names is the one to change', () => {
  it('a layer named as a later layer\'s default name ("layers[1]") is blamed, not the later, unnamed layer', async () => {
    expect(await fieldOf([fc({}, { name: 'layers[1]' }), fc({}, { input: 'layers[1]' })])).toEqual(['layers[0].name', 'layers[0].name']);
    // a given name that clashes is still its own layer's
    expect(await fieldOf([fc({}, { name: 'a' }), fc({}, { name: 'a' })])).toEqual(['layers[1].name', 'layers[1].name']);
  });
  it('a duplicate name is the later layer\'s, not a "later layer" read by a layer in between', async () => {
    const rq = (name: string, input: string) => ({ op: 'requantize', name, input, params: { output: q(0.3, 0) } }) as SequentialLayer;
    expect(await fieldOf([fc({}, { name: 'a' }), rq('b', 'a'), rq('a', 'b')])).toEqual(['layers[2].name', 'layers[2].name']);
    // a graph input's name taken again by a layer
    const g = { ...inputs, g: q(0.3, 0) };
    const sum = { op: 'add', inputs: ['layers[0]', 'g'], params: { output: q(0.6, 0) } } as SequentialLayer;
    expect(await fieldOf([fc(), sum, rq('g', 'layers[1]')], { inputs: g }, { input: x, g: x })).toEqual([
      'layers[2].name',
      'layers[2].name',
    ]);
    // a graph input given its quantization on the layer that reads it, then a layer of that name
    const reader = fc({ input: q(0.5, 0) }, { input: 'g' });
    expect(await fieldOf([reader, rq('b', 'layers[0]'), rq('g', 'b')], { inputs }, { input: x, g: x })).toEqual([
      'layers[2].name',
      'layers[2].name',
    ]);
    // a graph input named as an unnamed layer's default name: the input is what to rename
    const byDefault = { ...inputs, 'layers[1]': q(0.3, 0) };
    const reads = { op: 'add', inputs: ['layers[0]', 'layers[1]'], params: { output: q(0.6, 0) } } as SequentialLayer;
    expect(await fieldOf([fc(), reads], { inputs: byDefault }, { input: x, 'layers[1]': x })).toEqual([
      'inputs["layers[1]"]',
      'inputs["layers[1]"]',
    ]);
  });
  it('weights or a filter given as null name the weights, not their data', async () => {
    expect(await fieldOf([fc(), fc({ weights: null })])).toEqual(['layers[1].params.weights', 'layers[1].params.weights']);
    const conv = { op: 'conv2d', params: { filter: null, padding: 'SAME', output: q(0.3, 0) } } as unknown as SequentialLayer;
    const img = { data: new Int8Array(4), shape: [1, 2, 2, 1] };
    expect(await fieldOf([conv], { inputs }, img)).toEqual(['layers[0].params.filter', 'layers[0].params.filter']);
  });
  it('an input named like a field ("x.shape") is named in brackets, never as input x\'s shape', async () => {
    const named = { ...inputs, 'x.shape': q(0.3, 0) };
    const sum = { op: 'add', inputs: ['layers[0]', 'x.shape'], params: { output: q(0.6, 0) } } as SequentialLayer;
    const short = { data: new Int8Array(6), shape: [2, 2] };
    expect(await fieldOf([fc(), sum], { inputs: named }, { input: x, 'x.shape': short })).toEqual([
      'inputs["x.shape"].shape',
      'inputs["x.shape"].shape',
    ]);
    expect(await fieldOf([fc(), sum], { inputs: named }, { input: x, 'x.shape': x, extra: x })).toEqual(['inputs.extra', 'inputs.extra']);
    // a long name whole: two names that begin alike are two fields
    const long = `${'x.'.repeat(60)}a`;
    expect(await fieldOf([fc(), sum], { inputs: named }, { input: x, 'x.shape': x, [long]: x })).toEqual([
      `inputs["${long}"]`,
      `inputs["${long}"]`,
    ]);
  });
  it("a dilation that puts the last tap past 2^31 - 1 is blamed on the dilation, a long input's on the input's shape", async () => {
    const filter = { data: new Int8Array(3), shape: [1, 3, 1, 1], scale: 0.02 };
    const params = { filter, input: q(0.5, 0), output: q(0.25, 0), padding: 'SAME' };
    const img = (h: number) => ({ data: new Int8Array(h), shape: [1, h, 1, 1] });
    const fieldFor = (h: number, dilation: number) =>
      conv2d(img(h), { ...params, dilation: [dilation, 1] } as never, { backend: 'cpu' }).then(
        () => 'ran',
        (e) => e.field,
      );
    // (3 - 1) x 1,073,741,500 is below 2^31 - 1 alone; with the 1000 output rows, past it
    expect(await fieldFor(1000, 1_073_741_500)).toBe('params.dilation');
    expect(await fieldFor(1000, 1_073_741_824)).toBe('params.dilation');
    // 2^31 - 1 rows and an undilated 3-tap filter: the input's size is what to change
    expect(() => convShape([1, 2 ** 31 - 1, 1, 1], { ...params, dilation: [1, 1] } as never)).toThrow(
      expect.objectContaining({ field: 'input.shape' }),
    );
  });
});
