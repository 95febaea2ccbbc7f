// The per-call path of a GEMM with a prepacked rhs (src/kernels/cpu-wasm/kernel.ts runPrepacked): a
// repeated problem runs the plan made by its first call (validation, the encoded output program, the
// threads' calls), writing only the new lhs. Every call bit for bit against the normative
// referenceGemm: new lhs data each call, a per-channel vector edited in place (a new problem, never the
// stale plan), other GEMMs and prepacks in between (which overwrite the kernels' memory), a change of
// thread count, a destroyed operand, and bad input after a good call (still an InputError, a misspelt key
// included). Then one thing changed at a time (src/problem/snapshot.ts keys a plan by value): dstOrder,
// bitDepth, the lhs's type, a vector's typed-array class, the very vector the plan was made with edited in
// place, the heap moved back by a prepack and its destroy, the thread count of an open job; each fails
// with the key field it names left out.

import { describe, expect, it } from 'vitest';
import { gemm } from '../../src/api.ts';
import { InputError } from '../../src/errors.ts';
import { configureWasm, prepackCpu, wasmCpuCaps, wasmRunStats } from '../../src/kernels/cpu-wasm/kernel.ts';
import { referenceGemm } from '../../src/reference/gemm.ts';
import type { BitDepth, GemmProblem, Operand, OutputStage } from '../../src/types.ts';
import { diffResults, formatMismatch } from '../support/compare.ts';

const caps = await wasmCpuCaps();

let seed = 12345;
const next = () => (seed = (Math.imul(seed, 1664525) + 1013904223) >>> 0);
const bytes = (n: number) => Uint8Array.from({ length: n }, () => next() >>> 24);

function pipelineFor(N: number): OutputStage[] {
  return [
    { type: 'bias', axis: 'col', values: Int32Array.from({ length: N }, () => (next() % 4001) - 2000) },
    {
      type: 'scaleInt32ByFixedPointAndExponent',
      multiplier: Int32Array.from({ length: N }, () => (1 << 30) + (next() >>> 3)),
      exponent: Int32Array.from({ length: N }, () => -8 - (next() % 5)),
      offsetAfterShift: 128,
      rounding: 'double',
      axis: 'col',
    },
    { type: 'saturatingCast', to: 'uint8' },
  ];
}

/** One call with the prepacked rhs against the reference over the plain one: its order, then every element. */
async function check(problem: GemmProblem, rhs: Awaited<ReturnType<typeof prepackCpu>>, what: string) {
  const got = await gemm({ ...problem, rhs }, { backend: 'cpu' });
  const want = referenceGemm(problem);
  expect(got.order, what).toBe(want.order);
  const d = diffResults(got, want);
  if (d) expect.fail(formatMismatch(d, what));
}

describe.skipIf(!caps.wasmSimd)('a prepacked rhs: the plan of a repeated problem', () => {
  it.each([1, 2, 3])('== reference call after call, threads %i: new lhs, edited vectors, other GEMMs between', async (threads) => {
    configureWasm({ threads });
    for (const [M, N, K] of [
      [1, 64, 300],
      [3, 40, 33],
      [16, 72, 129],
      [40, 17, 64],
    ]) {
      const rhs = { data: bytes(K * N), rows: K, cols: N };
      const other = { data: bytes(K * 9), rows: K, cols: 9 };
      const [packed, otherPacked] = await Promise.all([prepackCpu(rhs), prepackCpu(other)]);
      try {
        const pipeline = pipelineFor(N);
        const lhs = { data: bytes(M * K), rows: M, cols: K };
        const problem: GemmProblem = { lhs, rhs, lhsZeroPoint: 3, rhsZeroPoint: 130, pipeline };
        const what = `${M}x${N}x${K}, threads ${threads}`;
        for (let call = 0; call < 3; call++) {
          lhs.data.set(bytes(M * K)); // the same array, new values
          await check(problem, packed, `${what}, call ${call}`);
        }
        await check({ ...problem, lhs: { data: bytes(M * K), rows: M, cols: K } }, packed, `${what}, a new lhs array`);
        // A per-channel vector edited in place: the same objects, a different problem.
        const scale = pipeline[1] as Extract<OutputStage, { type: 'scaleInt32ByFixedPointAndExponent' }>;
        (scale.exponent as Int32Array)[N - 1] += 2;
        (pipeline[0] as Extract<OutputStage, { type: 'bias' }>).values = Int32Array.from({ length: N }, (_, n) => n * 3);
        await check(problem, packed, `${what}, after editing the pipeline in place`);
        // Other GEMMs overwrite the kernels' memory between two calls of this plan.
        const otherProblem = { lhs: { data: bytes(M * K), rows: M, cols: K }, rhs: other, lhsZeroPoint: 1 };
        await check(otherProblem, otherPacked, `${what}, another prepacked rhs`);
        await check(problem, packed, `${what}, after another GEMM`);
        await gemm({ ...otherProblem, rhs: other }, { backend: 'cpu' });
        await check(problem, packed, `${what}, after a GEMM with a plain rhs`);
        const third = await prepackCpu({ data: bytes(K * 5), rows: K, cols: 5 });
        await check(problem, packed, `${what}, after a prepack`);
        third.destroy();
        await check(problem, packed, `${what}, after a destroy`);
        configureWasm({ threads: threads === 1 ? 2 : 1 });
        await check(problem, packed, `${what}, another thread count`);
        configureWasm({ threads });
        await check({ ...problem, pipeline: undefined }, packed, `${what}, no pipeline`);
      } finally {
        packed.destroy();
        otherPacked.destroy();
      }
    }
  });

  it('a repeated call split by rows measures its threads against one thread and runs either, exactly', async () => {
    configureWasm({ threads: 2 });
    // Rows the longer side of C: each thread packs its rows, a barrier, then its gemm (a closed job).
    const [M, K, N] = [96, 512, 64];
    const rhs = { data: bytes(K * N), rows: K, cols: N };
    const packed = await prepackCpu(rhs);
    const problem = { lhs: { data: bytes(M * K), rows: M, cols: K }, rhs, pipeline: pipelineFor(N) };
    const ran: number[] = [];
    for (let call = 0; call < 66; call++) {
      problem.lhs.data.set(bytes(M * K));
      if (call < 16 || call >= 62) await check(problem, packed, `call ${call}`);
      else await gemm({ ...problem, rhs: packed }, { backend: 'cpu' });
      ran.push(wasmRunStats.lastThreads);
      expect(wasmRunStats.lastKernelMs).toBeGreaterThan(0);
    }
    // The first 16 calls alternate pairs (the second of each timed); calls 64 and 65, a pair of whichever
    // was not picked, run alike.
    expect(ran.slice(0, 16)).toEqual([2, 2, 1, 1, 2, 2, 1, 1, 2, 2, 1, 1, 2, 2, 1, 1]);
    expect(ran[64]).toBe(ran[65]);
    packed.destroy();
  });

  it('a repeated few-row call (an open job) runs on its threads every time, exactly', async () => {
    configureWasm({ threads: 2 });
    const K = 2048;
    const N = 1024;
    const rhs = { data: bytes(K * N), rows: K, cols: N };
    for (const bitDepth of [undefined, { lhs: 8, rhs: 4, rounding: 'probabilistic-xorshift' as const }]) {
      const packed = await prepackCpu(rhs, bitDepth);
      const problem = { lhs: { data: bytes(K), rows: 1, cols: K }, rhs, pipeline: pipelineFor(N), bitDepth };
      const ran: number[] = [];
      for (let call = 0; call < 66; call++) {
        problem.lhs.data.set(bytes(K));
        if (call < 16 || call >= 62) await check(problem, packed, `call ${call}, ${bitDepth ? '4' : '8'}-bit`);
        else await gemm({ ...problem, rhs: packed }, { backend: 'cpu' });
        ran.push(wasmRunStats.lastThreads);
      }
      expect(ran).toEqual(ran.map(() => 2));
      packed.destroy();
    }
  });

  it('bad input after a good call is still an InputError; a destroyed operand too', async () => {
    const rhs = { data: bytes(12), rows: 3, cols: 4 };
    const packed = await prepackCpu(rhs);
    const lhs = { data: bytes(6), rows: 2, cols: 3 };
    await check({ lhs, rhs }, packed, 'good');
    const fails = async (run: () => Promise<unknown>, field: string) => {
      const e = await run().then(
        () => null,
        (x: unknown) => x,
      );
      expect(e).toBeInstanceOf(InputError);
      expect((e as InputError).field).toBe(field);
    };
    await fails(() => gemm({ lhs: { data: bytes(5), rows: 2, cols: 3 }, rhs: packed }, { backend: 'cpu' }), 'lhs');
    await fails(
      () => gemm({ lhs: { data: [1, 2, 3, 4, 5, 6] as unknown as Uint8Array, rows: 2, cols: 3 }, rhs: packed }, { backend: 'cpu' }),
      'lhs',
    );
    await fails(() => gemm({ lhs, rhs: packed, lhsZeroPoint: 1.5 }, { backend: 'cpu' }), 'lhsZeroPoint');
    // A misspelt key, or a dtype that the data contradicts, beside a problem that has a plan: the plan
    // does not serve it, validation refuses it.
    const typo = { lhs, rhs: packed, lhsZeropoint: 3 } as unknown as GemmProblem;
    await fails(() => gemm(typo, { backend: 'cpu' }), 'lhsZeropoint');
    await fails(() => gemm({ lhs: { ...lhs, ordr: 'col-major' } as Operand, rhs: packed }, { backend: 'cpu' }), 'lhs.ordr');
    await fails(() => gemm({ lhs: { ...lhs, dtype: 'int8' } as Operand, rhs: packed }, { backend: 'cpu' }), 'lhs.dtype');
    await check({ lhs, rhs }, packed, 'good again');
    packed.destroy();
    await fails(() => gemm({ lhs, rhs: packed }, { backend: 'cpu' }), 'rhs');
  });
});

describe.skipIf(!caps.wasmSimd)('a plan key compares values: one thing changed at a time', () => {
  /** An M x K lhs and a K x N rhs, the rhs prepacked (at `bitDepth` where given). */
  async function planned(M: number, N: number, K: number, bitDepth?: BitDepth) {
    const rhs: Operand = { data: bytes(K * N), rows: K, cols: N };
    const packed = await prepackCpu(rhs, bitDepth);
    return { lhs: { data: bytes(M * K), rows: M, cols: K }, rhs, packed };
  }

  it('dstOrder: col-major then row-major', async () => {
    const { lhs, rhs, packed } = await planned(3, 8, 16);
    await check({ lhs, rhs, dstOrder: 'col-major' }, packed, 'col-major');
    await check({ lhs, rhs, dstOrder: 'row-major' }, packed, 'row-major after col-major');
    packed.destroy();
  });
  it('bitDepth: lhs 8 then lhs 5 bits', async () => {
    const bd = (lhs: number): BitDepth => ({ lhs, rhs: 4, rounding: 'nearest' });
    const { lhs, rhs, packed } = await planned(2, 8, 32, bd(8));
    await check({ lhs, rhs, bitDepth: bd(8) }, packed, 'lhs 8 bits');
    await check({ lhs, rhs, bitDepth: bd(5) }, packed, 'lhs 5 bits after 8');
    packed.destroy();
  });
  it('lhs type: uint8 then int8 of the same bytes', async () => {
    const { lhs, rhs, packed } = await planned(2, 8, 16);
    await check({ lhs, rhs }, packed, 'uint8 lhs');
    await check({ lhs: { ...lhs, data: new Int8Array(lhs.data.buffer) }, rhs }, packed, 'int8 lhs after uint8');
    packed.destroy();
  });
  it('a per-channel vector of another typed array with the same bytes is refused', async () => {
    const { lhs, rhs, packed } = await planned(2, 8, 16);
    const zp = Int32Array.from({ length: 8 }, (_, n) => n * 7);
    await check({ lhs, rhs, rhsZeroPoint: zp }, packed, 'Int32Array zero points');
    const other = gemm({ lhs, rhs: packed, rhsZeroPoint: new Uint32Array(zp.buffer) as unknown as Int32Array }, { backend: 'cpu' });
    await expect(other).rejects.toMatchObject({ field: 'rhsZeroPoint' });
    packed.destroy();
  });
  it('the very vector a plan was made with, edited in place: a new plan', async () => {
    const { lhs, rhs, packed } = await planned(2, 8, 16);
    const problem = { lhs, rhs, rhsZeroPoint: Int32Array.from({ length: 8 }, (_, n) => n * 7) };
    await check(problem, packed, 'made');
    problem.rhsZeroPoint[3] += 50;
    await check(problem, packed, 'its rhsZeroPoint edited in place');
    packed.destroy();
  });
  it('a prepack and its destroy between two calls of a plan (the heap back where it was)', async () => {
    const { lhs, rhs, packed } = await planned(3, 40, 33);
    const problem = { lhs, rhs, lhsZeroPoint: 3, rhsZeroPoint: 130 };
    await check(problem, packed, 'made');
    (await prepackCpu({ data: bytes(33 * 5), rows: 33, cols: 5 })).destroy();
    lhs.data.set(bytes(3 * 33));
    await check(problem, packed, 'after a prepack and its destroy');
    packed.destroy();
  });
  it('an open job follows a change of thread count', async () => {
    const { lhs, rhs, packed } = await planned(1, 1024, 2048);
    try {
      configureWasm({ threads: 2 });
      await check({ lhs, rhs }, packed, '2 threads');
      expect(wasmRunStats.lastThreads).toBe(2);
      configureWasm({ threads: 1 });
      await check({ lhs, rhs }, packed, '1 thread');
      expect(wasmRunStats.lastThreads).toBe(1);
    } finally {
      configureWasm({ threads: 1 });
      packed.destroy();
    }
  });
});
