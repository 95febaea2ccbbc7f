// GpuContext boundaries (src/scheduler/): a GpuMatrix is read or used only by the context that made it
// and only while it is live; a PackedOperand only by the context that packed it, and only on the side it
// was packed for; destroy() during a
// prepack is a DeviceLostError; ctx.read and ctx.releaseMatrix without a matrix are InputErrors naming
// `matrix`. Two contexts share one device here, the case where a stale read once returned another call's data.
// The top-level gemm refuses either, saying whose they are, and a context an rhs prepacked for the CPU.

import { afterAll, describe, expect, it } from 'vitest';
import { gemm } from '../../src/api.ts';
import { prepackCpu } from '../../src/kernels/cpu-wasm/kernel.ts';
import { DeviceLostError, InputError } from '../../src/errors.ts';
import { GpuContext, type GpuGemmProblem } from '../../src/scheduler/context.ts';
import { expectResolvedOrDeviceLost, getGpu, releaseGpu } from '../gpu/gpu-env.ts';

const gpu = await getGpu();
afterAll(releaseGpu);

const problem = (fill: number): GpuGemmProblem => ({
  lhs: { data: new Uint8Array(12).fill(fill), rows: 3, cols: 4 },
  rhs: { data: new Uint8Array(8).fill(1), rows: 4, cols: 2 },
  pipeline: [{ type: 'saturatingCast', to: 'uint8' }],
});

async function inputErrorOf(p: Promise<unknown> | (() => unknown)): Promise<InputError> {
  let err: unknown;
  try {
    await (typeof p === 'function' ? p() : p);
  } catch (e) {
    err = e;
  }
  expect(err).toBeInstanceOf(InputError);
  return err as InputError;
}

describe.skipIf(!gpu)('context boundaries', () => {
  it('a matrix released by A is not read by a second context S after A reuses its buffer', async () => {
    const A = await GpuContext.create({ device: gpu!.device });
    const S = await GpuContext.create({ device: gpu!.device });
    const m = await A.gemmOnGpu(problem(1));
    A.releaseMatrix(m);
    const m2 = await A.gemmOnGpu(problem(2));
    expect(m2.buffer).toBe(m.buffer); // the pool reused it: reading m would give P2's data
    expect((await inputErrorOf(S.read(m))).field).toBe('matrix');
    expect((await inputErrorOf(S.read({ ...m }))).field).toBe('matrix');
    expect((await inputErrorOf(A.read(m))).field).toBe('matrix');
    expect(Array.from((await A.read(m2)).data)).toEqual(Array(6).fill(8));
    // a field JSON cannot print is echoed, not a TypeError of the message
    expect((await inputErrorOf(A.read({ ...m2, order: 1n as never }))).field).toBe('matrix.order');
    expect((await inputErrorOf(A.read({ ...m2, dtype: 8n as never }))).field).toBe('matrix.dtype');
    A.destroy();
    S.destroy();
  });

  it("a context's prepacked operand or GpuMatrix given to the top-level gemm is refused saying so, on every backend", async () => {
    const A = await GpuContext.create({ device: gpu!.device });
    const packed = await A.prepack('rhs', problem(1).rhs as never);
    const m = await A.gemmOnGpu(problem(1));
    for (const backend of ['cpu', 'auto', 'webgpu'] as const) {
      const e = await inputErrorOf(gemm({ ...problem(1), rhs: packed } as never, { backend }));
      expect([e.field, e.message]).toEqual(['rhs', "rhs: prepacked on a GpuContext (ctx.prepack): run it with that context's gemm"]);
      const l = await inputErrorOf(
        gemm({ ...problem(1), lhs: m as never, rhs: { data: new Uint8Array(6), rows: 2, cols: 3 } }, { backend }),
      );
      expect([l.field, l.message]).toEqual(['lhs', "lhs: a GpuMatrix (a GPU buffer): run it with its GpuContext's gemm"]);
    }
    // Plain data is not taken for theirs: a typed array is an lhs without a shape, an extra `buffer` key
    // is a key a plain operand does not have (named, as any misspelling), not a GpuMatrix
    const typed = await inputErrorOf(gemm({ ...problem(1), lhs: new Uint8Array(12) } as never, { backend: 'cpu' }));
    expect(typed.message).toMatch(/^lhs: expected uint8 or int8 data/);
    const extraKey = { ...problem(1), lhs: { ...problem(1).lhs, buffer: null } } as never;
    const extra = await inputErrorOf(gemm(extraKey, { backend: 'cpu' }));
    expect(extra.message).toBe('lhs.buffer: unknown key; known: data, rows, cols, order, dtype, backend');
    // A GpuMatrix lhs with an rhs prepacked for the CPU is refused as a GpuMatrix
    const cpuRhs = await prepackCpu(problem(1).rhs as never);
    const both = await inputErrorOf(gemm({ ...problem(1), lhs: m, rhs: cpuRhs } as never, { backend: 'cpu' }));
    expect(both.message).toBe("lhs: a GpuMatrix (a GPU buffer): run it with its GpuContext's gemm");
    cpuRhs.destroy();
    // and the other way: an rhs prepacked for the CPU, given to a context
    const cpuPacked = await prepackCpu(problem(1).rhs as never);
    for (const call of [() => A.gemm({ ...problem(1), rhs: cpuPacked } as never), () => A.prepack('rhs', cpuPacked as never)]) {
      const e = await inputErrorOf(call);
      expect(e.message).toBe("rhs: prepacked for the CPU path (prepackCpu): run it with gemm(problem, { backend: 'cpu' })");
    }
    cpuPacked.destroy();
    A.destroy();
  });

  it('a live matrix of A is refused by S: read, as an operand, prepacked, released (item 12)', async () => {
    const A = await GpuContext.create({ device: gpu!.device });
    const S = await GpuContext.create({ device: gpu!.device });
    const m = await A.gemmOnGpu({ ...problem(1), rhs: { data: new Uint8Array(16).fill(1), rows: 4, cols: 4 } });
    expect((await inputErrorOf(S.read(m))).message).toMatch(/another GpuContext/);
    const asLhs = { lhs: m, rhs: { data: new Uint8Array(8).fill(1), rows: 4, cols: 2 } };
    expect((await inputErrorOf(S.gemm(asLhs))).field).toBe('lhs');
    expect((await inputErrorOf(S.prepack('lhs', m))).field).toBe('lhs');
    expect((await inputErrorOf(() => S.releaseMatrix(m))).field).toBe('matrix');
    expect(Array.from((await A.read(m)).data)).toEqual(Array(12).fill(4)); // still A's, still live
    A.destroy();
    S.destroy();
  });

  it('an operand prepacked as lhs is refused as the rhs, and the reverse', async () => {
    const ctx = await GpuContext.create({ device: gpu!.device });
    const a = { data: new Uint8Array(16 * 16).fill(3), rows: 16, cols: 16 };
    const [asLhs, asRhs] = await Promise.all([ctx.prepack('lhs', a), ctx.prepack('rhs', a)]);
    const e1 = await inputErrorOf(ctx.gemm({ lhs: a, rhs: asLhs }));
    expect([e1.field, e1.message]).toEqual(['rhs', expect.stringMatching(/prepacked as lhs/)]);
    expect((await inputErrorOf(ctx.gemm({ lhs: asRhs, rhs: a }))).field).toBe('lhs');
    ctx.destroy();
  });

  it('a PackedOperand of A is refused by S (item 12)', async () => {
    const A = await GpuContext.create({ device: gpu!.device });
    const S = await GpuContext.create({ device: gpu!.device });
    const packed = await A.prepack('rhs', problem(1).rhs as never);
    const e = await inputErrorOf(S.gemm({ ...problem(1), rhs: packed }));
    expect(e.field).toBe('rhs');
    expect(e.message).toMatch(/another GpuContext/);
    expect(Array.from((await A.gemm({ ...problem(1), rhs: packed })).data)).toEqual(Array(6).fill(4));
    A.destroy();
    S.destroy();
  });

  it('read(undefined), read(null), releaseMatrix(null) are InputErrors naming matrix; read rejects, never throws', async () => {
    const A = await GpuContext.create({ device: gpu!.device });
    for (const bad of [undefined, null, 3, {}]) {
      let promise: Promise<unknown> | undefined;
      expect(() => {
        promise = A.read(bad as never);
      }).not.toThrow();
      expect((await inputErrorOf(promise!)).field).toBe('matrix');
      expect((await inputErrorOf(() => A.releaseMatrix(bad as never))).field).toBe('matrix');
    }
    A.destroy();
  });

  it("a call on a destroyed context with a GpuMatrix lhs is a DeviceLostError, not a complaint about the caller's matrix", async () => {
    const A = await GpuContext.create({ device: gpu!.device });
    const m = await A.gemmOnGpu(problem(1)); // 3 x 2
    const packed = await A.prepack('rhs', { data: new Uint8Array(8).fill(1), rows: 2, cols: 4 });
    A.destroy();
    const geometry = { batch: 1, height: 3, width: 1, channels: 2, filterHeight: 1, filterWidth: 1 };
    const calls = [
      A.gemm({ lhs: m, rhs: packed }),
      A.gemmOnGpu({ lhs: m, rhs: packed }),
      A.gemm({ lhs: { input: m, geometry, zeroPoint: 0 }, rhs: packed } as never),
      A.gemm({ lhs: m, rhs: { data: new Uint8Array(8), rows: 2, cols: 4 } }),
    ];
    for (const call of calls) {
      const e = await call.then(
        () => null,
        (x: unknown) => x,
      );
      expect(e).toBeInstanceOf(DeviceLostError);
      expect((e as DeviceLostError).reason).toBe('destroyed');
    }
  });

  it('destroy() during prepack rejects with DeviceLostError (item 8)', async () => {
    for (let batch = 0; batch < 5; batch++) {
      const own = await GpuContext.create({ device: gpu!.device });
      const rhs = { data: new Uint8Array(64 * 64).fill(3), rows: 64, cols: 64 };
      const calls = [own.prepack('rhs', rhs), own.prepack('lhs', rhs), own.prepack('rhs', rhs)];
      await new Promise((r) => setTimeout(r, batch));
      own.destroy();
      await expectResolvedOrDeviceLost(calls);
    }
  });
});
