// Unit tier: a sparse array (`[1, , 3]`, which JSON cannot write but a caller's code can) given to the
// library is an InputError naming the hole, in every list it takes: a GEMM's output pipeline (pack ->
// gemm -> output), an elementwise or layer shape, a layer's stride, a Sequential's layers and their
// inputs, verify's kernel ids, a tuning table's entries. Array.prototype.every, some, map and forEach
// skip holes: the pipeline's hole had reached the output stage as a TypeError, a tuning table's had
// passed its check and failed GpuContext.create with one. Each case runs on the CPU backend.

import { describe, expect, it } from 'vitest';
import { elementwise, gemm } from '../../src/api.ts';
import { parseTuningTable, TUNING_FORMAT } from '../../src/kernels/tuning.ts';
import { checkLayers } from '../../src/layers/graph.ts';
import { conv2d, fullyConnected } from '../../src/layers/layers.ts';
import { runLayers, type SequentialLayer } from '../../src/layers/sequential.ts';
import { verifyDevice } from '../../src/verify.ts';
import { rejectedField } from '../support/errors.ts';

/** `[, ...rest]`: an array whose index 0 is a hole, the rest as given. */
function holeFirst<T>(...rest: T[]): T[] {
  const a = new Array<T>(rest.length + 1);
  rest.forEach((x, i) => {
    a[i + 1] = x;
  });
  return a;
}

/** The field of the InputError that p's call rejects (or throws) with; undefined for anything else. */
const fieldOf = (p: () => unknown) => rejectedField(Promise.resolve().then(p));

const cpu = { backend: 'cpu' } as const;
const q = { scale: 0.5, zeroPoint: 0 };

describe('a sparse array is an InputError naming its hole', () => {
  it('a GEMM pipeline', async () => {
    const lhs = { data: Uint8Array.of(1, 2), rows: 1, cols: 2 };
    const rhs = { data: Uint8Array.of(3, 4), rows: 2, cols: 1 };
    const pipeline = holeFirst({ type: 'saturatingCast' as const, to: 'uint8' as const });
    expect(holeFirst(1).length).toBe(2);
    expect(0 in holeFirst(1)).toBe(false);
    expect(await fieldOf(() => gemm({ lhs, rhs, pipeline }, cpu))).toBe('pipeline[0]');
  });

  it('an elementwise shape', async () => {
    const b = { data: Int8Array.of(1, 2), shape: [2], ...q };
    const a = { ...b, shape: holeFirst(2) };
    expect(await fieldOf(() => elementwise({ op: 'add', a, b, output: q }, cpu))).toBe('a.shape');
  });

  it("a layer's input shape, filter shape and stride", async () => {
    const fc = { input: q, weights: { data: Int8Array.of(1, 1), shape: [1, 2], scale: 1 }, output: q };
    expect(await fieldOf(() => fullyConnected({ data: Int8Array.of(1, 2), shape: holeFirst(2) }, fc, cpu))).toBe('input.shape');
    const x = { data: new Int8Array(4), shape: [1, 2, 2, 1] };
    const conv = { input: q, filter: { data: Int8Array.of(1), shape: [1, 1, 1, 1], scale: 1 }, output: q, padding: 'VALID' as const };
    expect((await conv2d(x, conv, cpu)).shape).toEqual([1, 2, 2, 1]);
    expect(await fieldOf(() => conv2d(x, { ...conv, stride: holeFirst(1) as [number, number] }, cpu))).toBe('params.stride');
    const filter = { ...conv.filter, shape: holeFirst(1, 1, 1) };
    expect(await fieldOf(() => conv2d(x, { ...conv, filter }, cpu))).toBe('params.filter.shape');
    expect(await fieldOf(() => conv2d({ ...x, shape: holeFirst(2, 2, 1) }, conv, cpu))).toBe('input.shape');
  });

  it("a Sequential's layers, an elementwise layer's inputs, a weight shape and an input tensor's shape", async () => {
    const fc = { input: q, weights: { data: Int8Array.of(1, 1), shape: [1, 2], scale: 1 }, output: q };
    const x = { data: Int8Array.of(1, 2), shape: [1, 2] };
    const layer = { op: 'fullyConnected', params: fc } as SequentialLayer;
    expect((await runLayers([layer], x, cpu)).shape).toEqual([1, 1]);
    expect(await fieldOf(() => runLayers(holeFirst(layer), x, cpu))).toBe('layers[0]');
    const add = { op: 'add', inputs: holeFirst('input'), params: { output: q } } as unknown as SequentialLayer;
    expect(await fieldOf(() => runLayers([add], x, cpu))).toBe('layers[0].inputs[0]');
    const weights = { ...fc.weights, shape: holeFirst(2) };
    const sparseWeights = { op: 'fullyConnected', params: { ...fc, weights } } as SequentialLayer;
    expect(await fieldOf(() => checkLayers([sparseWeights], x))).toBe('layers[0].params.weights.shape');
    expect(await fieldOf(() => runLayers([layer], { ...x, shape: holeFirst(2) }, cpu))).toBe('input.shape');
  });

  it("verify's kernel ids and a tuning table's entries", async () => {
    expect(await fieldOf(() => verifyDevice({ backend: 'cpu', kernels: holeFirst('cpu-js') }))).toBe('kernels[0]');
    const adapter = { vendor: 'v', architecture: 'a', device: 'd', description: 'x' };
    const entry = { class: 'square', shape: { M: 64, N: 64, K: 64 }, kernel: { family: 'registry', id: 'dot4-32x32' } };
    expect(parseTuningTable({ format: TUNING_FORMAT, adapter, entries: [entry] }).entries.length).toBe(1);
    expect(await fieldOf(() => parseTuningTable({ format: TUNING_FORMAT, adapter, entries: holeFirst(entry) }))).toBe('tuning.entries[0]');
  });
});
