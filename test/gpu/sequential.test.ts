// GPU tier: Sequential (src/layers/sequential.ts), a chain of FULLY_CONNECTED layers on one GpuContext
// with prepacked weights and the intermediate activations kept on the GPU, equals running the layers
// one by one with fullyConnected() on the CPU, bit for bit, for the XNNPACK and optimized paths, int8
// per-channel and legacy uint8; bad chains are InputErrors naming the field. Such a chain runs through a
// chain plan (src/scheduler/chain-plan.ts): a chain of GEMMs, each reading the previous dst on the GPU,
// equals the reference GEMMs one by one, bit for bit, on its first call (which makes the plan) and on the
// calls that replay it; a replay is one command buffer, one submit and one map, and creates no buffer and
// no bind group. A changed lhs shape, a zero point, a multiplier/shift, a per-channel vector edited in
// place (of any GEMM of the chain), or another rhs makes a new plan, never a stale one. One token through
// a Sequential reuses its plan across tokens, re-made when the input's shape changes; it reads its layers'
// parameters once, at create() (a bias edited later is not seen, as weights edited later are not); a
// destroyed Sequential, or one whose context is gone, refuses to run.

import { afterAll, describe, expect, it, test, vi } from 'vitest';
import { DeviceLostError, InputError } from '../../src/errors.ts';
import { fullyConnected, type FullyConnectedParams, type KernelPath } from '../../src/layers/layers.ts';
import { runLayers, Sequential, type SequentialLayer } from '../../src/layers/sequential.ts';
import { referenceGemm } from '../../src/reference/gemm.ts';
import { type ChainLayer, type GemmTrace, GpuContext, type PackedOperand } from '../../src/scheduler/context.ts';
import { TRACE_STEPS } from '../../src/scheduler/trace.ts';
import type { GemmProblem, GemmResult, Operand, OutputStage } from '../../src/types.ts';
import { Rng } from '../../tools/random.ts';
import { getGpu, releaseGpu } from './gpu-env.ts';

const gpu = await getGpu();
afterAll(releaseGpu);

function chain(r: Rng, dims: number[], type: 'int8' | 'uint8', path: KernelPath): FullyConnectedParams[] {
  const q = () => ({
    scale: Math.fround(0.01 + (r.next() % 1000) / 10000),
    zeroPoint: type === 'uint8' ? r.next() % 256 : (r.next() % 256) - 128,
  });
  let input = q();
  return dims.slice(1).map((N, i) => {
    const K = dims[i];
    const output = q();
    const data =
      type === 'uint8'
        ? Uint8Array.from({ length: N * K }, () => r.next() % 256)
        : Int8Array.from({ length: N * K }, () => (r.next() % 255) - 127);
    const p: FullyConnectedParams = {
      input,
      weights: {
        data,
        shape: [N, K],
        scale: type === 'int8' ? Float32Array.from({ length: N }, () => Math.fround(0.001 + (r.next() % 100) / 5000)) : 0.004,
        zeroPoint: type === 'uint8' ? r.next() % 256 : 0,
      },
      bias: Int32Array.from({ length: N }, () => (r.next() % 4001) - 2000),
      output,
      activation: i === dims.length - 2 ? 'NONE' : 'RELU',
      kernelPath: path,
    };
    input = output;
    return p;
  });
}

describe.skipIf(!gpu)('Sequential on WebGPU == the layers one by one on the CPU', () => {
  for (const type of ['int8', 'uint8'] as const)
    for (const path of ['xnnpack', 'optimized'] as const)
      test(`3 FC layers, ${type}, ${path}`, async () => {
        const r = new Rng(type === 'int8' ? 5 : 6);
        const params = chain(r, [37, 50, 29, 18], type, path);
        const M = 9;
        const x =
          type === 'uint8'
            ? Uint8Array.from({ length: M * 37 }, () => r.next() % 256)
            : Int8Array.from({ length: M * 37 }, () => (r.next() % 256) - 128);
        const ctx = await GpuContext.create({ device: gpu!.device });
        const seq = await Sequential.create(
          ctx,
          params.map((p) => ({ op: 'fullyConnected' as const, params: p })),
        );
        const got = await seq.run({ data: x, shape: [M, 37] });
        let want = { data: x as Uint8Array | Int8Array, shape: [M, 37] };
        for (const p of params) want = await fullyConnected(want, p, { backend: 'cpu' });
        expect(got.shape).toEqual([M, 18]);
        expect(Array.from(got.data)).toEqual(Array.from(want.data));
        // a second run reuses the prepacked weights
        expect(Array.from((await seq.run({ data: x, shape: [M, 37] })).data)).toEqual(Array.from(want.data));
        seq.destroy();
        ctx.destroy();
      });

  test('a chain whose quantization does not follow is refused, naming the field', async () => {
    const r = new Rng(7);
    const params = chain(r, [8, 6, 4], 'int8', 'xnnpack');
    params[1].input = { scale: 0.5, zeroPoint: 0 };
    const ctx = await GpuContext.create({ device: gpu!.device });
    const e = await Sequential.create(
      ctx,
      params.map((p) => ({ op: 'fullyConnected' as const, params: p })),
    ).catch((x) => x);
    expect(e).toBeInstanceOf(InputError);
    expect((e as InputError).field).toBe('layers[1].params.input');
    ctx.destroy();
  });
});

const bytes = (r: Rng, n: number) => Uint8Array.from({ length: n }, () => r.next() % 256);

/** The weights each prepacked rhs was made from (the reference multiplies by them). */
const weightsOf = new Map<PackedOperand, Operand>();
async function prepackWeights(ctx: GpuContext, weights: Operand): Promise<PackedOperand> {
  const rhs = await ctx.prepack('rhs', weights);
  weightsOf.set(rhs, weights);
  return rhs;
}

/** GEMM layer i of a chain (its rhs still to prepack): [K, N] uint8 weights, a per-channel zero point, bias, requantization to uint8. */
function gemmLayer(r: Rng, K: number, N: number): { layer: Omit<ChainLayer, 'rhs'>; weights: Operand } {
  const pipeline: OutputStage[] = [
    { type: 'bias', axis: 'col', values: Int32Array.from({ length: N }, () => (r.next() % 40001) - 20000) },
    { type: 'scaleInt32ByFixedPointAndExponent', multiplier: 1518500250, exponent: -10, offsetAfterShift: 128 },
    { type: 'saturatingCast', to: 'uint8' },
  ];
  const weights: Operand = { data: bytes(r, K * N), rows: K, cols: N, order: 'row-major' };
  return { weights, layer: { lhsZeroPoint: 7, rhsZeroPoint: Int32Array.from({ length: N }, () => r.next() % 256), pipeline } };
}

/** The chain's result by the reference GEMMs one by one. */
function reference(lhs: Operand, layers: ChainLayer[]): number[] {
  let x = lhs;
  for (const l of layers) {
    const p: GemmProblem = { ...l, lhs: x, rhs: weightsOf.get(l.rhs)! };
    const d = referenceGemm(p);
    x = { data: d.data as Uint8Array, rows: d.rows, cols: d.cols, order: 'row-major' };
  }
  return Array.from(x.data);
}

describe.skipIf(!gpu)('chain plans', () => {
  it('a chain that is a prefix of a planned one is not served by its plan', async () => {
    const ctx = await GpuContext.create({ device: gpu!.device });
    const r = new Rng(32);
    const dims = [24, 40, 16];
    const layers: ChainLayer[] = [];
    for (const [i, N] of dims.slice(1).entries()) {
      const { layer, weights } = gemmLayer(r, dims[i], N);
      layers.push({ ...layer, rhs: await prepackWeights(ctx, weights) });
    }
    const plans: string[] = [];
    const run = async (ls: ChainLayer[], what: string) => {
      const lhs = { data: bytes(r, 24), rows: 1, cols: 24 } as Operand;
      const got = await ctx.gemmChain({ lhs, layers: ls }, undefined, { onTrace: (t) => plans.push(t.plan) });
      expect(Array.from(got.data), what).toEqual(reference(lhs, ls));
    };
    await run(layers, 'two GEMMs');
    await run(layers.slice(0, 1), 'the first GEMM alone');
    expect(plans).toEqual(['new', 'new']);
    ctx.destroy();
  });

  it('replays a chain bit-exact in one submit and one map, and re-plans any changed GEMM', async () => {
    const ctx = await GpuContext.create({ device: gpu!.device });
    const r = new Rng(31);
    const dims = [24, 40, 16, 36];
    const layers: ChainLayer[] = [];
    for (const [i, N] of dims.slice(1).entries()) {
      const { layer, weights } = gemmLayer(r, dims[i], N);
      layers.push({ ...layer, rhs: await prepackWeights(ctx, weights) });
    }
    const plans: string[] = [];
    const onTrace = (t: GemmTrace) => plans.push(t.plan);
    const run = async (lhs: Operand, ls = layers, what = '') => {
      const got = await ctx.gemmChain({ lhs, layers: ls }, undefined, { onTrace });
      expect(Array.from(got.data), what).toEqual(reference(lhs, ls));
    };
    const token = (M = 1) => ({ data: bytes(r, M * 24), rows: M, cols: 24 }) as Operand;
    for (let i = 0; i < 3; i++) await run(token(), layers, `token ${i}`);
    expect(plans.splice(0)).toEqual(['new', 'hit', 'hit']);

    // A replay: one command buffer, one submit, one map; no buffer, no bind group made.
    const device = gpu!.device;
    const queue = Object.getPrototypeOf(device.queue) as GPUQueue;
    const submit = queue.submit;
    const probe = device.createBuffer({ size: 4, usage: GPUBufferUsage.MAP_READ });
    const bufferProto = Object.getPrototypeOf(probe) as GPUBuffer;
    probe.destroy();
    const mapAsync = bufferProto.mapAsync;
    const counts = { submits: 0, commandBuffers: 0, maps: 0 };
    queue.submit = function (this: GPUQueue, buffers: Iterable<GPUCommandBuffer>) {
      counts.submits++;
      counts.commandBuffers += [...buffers].length;
      return submit.call(this, buffers);
    };
    bufferProto.mapAsync = function (this: GPUBuffer, ...args: Parameters<GPUBuffer['mapAsync']>) {
      counts.maps++;
      return mapAsync.apply(this, args);
    };
    const created = [vi.spyOn(device, 'createBuffer'), vi.spyOn(device, 'createBindGroup')];
    try {
      await run(token(), layers, 'counted');
    } finally {
      queue.submit = submit;
      bufferProto.mapAsync = mapAsync;
      for (const s of created) s.mockRestore();
    }
    expect(counts).toEqual({ submits: 1, commandBuffers: 1, maps: 1 });
    expect(created.map((s) => s.mock.calls.length)).toEqual([0, 0]);
    expect(plans.splice(0)).toEqual(['hit']);

    // Each change, in any GEMM of the chain, makes a new plan; the unchanged chain then hits again.
    const zp = (layers[1].rhsZeroPoint as Int32Array).slice();
    const edited = layers.map((l, i) => (i === 1 ? { ...l, rhsZeroPoint: zp } : l));
    await run(token(), edited, 'equal copy of a zero-point vector');
    zp[3] ^= 0x55;
    await run(token(), edited, 'zero-point vector edited in place');
    const bias = layers[2].pipeline![0] as Extract<OutputStage, { type: 'bias' }>;
    bias.values[5] += 999;
    await run(token(), layers, 'last bias edited in place');
    expect(plans.splice(0)).toEqual(['hit', 'new', 'new']);
    const scale = <L extends ChainLayer>(l: L, multiplier: number, exponent: number): L => ({
      ...l,
      pipeline: l.pipeline!.map((s) => (s.type === 'scaleInt32ByFixedPointAndExponent' ? { ...s, multiplier, exponent } : s)),
    });
    await run(token(), [layers[0], scale(layers[1], 1518500251, -10), layers[2]], 'multiplier');
    await run(token(), [scale(layers[0], 1518500250, -9), layers[1], layers[2]], 'shift');
    await run(token(), [{ ...layers[0], lhsZeroPoint: 8 }, layers[1], layers[2]], 'lhs zero point');
    await run(token(2), layers, 'M = 2');
    const other = { ...layers[2], rhs: await prepackWeights(ctx, weightsOf.get(layers[2].rhs)!) };
    await run(token(), [layers[0], layers[1], other], 'another rhs');
    await run(token(2), layers, 'M = 2 again');
    expect(plans.splice(0)).toEqual(['new', 'new', 'new', 'new', 'new', 'hit']);

    // A destroyed rhs: the plans that used it go with it (at once, not at the next chain call); refused, naming the GEMM.
    const chainPlans = () => (ctx as unknown as { resources: { plans: { chains: { size: number } } } }).resources.plans.chains.size;
    const before = chainPlans();
    other.rhs.destroy();
    const first = layers[0];
    const held = await ctx.gemmOnGpu({ ...first, lhs: token() }); // the destroy runs once the device is free: before this call
    ctx.releaseMatrix(held);
    expect(chainPlans()).toBe(before - 1); // the one plan with `other` (M = 1)
    const e = await ctx.gemmChain({ lhs: token(), layers: [layers[0], layers[1], other] }).catch((x) => x);
    expect(e).toBeInstanceOf(InputError);
    expect((e as InputError).field).toBe('layers[2].rhs');

    // A layer's rhs destroyed while its chain runs (after the call began, at its first GEMM's submit, before
    // the last GEMM is encoded): the call ends exact, since destroy() frees the buffers only once the calls
    // already running are done; the next call is refused, and no plan is kept.
    const late = { ...layers[2], rhs: await prepackWeights(ctx, weightsOf.get(layers[2].rhs)!) };
    const plansBeforeLate = chainPlans();
    const lateLayers = [layers[0], layers[1], late];
    const lateToken = token(3);
    queue.submit = function (this: GPUQueue, buffers: Iterable<GPUCommandBuffer>) {
      late.rhs.destroy();
      return submit.call(this, buffers);
    };
    let lateResult: GemmResult;
    try {
      lateResult = await ctx.gemmChain({ lhs: lateToken, layers: lateLayers });
    } finally {
      queue.submit = submit;
    }
    expect(Array.from(lateResult.data), 'rhs destroyed during the call').toEqual(reference(lateToken, lateLayers));
    const refused = await ctx.gemmChain({ lhs: lateToken, layers: lateLayers }).catch((x) => x);
    expect((refused as InputError).field).toBe('layers[2].rhs');
    expect(chainPlans()).toBe(plansBeforeLate);

    // A chain's lhs is uploaded by its plan: a GpuMatrix is an InputError naming lhs, before any GPU work.
    const onGpu = await ctx.gemmOnGpu({ ...first, lhs: token() });
    const asLhs = await ctx.gemmChain({ lhs: onGpu as never, layers: layers.slice(1) }).catch((x) => x);
    expect(asLhs).toBeInstanceOf(InputError);
    expect((asLhs as InputError).field).toBe('lhs');
    ctx.releaseMatrix(onGpu);
    // A GEMM's error names its layer: here GEMM 1's lhs, GEMM 0's int32 dst (no cast at the end of its stages).
    const uncast = { ...layers[0], pipeline: layers[0].pipeline!.slice(0, -1) };
    const named = await ctx.gemmChain({ lhs: token(), layers: [uncast, layers[1], layers[2]] }).catch((x) => x);
    expect(named).toBeInstanceOf(InputError);
    expect((named as InputError).field).toBe('layers[1].lhs.dtype');
    expect((named as InputError).message).toMatch(/GEMM 1's lhs is GEMM 0's dst/);
    ctx.destroy();
  });
});

/** A chain of FULLY_CONNECTED layers of the given widths, uint8, legacy per-tensor weights. */
function fcChain(r: Rng, dims: number[]): FullyConnectedParams[] {
  let input = { scale: 0.02, zeroPoint: 128 };
  return dims.slice(1).map((N, i) => {
    const output = { scale: Math.fround(0.02 + (r.next() % 100) / 10000), zeroPoint: 100 + (r.next() % 50) };
    const p: FullyConnectedParams = {
      input,
      weights: { data: bytes(r, N * dims[i]), shape: [N, dims[i]], scale: 0.0005, zeroPoint: 120 },
      bias: Int32Array.from({ length: N }, () => (r.next() % 4001) - 2000),
      output,
      activation: i === dims.length - 2 ? 'NONE' : 'RELU',
    };
    input = output;
    return p;
  });
}

describe.skipIf(!gpu)('Sequential.run of one token through a chain plan', () => {
  it('reuses the plan across tokens, re-plans a changed shape, reads its parameters once, and refuses once destroyed', async () => {
    const ctx = await GpuContext.create({ device: gpu!.device, timestamps: true });
    const r = new Rng(32);
    const params = fcChain(r, [32, 48, 48, 24, 16]);
    const seq = await Sequential.create(
      ctx,
      params.map((p) => ({ op: 'fullyConnected' as const, params: p })),
    );
    const frozen = params.map((p) => ({ ...p, bias: p.bias!.slice() })); // the parameters as create() read them
    const plans: string[] = [];
    const onTrace = (t: GemmTrace) => plans.push(t.plan);
    const check = async (M: number, what: string) => {
      const x = { data: bytes(r, M * 32), shape: [M, 32] };
      const timing = { gpuMs: null as number | null };
      const got = await seq.run(x, { onTrace, timing });
      let want = { data: x.data as Uint8Array | Int8Array, shape: x.shape };
      for (const p of frozen) want = await fullyConnected(want, p, { backend: 'cpu' });
      expect(got.shape, what).toEqual([M, 16]);
      expect(Array.from(got.data), what).toEqual(Array.from(want.data));
      expect(timing.gpuMs, what).toBeTypeOf('number'); // SwiftShader offers timestamp-query
    };
    for (let i = 0; i < 3; i++) await check(1, `token ${i}`);
    expect(plans.splice(0)).toEqual(['new', 'hit', 'hit']);
    // the last layer's bias edited in place after create() (+8 at its output scale): not seen, as an edit
    // of its weights or scales would not be
    for (const j of params[3].bias!.keys()) params[3].bias![j] += 16000;
    await check(1, 'bias edited after create');
    await check(3, 'three tokens');
    await check(1, 'one token again');
    expect(plans.splice(0)).toEqual(['hit', 'new', 'hit']);
    seq.destroy();
    const destroyed = await seq.run({ data: bytes(r, 32), shape: [1, 32] }).catch((x) => x);
    expect(destroyed).toBeInstanceOf(InputError);
    expect((destroyed as InputError).message).toMatch(/destroyed/);
    const again = await Sequential.create(ctx, [{ op: 'fullyConnected', params: params[0] }]); // one layer: a chain of one
    expect(Array.from((await again.run({ data: bytes(r, 32), shape: [1, 32] })).data)).toHaveLength(48);
    ctx.destroy();
    await expect(again.run({ data: bytes(r, 32), shape: [1, 32] })).rejects.toBeInstanceOf(DeviceLostError);
  });
});

const u8 = (n: number, s: number) => Uint8Array.from({ length: n }, (_, i) => (i * s + 7) & 255);

/** A conv, an add and an FC: a graph, not a chain of FC layers, so each run goes layer by layer. */
function convAddFc(): { layers: SequentialLayer[]; opts: { inputs: { input: { scale: number; zeroPoint: number } } } } {
  const q = (s: number, z: number) => ({ scale: Math.fround(s), zeroPoint: z });
  const layers: SequentialLayer[] = [
    {
      op: 'conv2d',
      name: 'conv',
      params: {
        filter: { data: u8(4 * 9 * 4, 3), shape: [4, 3, 3, 4], scale: Math.fround(0.002), zeroPoint: 120 },
        bias: new Int32Array(4),
        padding: 'SAME',
        output: q(0.05, 100),
        kernelPath: 'optimized',
      },
    },
    { op: 'add', name: 'sum', inputs: ['conv', 'input'], params: { output: q(0.06, 90) } },
    {
      op: 'fullyConnected',
      params: {
        weights: { data: u8(7 * 100, 5), shape: [7, 100], scale: Math.fround(0.002), zeroPoint: 110 },
        bias: new Int32Array(7),
        output: q(0.1, 128),
        kernelPath: 'optimized',
      },
    },
  ];
  return { layers, opts: { inputs: { input: q(0.02, 128) } } };
}

describe.skipIf(!gpu)('a Sequential destroyed while its runs wait', () => {
  it('fails those runs naming sequential, as a later run, never a field the caller did not pass', async () => {
    const ctx = await GpuContext.create({ device: gpu!.device });
    const { layers, opts } = convAddFc();
    const seq = await Sequential.create(ctx, layers, opts);
    const runs = Array.from({ length: 4 }, (_, i) => seq.run({ data: u8(100, i + 1), shape: [1, 5, 5, 4] }));
    seq.destroy(); // the runs have begun (each checked the Sequential live), none has its weights yet
    const settled = await Promise.allSettled(runs);
    const rejected = settled.filter((r) => r.status === 'rejected');
    expect(rejected.length).toBeGreaterThan(0);
    for (const r of rejected) expect(r.reason).toMatchObject({ name: 'InputError', field: 'sequential' });
    await expect(seq.run({ data: u8(100, 1), shape: [1, 5, 5, 4] })).rejects.toMatchObject({ field: 'sequential' });
    ctx.destroy();
  });
});

// A graph that is not a chain of FC layers runs layer by layer: `onTrace` receives one trace per GEMM
// layer (gemmOnGpu for an intermediate one, whose map and copyOut are 0; gemm for the last), as
// QGEMM_TRACE=1 prints them; it had received none.
describe.skipIf(!gpu)("a graph's run traces each GEMM layer", () => {
  it('two traces per run of conv -> add -> FC, each whole, and the result as on the CPU', async () => {
    const ctx = await GpuContext.create({ device: gpu!.device });
    const { layers, opts } = convAddFc();
    const seq = await Sequential.create(ctx, layers, opts);
    const traces: GemmTrace[] = [];
    for (let run = 0; run < 2; run++) {
      const x = { data: u8(100, run + 1), shape: [1, 5, 5, 4] };
      const got = await seq.run(x, { onTrace: (t) => traces.push(t) });
      const want = await runLayers(layers, x, { ...opts, backend: 'cpu' });
      expect(Array.from(got.data), `run ${run}`).toEqual(Array.from(want.data));
    }
    expect(traces).toHaveLength(4);
    for (const [i, t] of traces.entries()) {
      expect(t.steps.map((s) => s.step)).toEqual([...TRACE_STEPS]);
      expect(t.kernel, `trace ${i}`).toBeTypeOf('string');
      for (const s of t.steps) expect(s.ms).toBeGreaterThanOrEqual(0);
      expect(t.totalMs).toBeCloseTo(
        t.steps.reduce((a, s) => a + s.ms, 0),
        9,
      );
    }
    const onGpu = [traces[0], traces[2]]; // the conv's calls, left on the GPU
    for (const t of onGpu) expect(t.steps.filter((s) => s.step === 'map' || s.step === 'copyOut').map((s) => s.ms)).toEqual([0, 0]);
    seq.destroy();
    ctx.destroy();
  });

  it('ctx.gemmOnGpu traces a call that makes a plan, then one that replays it', async () => {
    const ctx = await GpuContext.create({ device: gpu!.device });
    const r = new Rng(5);
    const plain = { data: bytes(r, 64 * 24), rows: 64, cols: 24 };
    const rhs = await ctx.prepack('rhs', plain);
    const lhs = { data: bytes(r, 64), rows: 1, cols: 64 };
    const traces: GemmTrace[] = [];
    for (let i = 0; i < 2; i++) {
      const m = await ctx.gemmOnGpu({ lhs, rhs }, undefined, { onTrace: (t) => traces.push(t) });
      expect(Array.from((await ctx.read(m)).data)).toEqual(Array.from(referenceGemm({ lhs, rhs: plain }).data));
      ctx.releaseMatrix(m);
    }
    expect(traces.map((t) => t.plan)).toEqual(['new', 'hit']);
    await expect(ctx.gemmOnGpu({ lhs, rhs }, undefined, { onTrace: 3 as never })).rejects.toMatchObject({ field: 'onTrace' });
    // A listener that throws fails the call, and the context takes its matrix back: the plan is free again.
    const throwing = () => {
      throw new Error('listener');
    };
    await expect(ctx.gemmOnGpu({ lhs, rhs }, undefined, { onTrace: throwing })).rejects.toThrow(/^listener$/);
    const m = await ctx.gemmOnGpu({ lhs, rhs }, undefined, { onTrace: (t) => traces.push(t) });
    ctx.releaseMatrix(m);
    expect(traces.map((t) => t.plan)).toEqual(['new', 'hit', 'hit']);
    ctx.destroy();
  });
});

describe.skipIf(!gpu)('a graph with a layer XNNPACK refuses (requantization scale 256 or more)', () => {
  it('runs every layer on the builtin kernels on the GPU as on the CPU: FC -> FC (a chain) and FC, FC -> add', async () => {
    const input = { scale: 1, zeroPoint: 0 };
    const fc = (scale: number, name?: string, from?: string): SequentialLayer => ({
      op: 'fullyConnected',
      ...(name ? { name } : {}),
      ...(from ? { input: from } : {}),
      params: { weights: { data: Int8Array.of(1), shape: [1, 1], scale }, output: { scale: 4, zeroPoint: 1 }, activation: 'RELU6' },
    });
    const x = { data: Int8Array.from({ length: 16 }, (_, i) => i * 9 - 64), shape: [16, 1] };
    const ctx = await GpuContext.create({ device: gpu!.device });
    for (const layers of [
      [fc(1000), fc(1024)],
      [fc(1000, 'a'), fc(1024, 'b', 'input'), { op: 'add', inputs: ['a', 'b'], params: { output: { scale: 0.75, zeroPoint: 0 } } }],
    ] as SequentialLayer[][]) {
      const want = await runLayers(layers, x, { inputs: { input }, backend: 'cpu' });
      const seq = await Sequential.create(ctx, layers, { inputs: { input } });
      expect(Array.from((await seq.run(x)).data)).toEqual(Array.from(want.data));
      seq.destroy();
    }
    ctx.destroy();
  });
});
