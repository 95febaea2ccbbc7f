// Prepacked weights on the CPU (prepackCpu, src/kernels/cpu-wasm/kernel.ts): an rhs packed once into
// the WebAssembly kernel's layout, with its column sums, kept in the kernels' memory and reused by
// GEMMs that then pack only their lhs. Bit for bit against the normative referenceGemm over the shape
// sweep, every rhs type and order, zero points and stages, on 1, 2 and 3 threads; several prepacked
// operands alive and freed in any order; a replayed plan that reads the problem of its own (never the
// caller's vectors or lhs object, edited since); and each misuse as an InputError naming its field.

import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { gemm } from '../../src/api.ts';
import { InputError } from '../../src/errors.ts';
import { CPU_WASM_KERNELS, configureWasm, prepackCpu, wasmCpuCaps, wasmRunStats } from '../../src/kernels/cpu-wasm/kernel.ts';
import { normalizeProblem } from '../../src/problem/problem.ts';
import { referenceGemm } from '../../src/reference/gemm.ts';
import type { GemmProblem } from '../../src/types.ts';
import { arbProblem, describeProblem } from '../support/arbitraries.ts';
import { prepackedDriver } from '../support/cpu-drivers.ts';
import { diffResults, formatMismatch } from '../support/compare.ts';

const caps = await wasmCpuCaps();

describe.skipIf(!caps.wasmSimd)('prepackCpu', () => {
  async function expectSame(problem: GemmProblem, threads: number) {
    configureWasm({ threads });
    const weights = await prepackCpu(problem.rhs);
    try {
      const got = await gemm({ ...problem, rhs: weights }, { backend: 'cpu' });
      expect(got.backend).toBe('cpu');
      const d = diffResults(got, referenceGemm(problem));
      if (d) expect.fail(formatMismatch(d, `prepacked rhs, threads=${threads} ${describeProblem(problem)}`));
      // On exactly `threads` threads (gemm() uses one below 2^20 multiply-adds per thread).
      const kernel = CPU_WASM_KERNELS.find((k) => k.id === weights.kernel)!;
      const forced = await kernel.run(normalizeProblem(problem), { threads, rhsPacked: weights });
      const f = diffResults(forced, referenceGemm(problem));
      if (f) expect.fail(formatMismatch(f, `prepacked rhs, exactly ${threads} threads ${describeProblem(problem)}`));
    } finally {
      weights.destroy();
    }
  }

  it.each([1, 2, 3])('== reference over the sweep, threads %i (8-bit problems)', async (threads) => {
    await fc.assert(
      fc.asyncProperty(arbProblem(), (p) => expectSame({ ...p, bitDepth: undefined }, threads)),
      { numRuns: 80 },
    );
  });

  // A few lhs rows read a prepacked 8-bit rhs with few-row kernels. On the 16-bit kernel, its byte lanes
  // (gen-nibble.ts, lhs - zL in 16 bits): split for one and two rows, widened in 3-row tiles for 3, 5, 6
  // and 9 (whole and partial tiles); 4 and 10 rows, the packed panels. On the relaxed kernel (where the
  // engine proved its dot exact), its few-row kernels (gen-relaxed-few.ts). Every k past a multiple of 4,
  // both rhs types and orders, lhs zero points at the 16-bit bound and past it (the panels), on 1, 2 and
  // 3 threads. The byte lanes are forced (relaxedSimd: false) so that every CPU tests them; the engine's
  // own choice is tested on whichever kernel it packs for (test/support/cpu-drivers.ts).
  const modes = [
    ['the byte lanes (relaxed SIMD off)', false],
    ["the engine's choice", true],
  ] as const;
  describe.each(modes)('%s', (_, relaxedSimd) => {
    it.each([1, 2, 3])('1 to 10 rows, k mod 4, both rhs types, zero-point bounds, threads %i', async (threads) => {
      configureWasm({ relaxedSimd });
      try {
        const engine = await wasmCpuCaps();
        if (!relaxedSimd) expect(engine.relaxedSimd).toBe(false);
        let seed = 11 + threads;
        const next = () => (seed = (Math.imul(seed, 1103515245) + 12345) >>> 0) >>> 24;
        const data = (n: number, signed: boolean) => (signed ? Int8Array.from({ length: n }, next) : Uint8Array.from({ length: n }, next));
        for (const M of [1, 2, 3, 4, 5, 6, 9, 10])
          for (const [N, K] of [
            [1, 1],
            [33, 6],
            [70, 67],
            [31, 129],
            [257, 300],
          ])
            for (const signed of [false, true])
              for (const zL of [0, -32512, 32512, 32513]) {
                const order = (N + K) % 2 ? 'row-major' : 'col-major';
                const problem: GemmProblem = {
                  lhs: { data: data(M * K, signed), rows: M, cols: K },
                  rhs: { data: data(K * N, signed), rows: K, cols: N, order },
                  lhsZeroPoint: M === 1 ? zL : Int32Array.from({ length: M }, (_, m) => (m % 2 ? -zL : zL)),
                  rhsZeroPoint: Int32Array.from({ length: N }, (_, n) => n - 9),
                };
                await expectSame(problem, threads);
                expect(wasmRunStats.lastDriver).toMatch(prepackedDriver(engine, M, zL));
              }
      } finally {
        configureWasm({ relaxedSimd: true });
      }
    });
  });

  it('one packed rhs serves many lhs; several stay alive and are freed in any order', async () => {
    configureWasm({ threads: 2 });
    const rhs = (K: number, N: number, seed: number) => ({
      data: Int8Array.from({ length: K * N }, (_, i) => ((i * 2654435761 + seed) >>> 24) - 128),
      rows: K,
      cols: N,
      order: 'col-major' as const,
    });
    const lhs = (M: number, K: number) => ({ data: Uint8Array.from({ length: M * K }, (_, i) => (i * 31) & 255), rows: M, cols: K });
    const shapes: [number, number][] = [
      [300, 70],
      [64, 9],
      [129, 200],
    ];
    const rhss = shapes.map(([K, N], i) => rhs(K, N, i));
    const packed = await Promise.all(rhss.map((r) => prepackCpu(r)));
    const check = async (i: number) => {
      for (const M of [1, 5, 33]) {
        const problem = { lhs: lhs(M, shapes[i][0]), rhs: rhss[i], lhsZeroPoint: 7, rhsZeroPoint: -3 };
        const got = await gemm({ ...problem, rhs: packed[i] }, { backend: 'cpu' });
        const d = diffResults(got, referenceGemm(problem));
        if (d) expect.fail(formatMismatch(d, `packed #${i}, M=${M}`));
      }
    };
    await check(0);
    packed[1].destroy();
    await check(2);
    await check(0);
    const again = await prepackCpu(rhss[1]); // may take #1's freed block
    packed[1] = again;
    await check(1);
    await check(2);
    for (const p of packed) p.destroy();
    expect(packed.every((p) => p.destroyed)).toBe(true);
  });

  it('names the kernel that ran to onKernel, on the first call and on a replayed plan, as for an rhs not prepacked', async () => {
    const rhs = { data: Int8Array.from({ length: 64 * 9 }, (_, i) => (i % 11) - 5), rows: 64, cols: 9 };
    const lhs = { data: new Uint8Array(2 * 64).fill(3), rows: 2, cols: 64 };
    const packed = await prepackCpu(rhs);
    const kernels: string[] = [];
    for (const backend of ['cpu', 'auto', 'cpu'] as const) await gemm({ lhs, rhs: packed }, { backend, onKernel: (k) => kernels.push(k) });
    expect(kernels).toEqual([packed.kernel, packed.kernel, packed.kernel]);
    const plain: string[] = [];
    await gemm({ lhs, rhs }, { backend: 'cpu', onKernel: (k) => plain.push(k) });
    expect(plain).toHaveLength(1);
    packed.destroy();
  });

  it("a replayed plan reads this call's vectors, not an earlier call's edited in place since", async () => {
    // Call 1's vectors are edited once it resolved (the caller's to reuse); call 2 gives fresh ones with
    // call 1's values, so it replays call 1's plan: with or without another CPU GEMM in between.
    for (const between of [false, true]) {
      const N = 6;
      const problem = (M: number): GemmProblem => ({
        lhs: { data: Uint8Array.from({ length: M * 5 }, (_, i) => (i * 37) & 255), rows: M, cols: 5, order: 'row-major' },
        rhs: { data: Uint8Array.from({ length: 5 * N }, (_, i) => (i * 53) & 255), rows: 5, cols: N },
        lhsZeroPoint: Int32Array.from({ length: M }, (_, m) => m + 3),
        rhsZeroPoint: Int32Array.from({ length: N }, (_, n) => 2 * n),
        pipeline: [
          { type: 'bias', axis: 'col', values: Int32Array.from({ length: N }, (_, n) => 100 * n - 250) },
          {
            type: 'scaleInt32ByFixedPointAndExponent',
            multiplier: 1 << 30,
            exponent: Int32Array.from({ length: N }, (_, n) => -n),
            offsetAfterShift: 0,
            axis: 'col',
          },
        ],
      });
      const weights = await prepackCpu(problem(1).rhs);
      const first = problem(2);
      await gemm({ ...first, rhs: weights }, { backend: 'cpu' });
      (first.lhs as { order: string }).order = 'col-major'; // the lhs object too
      (first.lhsZeroPoint as Int32Array).fill(100);
      (first.rhsZeroPoint as Int32Array).fill(100);
      for (const stage of first.pipeline!)
        ((stage as { values?: Int32Array; exponent?: Int32Array }).values ?? (stage as { exponent: Int32Array }).exponent).fill(7);
      if (between) await gemm(problem(3), { backend: 'cpu' });
      const second = problem(2);
      const d = diffResults(await gemm({ ...second, rhs: weights }, { backend: 'cpu' }), referenceGemm(second));
      if (d) expect.fail(formatMismatch(d, `replayed plan${between ? ', another GEMM in between' : ''}`));
      weights.destroy();
    }
  });

  it('a field a GEMM does not have is named, never copied or walked (a cycle, a DataView)', async () => {
    const problem: GemmProblem & { extra?: unknown } = {
      lhs: { data: Uint8Array.of(1, 2, 3, 4, 5, 6), rows: 2, cols: 3 },
      rhs: { data: Uint8Array.of(7, 8, 9, 10, 11, 12), rows: 3, cols: 2 },
    };
    const weights = await prepackCpu(problem.rhs);
    for (const extra of [new DataView(new ArrayBuffer(4)), { self: problem }]) {
      const e = await gemm({ ...problem, extra, rhs: weights } as unknown as GemmProblem, { backend: 'cpu' }).catch((x) => x);
      expect(e).toBeInstanceOf(InputError);
      expect((e as InputError).field).toBe('extra');
    }
    const d = diffResults(await gemm({ ...problem, rhs: weights }, { backend: 'cpu' }), referenceGemm(problem));
    if (d) expect.fail(formatMismatch(d, 'after the refusals'));
    weights.destroy();
  });

  it('refuses misuse with an InputError naming the field', async () => {
    const rhs = { data: new Uint8Array(12), rows: 3, cols: 4 };
    const lhs = { data: new Uint8Array(6), rows: 2, cols: 3 };
    const packed = await prepackCpu(rhs);
    const fails = async (run: () => Promise<unknown>, field: string) => {
      const e = await run().then(
        () => null,
        (x: unknown) => x,
      );
      expect(e).toBeInstanceOf(InputError);
      expect((e as InputError).field).toBe(field);
    };
    await fails(() => gemm({ lhs, rhs: packed }, { backend: 'webgpu' }), 'rhs');
    await fails(() => gemm({ lhs: { data: new Uint8Array(8), rows: 2, cols: 4 }, rhs: packed }, { backend: 'cpu' }), 'rhs');
    await fails(() => gemm({ lhs, rhs: packed, bitDepth: { lhs: 7, rhs: 7, rounding: 'nearest' } }, { backend: 'cpu' }), 'rhs');
    // A GEMM that keeps the rhs at 8 bits but not its lhs takes the plain rhs; the message offers no prepack that would fail.
    const e8 = await gemm({ lhs, rhs: packed, bitDepth: { lhs: 5, rhs: 8, rounding: 'nearest' } }, { backend: 'cpu' }).catch((x) => x);
    expect((e8 as InputError).field).toBe('rhs');
    expect((e8 as Error).message).toMatch(/serves GEMMs without a bitDepth: give the plain rhs$/);
    await fails(() => gemm({ lhs, rhs: packed }, { backend: 'cpu', kernel: 'cpu-js' }), 'kernel');
    await fails(() => prepackCpu({ data: new Uint8Array(5), rows: 3, cols: 4 }), 'rhs');
    packed.destroy();
    await fails(() => gemm({ lhs, rhs: packed }, { backend: 'cpu' }), 'rhs');
  });
  it('a rhs whose padding rows would lie past the memory it fills packs (the panel loads read them)', async () => {
    configureWasm({ relaxedSimd: true });
    configureWasm({ relaxedSimd: false }); // a fresh engine, whose memory ends about where this operand does
    try {
      const [K, N] = [3, 65536]; // one padding row (Kp 4) of a whole 64 KiB page: it trapped, out of bounds
      const rhs = { data: Uint8Array.from({ length: K * N }, (_, i) => i % 251), rows: K, cols: N };
      const packed = await prepackCpu(rhs);
      const lhs = { data: Uint8Array.of(1, 2, 3), rows: 1, cols: K };
      expect(diffResults(await gemm({ lhs, rhs: packed }, { backend: 'cpu' }), referenceGemm({ lhs, rhs }))).toBeNull();
      packed.destroy();
    } finally {
      configureWasm({ relaxedSimd: true });
    }
  });
  it('an operand of an engine that configureCpu replaced is refused naming rhs, not the kernel it was packed for', async () => {
    const rhs = { data: new Uint8Array(64 * 32).fill(9), rows: 64, cols: 32 };
    const lhs = { data: new Uint8Array(2 * 64).fill(4), rows: 2, cols: 64 };
    configureWasm({ relaxedSimd: true });
    const packed = await prepackCpu(rhs);
    configureWasm({ relaxedSimd: false }); // a new engine: the operand's memory is gone with the old one
    try {
      const e = await gemm({ lhs, rhs: packed }, { backend: 'cpu' }).catch((x) => x);
      expect(e).toBeInstanceOf(InputError);
      expect([(e as InputError).field, (e as Error).message]).toEqual([
        'rhs',
        'rhs: this prepacked operand belongs to a CPU engine that was replaced (configureCpu); prepack it again',
      ]);
    } finally {
      configureWasm({ relaxedSimd: true });
    }
  });
});
