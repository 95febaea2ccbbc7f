// Unit tier: a misspelt key is an InputError naming it, in every spec the library takes from plain
// JavaScript (the problem of pack -> gemm -> output, its operands, stages and bit depth; an elementwise
// problem; a layer's params at every level; the CLI's specs and runLayers already refused them), where it
// had been ignored and its default used: `rhsZeropoint` ran with zero point 0, `activaton` without RELU,
// `strides` with stride 1. Each case here runs on the CPU backend; the same checks serve every backend.

import { describe, expect, it } from 'vitest';
import { elementwise, gemm } from '../../src/api.ts';
import { InputError } from '../../src/errors.ts';
import { conv2d, fullyConnected } from '../../src/layers/layers.ts';
import { checkLayers } from '../../src/layers/graph.ts';
import { runLayers, type SequentialLayer } from '../../src/layers/sequential.ts';
import { parseNpy, serializeNpy } from '../../src/io/npy.ts';
import { referenceGemm } from '../../src/reference/gemm.ts';
import { cpuGemm } from '../../src/kernels/cpu-js/kernel.ts';
import { prepackCpu } from '../../src/kernels/cpu-wasm/kernel.ts';
import { warmupProblem } from '../../src/scheduler/warmup.ts';
import type { GemmProblem } from '../../src/types.ts';

/** The field of the InputError `p` rejects with. */
async function refused(p: () => Promise<unknown>): Promise<string> {
  let e: unknown;
  try {
    await p();
  } catch (caught) {
    e = caught;
  }
  expect(e, 'expected an InputError').toBeInstanceOf(InputError);
  expect((e as Error).message).toMatch(/unknown key; known: /);
  return (e as InputError).field;
}

const problem = (): GemmProblem => ({
  lhs: { data: Uint8Array.of(200, 201, 202, 203), rows: 1, cols: 4 },
  rhs: { data: Int8Array.of(100, 100, 100, 100), rows: 4, cols: 1 },
  rhsZeroPoint: 100,
});
const cpu = { backend: 'cpu' } as const;
const loose = <T>(x: T, extra: Record<string, unknown>) => ({ ...x, ...extra }) as T;

describe('a GEMM problem', () => {
  it('runs as written, and names a misspelt key at any level', async () => {
    expect([...(await gemm(problem(), cpu)).data]).toEqual([0]);
    const p = problem();
    const cases: [GemmProblem, string][] = [
      [loose({ ...p, rhsZeroPoint: undefined }, { rhsZeropoint: 100 }), 'rhsZeropoint'],
      [loose(p, { dstorder: 'col-major' }), 'dstorder'],
      [{ ...p, lhs: loose(p.lhs, { ordr: 'col-major' }) }, 'lhs.ordr'],
      [{ ...p, bitDepth: loose({ lhs: 8, rhs: 8, rounding: 'nearest' }, { roundng: 'nearest' }) }, 'bitDepth.roundng'],
      [
        {
          ...p,
          pipeline: [
            loose(
              { type: 'scaleInt32ByFixedPointAndExponent', multiplier: 1 << 30, exponent: 0, offsetAfterShift: 0 },
              { roundng: 'single' },
            ),
          ],
        },
        'pipeline[0].roundng',
      ],
      [{ ...p, pipeline: [loose({ type: 'clamp', min: 0, max: 1 }, { foo: 1 })] }, 'pipeline[0].foo'],
      // A key that is not an identifier is named whole, never as an empty field or as another one.
      [loose(p, { '': 1 }), '[""]'],
      [loose(p, { 'lhs.rows': 2 }), '["lhs.rows"]'],
      [{ ...p, lhs: loose(p.lhs, { ' ': 1 }) }, 'lhs[" "]'],
      // and a key of a megabyte is cut, its length said
      [loose(p, { ['k'.repeat(2 ** 20)]: 1 }), `["${'k'.repeat(200)}"... (1048576 characters)]`],
    ];
    for (const [q, field] of cases) expect(await refused(() => gemm(q, cpu))).toBe(field);
  });
  it('a typed array or a Promise given as an operand is said to be one, not a misspelling', async () => {
    const typed = gemm({ ...problem(), lhs: new Uint8Array(4) as never }, cpu);
    await expect(typed).rejects.toThrow(/^lhs: expected uint8 or int8 data/);
    const pending = gemm({ ...problem(), rhs: Promise.resolve(problem().rhs) as never }, cpu);
    await expect(pending).rejects.toThrow(/^rhs: a Promise, not an operand: await it/);
  });
  it('a prepacked operand given to cpuGemm or a reference is said to be one, with what runs it', async () => {
    const p = problem();
    const packed = await prepackCpu(p.rhs);
    // a GPU one (ctx.prepack's shape: its packFormat and buffers) is told to go to its context
    const onGpu = { side: 'rhs', rows: 1, cols: 1, type: 'uint8', packFormat: 'dot4', bits: 8, destroy: () => {} };
    for (const run of [cpuGemm, referenceGemm]) {
      expect(() => run({ ...p, rhs: packed as never })).toThrow(
        "rhs: prepacked for the CPU path (prepackCpu): run it with gemm(problem, { backend: 'cpu' })",
      );
      expect(() => run({ ...p, rhs: onGpu as never })).toThrow(
        "rhs: prepacked on a GpuContext (ctx.prepack): run it with that context's gemm",
      );
    }
    expect([...(await gemm({ ...p, rhs: packed as never }, cpu)).data]).toEqual([...referenceGemm(p).data]);
    packed.destroy();
  });
  it('a warmup shape names a misspelt key (the wrong pipeline would be compiled)', () => {
    expect((warmupProblem({ m: 1, n: 2, k: 3 }, 'items[0]').lhs as { rows: number }).rows).toBe(1);
    expect(() => warmupProblem({ m: 1, n: 2, k: 3, pipline: [] } as never, 'items[0]')).toThrow(/^items\[0\]\.pipline: unknown key/);
  });
  it('an undefined value is an absent key', async () => {
    expect([...(await gemm(loose(problem(), { pipelin: undefined }), cpu)).data]).toEqual([0]);
  });
});

describe('an elementwise problem', () => {
  const add = () => ({
    op: 'add' as const,
    a: { data: Int8Array.of(1, 2), shape: [2], scale: 0.5, zeroPoint: 0 },
    b: { data: Int8Array.of(3, 4), shape: [2], scale: 0.5, zeroPoint: 0 },
    output: { scale: 0.5, zeroPoint: 0 },
  });
  it('names a misspelt key of the problem, an input or the output', async () => {
    expect((await elementwise(add(), cpu)).data.length).toBe(2);
    expect(await refused(() => elementwise(loose(add(), { kernelpath: 'xnnpack' }), cpu))).toBe('kernelpath');
    expect(await refused(() => elementwise({ ...add(), a: loose(add().a, { fortranorder: true }) }, cpu))).toBe('a.fortranorder');
    expect(await refused(() => elementwise({ ...add(), output: loose(add().output, { mn: -1 }) }, cpu))).toBe('output.mn');
  });
});

describe('a layer', () => {
  const input = { data: Int8Array.of(-100, 50, 100, -20), shape: [1, 4] };
  const fc = () => ({
    input: { scale: 0.1, zeroPoint: 0 },
    weights: { data: Int8Array.of(-1, -2, -3, -4), shape: [1, 4], scale: 0.5 },
    output: { scale: 0.1, zeroPoint: 0 },
  });
  const x = { data: new Int8Array(16), shape: [1, 4, 4, 1] };
  const conv = () => ({
    input: { scale: 0.1, zeroPoint: 0 },
    filter: { data: Int8Array.of(1), shape: [1, 1, 1, 1], scale: 0.5 },
    output: { scale: 0.1, zeroPoint: 0 },
    padding: 'VALID' as const,
  });
  it('fullyConnected and conv2d name a misspelt key of the params, the weights, a quantization or the input', async () => {
    expect([...(await fullyConnected(input, { ...fc(), activation: 'RELU' }, cpu)).data]).toEqual([0]);
    expect(await refused(() => fullyConnected(input, loose(fc(), { activaton: 'RELU' }), cpu))).toBe('params.activaton');
    expect(await refused(() => fullyConnected(input, loose(fc(), { baias: Int32Array.of(1) }), cpu))).toBe('params.baias');
    const zp = { ...fc(), weights: loose(fc().weights, { zeropoint: 3 }) };
    expect(await refused(() => fullyConnected(input, zp, cpu))).toBe('params.weights.zeropoint');
    const out = { ...fc(), output: loose(fc().output, { zeroPoin: 3 }) };
    expect(await refused(() => fullyConnected(input, out, cpu))).toBe('params.output.zeroPoin');
    expect(await refused(() => fullyConnected(loose(input, { scale: 0.1 }), fc(), cpu))).toBe('input.scale');
    expect((await conv2d(x, { ...conv(), stride: [2, 2] }, cpu)).shape).toEqual([1, 2, 2, 1]);
    expect(await refused(() => conv2d(x, loose(conv(), { strides: [2, 2] }), cpu))).toBe('params.strides');
    const filter = { ...conv(), filter: loose(conv().filter, { scal: 0.5 }) };
    expect(await refused(() => conv2d(x, filter, cpu))).toBe('params.filter.scal');
  });
  it('runLayers names them at the same depth', async () => {
    const zp = { ...fc(), weights: loose(fc().weights, { zeropoint: 3 }) };
    const field = await refused(() => runLayers([{ op: 'fullyConnected', params: zp }], input, cpu));
    expect(field).toBe('layers[0].params.weights.zeropoint');
  });
});

// The library's results as the next call's inputs: their dtype (checked against the data) and backend
// are keys of the result, not misspellings (a review found the first strict check refused them).
describe('a result of the library given back as an input', () => {
  const q = { scale: 0.5, zeroPoint: 0 };
  it('a GEMM result as the next lhs, a reference result too; a dtype that is not the data is named', async () => {
    const first = { ...problem(), pipeline: [{ type: 'saturatingCast' as const, to: 'uint8' as const }] };
    const h = await gemm(first, cpu);
    expect(h.dtype).toBe('uint8');
    const next = { lhs: h as never, rhs: { data: Uint8Array.of(2), rows: 1, cols: 1 } };
    expect([...(await gemm(next, cpu)).data]).toEqual([0]);
    expect([...(await gemm({ ...next, lhs: referenceGemm(first) as never }, cpu)).data]).toEqual([0]);
    const lying = { ...next, lhs: { ...problem().lhs, dtype: 'int8' } as never };
    await expect(gemm(lying, cpu)).rejects.toThrow(/^lhs\.dtype: "int8" does not match the data \(uint8\)/);
  });
  it('an elementwise result as the next elementwise input and as a layer input; parseNpy spread into a tensor', async () => {
    const a = { data: Int8Array.of(1, 2), shape: [2], ...q };
    const sum = await elementwise({ op: 'add', a, b: a, output: q }, cpu);
    expect(sum.dtype).toBe('int8');
    const again = await elementwise({ op: 'add', a: { ...sum, ...q }, b: a, output: q }, cpu);
    expect([...again.data]).toEqual([3, 6]); // (2, 4) + (1, 2)
    const fc = { input: q, weights: { data: Int8Array.of(1, 1), shape: [1, 2], scale: 1 }, output: q };
    expect((await fullyConnected({ ...sum, shape: [1, 2] }, fc, cpu)).shape).toEqual([1, 1]);
    const npy = parseNpy(serializeNpy({ dtype: 'int8', shape: [2], fortranOrder: false, data: Int8Array.of(3, 4) }));
    expect([...(await elementwise({ op: 'add', a: { ...npy, ...q } as never, b: a, output: q }, cpu)).data]).toEqual([4, 6]);
  });
  it('graph inputs are checked once, under their own field, by checkLayers and runLayers alike', async () => {
    const fc = { input: q, weights: { data: Int8Array.of(1, 1), shape: [1, 2], scale: 1 }, output: q };
    const layers = [{ op: 'fullyConnected', params: fc }] as SequentialLayer[];
    const x = { data: Int8Array.of(1, 2), shape: [1, 2], dtype: 'int8', backend: 'cpu' };
    expect((await runLayers(layers, x, cpu)).shape).toEqual([1, 1]);
    const odd = { ...x, foo: 1 };
    expect(() => checkLayers(layers, odd)).toThrow(/^input\.foo: unknown key/);
    await expect(runLayers(layers, odd, cpu)).rejects.toThrow(/^input\.foo: unknown key/);
    const named = [{ op: 'fullyConnected', input: 'x', params: fc }] as SequentialLayer[];
    await expect(runLayers(named, { x: odd }, cpu)).rejects.toThrow(/^inputs\.x\.foo: unknown key/);
  });
  it("an elementwise layer's quantizations are checked as a GEMM layer's", async () => {
    const layers = [{ op: 'add', inputs: ['input', 'input'], params: { output: { ...q, zeroPoin: 3 } } }] as unknown as SequentialLayer[];
    const x = { data: Int8Array.of(1, 2), shape: [2] };
    expect(await refused(() => runLayers(layers, x, cpu))).toBe('layers[0].params.output.zeroPoin');
  });
});
