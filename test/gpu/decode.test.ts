// GPU tier: the decode call (src/scheduler/call-plan.ts, ./trace.ts): an untimed ctx.gemm creates and
// resolves no timestamp query (counted on the device); the trace of a call has every step, in order,
// none negative; a repeated call with a prepacked rhs runs its plan bit-exact against the CPU reference,
// and a changed shape, per-channel vector (edited in place), pipeline or lhs type makes a new plan,
// never a stale one; a prepacked operand destroyed while a call uses it lets that call finish (the
// buffers go after it) and refuses later calls with the "destroyed" InputError; a misspelt key beside a
// problem that has a plan misses it and meets validation's InputError.

import { afterAll, describe, expect, it, vi } from 'vitest';
import { InputError } from '../../src/errors.ts';
import { referenceGemm } from '../../src/reference/gemm.ts';
import { GpuContext, type GemmTrace } from '../../src/scheduler/context.ts';
import { TRACE_STEPS } from '../../src/scheduler/trace.ts';
import type { GemmProblem, OutputStage } from '../../src/types.ts';
import { diffResults, formatMismatch } from '../support/compare.ts';
import { getGpu, releaseGpu } from './gpu-env.ts';

const gpu = await getGpu();
afterAll(releaseGpu);

function bytes(n: number, seed: number): Uint8Array {
  const out = new Uint8Array(n);
  let x = seed * 2654435761;
  for (let i = 0; i < n; i++) {
    x = (x * 1103515245 + 12345) >>> 0;
    out[i] = x >>> 24;
  }
  return out;
}

function problemOf(M: number, N: number, K: number, seed: number, pipeline?: OutputStage[]): GemmProblem {
  return {
    lhs: { data: bytes(M * K, seed), rows: M, cols: K, order: 'row-major' },
    rhs: { data: bytes(K * N, 7), rows: K, cols: N, order: 'row-major' },
    lhsZeroPoint: 3,
    rhsZeroPoint: Int32Array.from({ length: N }, (_, n) => (n * 37) % 256),
    pipeline: pipeline ?? [
      { type: 'bias', axis: 'col', values: Int32Array.from({ length: N }, (_, n) => n * 1000 - 30000) },
      { type: 'scaleInt32ByFixedPointAndExponent', multiplier: 1518500250, exponent: -9, offsetAfterShift: 128 },
      { type: 'saturatingCast', to: 'uint8' },
    ],
  };
}

function expectExact(got: Parameters<typeof diffResults>[0], p: GemmProblem, what: string): void {
  const d = diffResults(got, referenceGemm(p));
  if (d) expect.fail(formatMismatch(d, what));
}

describe.skipIf(!gpu)('the decode call', () => {
  const contexts: GpuContext[] = [];
  const context = async (timestamps = false) => {
    const ctx = await GpuContext.create({ device: gpu!.device, timestamps });
    contexts.push(ctx);
    return ctx;
  };
  afterAll(() => {
    for (const c of contexts) c.destroy();
  });

  it('creates and resolves no query set in an untimed call; a timed one does', async () => {
    const ctx = await context(true);
    expect(ctx.caps.timestamps).toBe(true); // SwiftShader offers timestamp-query: the count below means something
    const device = gpu!.device;
    const counts = { querySets: 0, resolves: 0 };
    const createQuerySet = device.createQuerySet.bind(device);
    const createCommandEncoder = device.createCommandEncoder.bind(device);
    const spies = [
      vi.spyOn(device, 'createQuerySet').mockImplementation((d) => {
        counts.querySets++;
        return createQuerySet(d);
      }),
      vi.spyOn(device, 'createCommandEncoder').mockImplementation((d) => {
        const encoder = createCommandEncoder(d);
        const resolve = encoder.resolveQuerySet.bind(encoder);
        encoder.resolveQuerySet = (...args: Parameters<GPUCommandEncoder['resolveQuerySet']>) => {
          counts.resolves++;
          return resolve(...args);
        };
        return encoder;
      }),
    ];
    try {
      const p = problemOf(1, 64, 64, 1);
      const packed = await ctx.prepack('rhs', p.rhs);
      const traces: GemmTrace[] = [];
      for (let i = 0; i < 3; i++) await ctx.gemm({ ...p, rhs: packed }, undefined, { onTrace: (t) => traces.push(t) });
      expect(traces.map((t) => t.plan)).toEqual(['new', 'hit', 'hit']);
      await ctx.gemm(p); // a CPU rhs: no plan, runGemm's own path
      await ctx.gemmOnGpu({ ...p, rhs: packed }).then((m) => ctx.releaseMatrix(m));
      expect(counts).toEqual({ querySets: 0, resolves: 0 });
      const timing = { gpuMs: null as number | null };
      await ctx.gemm({ ...p, rhs: packed }, timing); // through the plan
      await ctx.gemm(p, timing); // through runGemm
      expect(counts).toEqual({ querySets: 1, resolves: 2 }); // one query set, kept by the context
      expect(timing.gpuMs).toBeTypeOf('number');
      packed.destroy();
    } finally {
      for (const s of spies) s.mockRestore();
    }
  });

  it('traces every step of a call, in order, none negative', async () => {
    const ctx = await context();
    const p = problemOf(1, 64, 64, 2);
    const packed = await ctx.prepack('rhs', p.rhs);
    const traces: GemmTrace[] = [];
    const onTrace = (t: GemmTrace) => traces.push(t);
    await ctx.gemm({ ...p, rhs: packed }, undefined, { onTrace });
    await ctx.gemm({ ...p, rhs: packed }, undefined, { onTrace });
    await ctx.gemm(p, undefined, { onTrace });
    expect(traces.map((t) => t.plan)).toEqual(['new', 'hit', 'none']);
    for (const t of traces) {
      expect(t.steps.map((s) => s.step)).toEqual([...TRACE_STEPS]);
      for (const s of t.steps) expect(s.ms).toBeGreaterThanOrEqual(0);
      expect(t.totalMs).toBeCloseTo(
        t.steps.reduce((a, s) => a + s.ms, 0),
        9,
      );
      expect(t.kernel).toBe(ctx.lastRun.kernel);
    }
    // QGEMM_TRACE=1: one line per call on stderr.
    const lines: string[] = [];
    const spy = vi.spyOn(console, 'error').mockImplementation((m: string) => void lines.push(m));
    vi.stubEnv('QGEMM_TRACE', '1');
    try {
      await ctx.gemm({ ...p, rhs: packed });
    } finally {
      vi.unstubAllEnvs();
      spy.mockRestore();
    }
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/^qgemm trace: .* plan hit: validate [\d.]+, lhsWrite .* copyOut [\d.]+ ms; total [\d.]+ ms$/);
    packed.destroy();
  });

  it('replays a plan bit-exact, and re-plans a changed problem, never serving a stale one', async () => {
    const ctx = await context();
    const N = 48;
    const K = 40;
    const base = problemOf(1, N, K, 3);
    const packed = await ctx.prepack('rhs', base.rhs);
    const plans: string[] = [];
    const run = async (p: GemmProblem, what: string) => {
      const got = await ctx.gemm({ ...p, rhs: packed }, undefined, { onTrace: (t) => plans.push(t.plan) });
      expectExact(got, p, what);
    };
    for (let i = 0; i < 3; i++) await run({ ...base, lhs: { ...base.lhs, data: bytes(K, 10 + i) } }, `lhs ${i}`);
    expect(plans.splice(0)).toEqual(['new', 'hit', 'hit']);
    // The same lhs array written again in place: a hit that reads the new bytes.
    const lhs = bytes(K, 20);
    const inPlace = { ...base, lhs: { ...base.lhs, data: lhs } };
    await run(inPlace, 'lhs before');
    lhs.fill(250);
    await run(inPlace, 'lhs edited in place');
    expect(plans.splice(0)).toEqual(['hit', 'hit']);
    // A per-channel vector edited in place: a new plan (a copy with equal values is the same problem: a hit).
    const zp = (base.rhsZeroPoint as Int32Array).slice();
    const edited = { ...base, rhsZeroPoint: zp };
    await run(edited, 'rhsZeroPoint');
    zp[5] = 200;
    await run(edited, 'rhsZeroPoint edited in place');
    const bias = base.pipeline![0] as Extract<OutputStage, { type: 'bias' }>;
    const biased = { ...base, pipeline: [{ ...bias, values: bias.values.slice() }, ...base.pipeline!.slice(1)] };
    await run(biased, 'bias');
    (biased.pipeline[0] as typeof bias).values[N - 1] += 77;
    await run(biased, 'bias edited in place');
    expect(plans.splice(0)).toEqual(['hit', 'new', 'hit', 'new']);
    // Another M, another pipeline, another lhs zero point, another order, int8 lhs: each a new plan.
    const two = problemOf(2, N, K, 4);
    await run({ ...two, rhsZeroPoint: base.rhsZeroPoint, pipeline: base.pipeline }, 'M = 2');
    await run({ ...base, pipeline: [] }, 'int32 dst');
    await run({ ...base, lhsZeroPoint: 4 }, 'lhsZeroPoint');
    await run({ ...base, dstOrder: 'col-major' }, 'col-major dst');
    await run({ ...base, lhs: { ...base.lhs, data: new Int8Array(bytes(K, 5).buffer) }, lhsZeroPoint: -3 }, 'int8 lhs');
    expect(plans.splice(0)).toEqual(['new', 'new', 'new', 'new', 'new']);
    // Back to the first problem: its plan went (two per rhs are kept), a new one is made, exact.
    await run(base, 'first again');
    await run(base, 'first again, replayed');
    expect(plans.splice(0)).toEqual(['new', 'hit']);
    // A plan used is kept before one unused longer: the third problem pushes out M = 2's plan, made after
    // the first's but unused since.
    await run({ ...two, rhsZeroPoint: base.rhsZeroPoint, pipeline: base.pipeline }, 'M = 2 again');
    await run(base, 'first, used');
    await run({ ...base, lhsZeroPoint: 4 }, 'lhsZeroPoint again');
    await run(base, 'first, kept');
    await run({ ...two, rhsZeroPoint: base.rhsZeroPoint, pipeline: base.pipeline }, 'M = 2, pushed out');
    expect(plans.splice(0)).toEqual(['new', 'hit', 'new', 'hit', 'new']);
    packed.destroy();
    await expect(ctx.gemm({ ...base, rhs: packed })).rejects.toThrow(/destroyed/);
  });

  it("keys a stage, or the lhs, given by a class's getters by the values they read", async () => {
    const ctx = await context();
    const p = problemOf(2, 24, 16, 11, []);
    const packed = await ctx.prepack('rhs', p.rhs);
    class Scale {
      readonly type = 'scaleInt32ByFixedPointAndExponent';
      readonly #exponent: number;
      constructor(exponent: number) {
        this.#exponent = exponent;
      }
      get multiplier() {
        return 1518500250;
      }
      get exponent() {
        return this.#exponent;
      }
      get offsetAfterShift() {
        return 128;
      }
    }
    const plans: string[] = [];
    for (const exponent of [-9, -9, -6]) {
      const pipeline = [new Scale(exponent) as unknown as OutputStage, { type: 'saturatingCast', to: 'uint8' } as OutputStage];
      const got = await ctx.gemm({ ...p, rhs: packed, pipeline }, undefined, { onTrace: (t) => plans.push(t.plan) });
      const plain: OutputStage = { type: 'scaleInt32ByFixedPointAndExponent', multiplier: 1518500250, exponent, offsetAfterShift: 128 };
      expectExact(got, { ...p, pipeline: [plain, pipeline[1]] }, `exponent ${exponent}`);
    }
    expect(plans).toEqual(['new', 'hit', 'new']);
    // A problem whose lhs comes from a getter: keyed by that lhs (its rows), as every use reads it.
    class Call {
      readonly #lhs: GemmProblem['lhs'];
      readonly rhs = packed;
      constructor(lhs: GemmProblem['lhs']) {
        this.#lhs = lhs;
      }
      get lhs() {
        return this.#lhs;
      }
    }
    plans.length = 0;
    for (const M of [4, 4, 1]) {
      const q = problemOf(M, 24, 16, 12 + M, []);
      const got = await ctx.gemm(new Call(q.lhs) as unknown as GemmProblem & { rhs: typeof packed }, undefined, {
        onTrace: (t) => plans.push(t.plan),
      });
      expectExact(got, { ...q, lhsZeroPoint: 0, rhsZeroPoint: 0, rhs: p.rhs }, `an lhs of ${M} rows from a getter`);
    }
    expect(plans).toEqual(['new', 'hit', 'new']);
    packed.destroy();
  });

  it('refuses a misspelt key beside a problem that has a plan, in gemm, gemmOnGpu and gemmChain', async () => {
    const ctx = await context();
    const p = problemOf(2, 24, 16, 8);
    const packed = await ctx.prepack('rhs', p.rhs);
    const field = (call: Promise<unknown>) =>
      call.then(
        () => 'no error',
        (e: unknown) => (e instanceof InputError ? e.field : String(e)),
      );
    const good = { ...p, rhs: packed };
    const typo = { ...good, lhsZeropoint: 3 } as typeof good;
    const lhsTypo = { ...good, lhs: { ...p.lhs, ordr: 'col-major' } as typeof p.lhs };
    const lhsDtype = { ...good, lhs: { ...p.lhs, dtype: 'int8' } as typeof p.lhs };
    for (let i = 0; i < 2; i++) expectExact(await ctx.gemm(good), p, `plan ${i}`);
    expect(await field(ctx.gemm(typo))).toBe('lhsZeropoint');
    expect(await field(ctx.gemm(lhsTypo))).toBe('lhs.ordr');
    expect(await field(ctx.gemm(lhsDtype))).toBe('lhs.dtype');
    for (let i = 0; i < 2; i++) ctx.releaseMatrix(await ctx.gemmOnGpu(good));
    expect(await field(ctx.gemmOnGpu(typo))).toBe('lhsZeropoint');
    expect(await field(ctx.gemmOnGpu(lhsTypo))).toBe('lhs.ordr');
    const { lhs, ...layer } = good;
    for (let i = 0; i < 2; i++) expectExact(await ctx.gemmChain({ lhs, layers: [layer] }), p, `chain ${i}`);
    expect(await field(ctx.gemmChain({ lhs, layers: [{ ...layer, lhsZeropoint: 3 } as typeof layer] }))).toBe('layers[0].lhsZeropoint');
    expect(await field(ctx.gemmChain({ lhs: lhsTypo.lhs, layers: [layer] }))).toBe('lhs.ordr');
    // A later GEMM's lhsZeroPoint is its own field, not its lhs (the previous GEMM's dst).
    const second = await ctx.prepack('rhs', { data: bytes(24 * 8, 9), rows: 24, cols: 8, order: 'row-major' });
    const next = { rhs: second, lhsZeroPoint: 1.5 };
    const e = await ctx.gemmChain({ lhs, layers: [layer, next] }).catch((x: unknown) => x);
    second.destroy();
    expect(e).toBeInstanceOf(InputError);
    expect((e as InputError).field).toBe('layers[1].lhsZeroPoint');
    expect((e as InputError).message).not.toMatch(/dst/);
    expectExact(await ctx.gemm(good), p, 'the plan still serves the good problem');
    packed.destroy();
  });

  it('lets a call that uses a prepacked operand finish when it is destroyed meanwhile, and refuses later calls', async () => {
    const ctx = await context();
    const p = problemOf(3, 40, 24, 6);
    const queue = Object.getPrototypeOf(gpu!.device.queue) as GPUQueue;
    const submit = queue.submit;
    for (const through of ['runGemm', 'plan'] as const) {
      const packed = await ctx.prepack('rhs', p.rhs);
      if (through === 'plan') expectExact(await ctx.gemm({ ...p, rhs: packed }), p, 'plan made');
      // The operand is destroyed at the worst moment: after the call checked it, right before its submit.
      let armed = true;
      queue.submit = function (this: GPUQueue, buffers: Iterable<GPUCommandBuffer>) {
        if (armed) {
          armed = false;
          packed.destroy();
        }
        return submit.call(this, buffers);
      };
      try {
        const call =
          through === 'runGemm'
            ? ctx.gemmOnGpu({ ...p, rhs: packed }).then(async (m) => {
                const got = await ctx.read(m);
                ctx.releaseMatrix(m);
                return got;
              })
            : ctx.gemm({ ...p, rhs: packed });
        expectExact(await call, p, `destroyed during the call (${through})`);
      } finally {
        queue.submit = submit;
      }
      expect(packed.destroyed).toBe(true);
      const later = await ctx.gemm({ ...p, rhs: packed }).catch((e) => e);
      expect(later).toBeInstanceOf(InputError);
      expect((later as InputError).message).toMatch(/destroyed/);
    }
  });
});
