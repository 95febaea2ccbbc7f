// Library misuse (src/api.ts, src/problem/): every bad call is an InputError naming the field, every async
// entry point rejects (never throws), and a value from the input is echoed cut to about 100 characters
// (src/problem/echo.ts brief), Infinity and NaN printed as themselves. CPU backend: no device needed. A
// dawnPath that is not a native addon is refused before it is loaded (NoAdapterError), never run or parsed.

import { describe, expect, it } from 'vitest';
import { describeDevice, elementwise, gemm } from '../../src/api.ts';
import { checkLayers, runLayers } from '../../src/layers/sequential.ts';
import { verifyDevice } from '../../src/verify.ts';
import { isHardwareAdapterAvailable } from '../../src/gpu/acquire.ts';
import { InputError } from '../../src/errors.ts';
import { brief } from '../../src/problem/echo.ts';
import { GpuContext } from '../../src/scheduler/context.ts';
import { configureWasm as configureCpu } from '../../src/kernels/cpu-wasm/engine.ts';

const lhs = { data: new Uint8Array([1, 2]), rows: 1, cols: 2 };
const rhs = { data: new Uint8Array([3, 4]), rows: 2, cols: 1 };

/** Calls f; it must return a promise (not throw) that rejects with an InputError on `field`. */
async function rejectsOn(field: string, f: () => Promise<unknown>): Promise<InputError> {
  let promise: Promise<unknown> | undefined;
  expect(() => {
    promise = f();
  }, 'an async entry point rejects, never throws').not.toThrow();
  let err: unknown;
  try {
    await promise;
  } catch (e) {
    err = e;
  }
  expect(err).toBeInstanceOf(InputError);
  expect((err as InputError).field).toBe(field);
  return err as InputError;
}

describe('library misuse: InputError naming the field, always a rejection', () => {
  it.each([null, undefined, 42, 'p'])('gemm(%s)', async (p) => {
    await rejectsOn('problem', () => gemm(p as never));
  });
  it.each([null, undefined, 7])('elementwise(%s)', async (p) => {
    await rejectsOn('problem', () => elementwise(p as never));
  });
  it('gemm(p, null) and a non-object options reject', async () => {
    await rejectsOn('options', () => gemm({ lhs, rhs }, null as never));
    await rejectsOn('options', () => gemm({ lhs, rhs }, 'cpu' as never));
  });
  it.each(['gpu', 42, '', null])('backend %j is refused, never run as auto', async (backend) => {
    const e = await rejectsOn('backend', () => gemm({ lhs, rhs }, { backend: backend as never }));
    expect(e.message).toMatch(/auto.*cpu.*webgpu/);
  });
  it('a BigInt zero point', async () => {
    const e = await rejectsOn('lhsZeroPoint', () => gemm({ lhs, rhs, lhsZeroPoint: 3n as never }, { backend: 'cpu' }));
    expect(e.message).toMatch(/got 3n?\b/);
  });
  it('a huge typed-array zero point gives a short message', async () => {
    const e = await rejectsOn('rhsZeroPoint', () => gemm({ lhs, rhs, rhsZeroPoint: new Float64Array(1e6) as never }, { backend: 'cpu' }));
    expect(e.message.length).toBeLessThan(300);
  });
  it('Infinity and NaN are printed as themselves', async () => {
    expect(
      (await rejectsOn('lhsZeroPoint', () => gemm({ lhs, rhs, lhsZeroPoint: Number.POSITIVE_INFINITY }, { backend: 'cpu' }))).message,
    ).toMatch(/got Infinity/);
    expect((await rejectsOn('rhsZeroPoint', () => gemm({ lhs, rhs, rhsZeroPoint: Number.NaN }, { backend: 'cpu' }))).message).toMatch(
      /got NaN/,
    );
  });
  it('a long string is echoed cut', async () => {
    const e = await rejectsOn('pipeline[0].type', () =>
      gemm({ lhs, rhs, pipeline: [{ type: 'x'.repeat(100_000) } as never] }, { backend: 'cpu' }),
    );
    expect(e.message.length).toBeLessThan(300);
  });
  it('options of the wrong type name the option, before any work, on any backend (a device that is not a GPUDevice, callbacks, strings, limits, tables, toggles)', async () => {
    for (const [opts, field] of [
      [{ device: {} }, 'device'],
      [{ backend: 'webgpu', device: 'x' }, 'device'],
      [{ onKernel: 3 }, 'onKernel'],
      [{ onTrace: 'log' }, 'onTrace'],
      [{ warn: true }, 'warn'],
      [{ kernel: 5 }, 'kernel'],
      [{ timestamps: 'yes' }, 'timestamps'],
      [{ powerPreference: 'fast' }, 'powerPreference'],
      // A GPU context's options are checked whatever backend runs: on the CPU too.
      [{ limits: { maxStorageBufferBindingSize: -1 } }, 'limits.maxStorageBufferBindingSize'],
      [{ limits: 'small' }, 'limits'],
      [{ tuning: { format: 'x' } }, 'tuning.format'],
      [{ toggles: ['disable_everything'] }, 'toggles'],
      [{ backnd: 'webgpu' }, 'backnd'], // a misspelt option: it ran with the default
      [{ onkernel: () => {} }, 'onkernel'],
    ] as const) {
      let ran = false;
      const withSpy = { backend: 'cpu', ...opts, ...(field === 'onKernel' ? {} : { onKernel: () => (ran = true) }) };
      await rejectsOn(field, () => gemm({ lhs, rhs }, withSpy as never));
      expect(ran, JSON.stringify(opts)).toBe(false);
    }
  });
  it('a misspelt option of GpuContext.create or configureCpu is an InputError naming it, not ignored', async () => {
    await rejectsOn('timestamp', () => GpuContext.create({ timestamp: true } as never));
    await rejectsOn('thread', async () => configureCpu({ thread: 1 } as never));
    const layers = [{ op: 'requantize', params: { output: { scale: 1, zeroPoint: 0 } } }] as never;
    const x = { data: new Int8Array(2), shape: [2] };
    await rejectsOn('input', async () => checkLayers(layers, x as never, { input: { scale: 1, zeroPoint: 0 } } as never));
    await rejectsOn('backnd', () =>
      runLayers(layers, x as never, { inputs: { input: { scale: 1, zeroPoint: 0 } }, backnd: 'cpu' } as never),
    );
    await rejectsOn('kernel', () => verifyDevice({ backend: 'cpu', kernel: ['cpu-js'] } as never)); // it checked every kernel
  });
  it('a kernel of the other backend, where the backend is named: an InputError naming kernel', async () => {
    const e = await rejectsOn('kernel', () => gemm({ lhs, rhs }, { backend: 'cpu', kernel: 'gemv' }));
    expect(e.message).toMatch(/gemv is a WebGPU kernel; backend cpu runs cpu-/);
    await rejectsOn('kernel', () => gemm({ lhs, rhs }, { backend: 'webgpu', kernel: 'cpu-js' }));
  });
  it('null where a value belongs is an InputError naming it, never taken as absent', async () => {
    const cast = { type: 'saturatingCast', to: 'uint8' } as const;
    const scale = { type: 'scaleInt32ByFixedPointAndExponent', multiplier: 1 << 30, exponent: -1, offsetAfterShift: 0 } as const;
    for (const [field, p] of [
      ['dstOrder', { lhs, rhs, dstOrder: null }],
      ['pipeline', { lhs, rhs, pipeline: null }],
      ['bitDepth.rounding', { lhs, rhs, bitDepth: { lhs: 4, rhs: 4, rounding: null } }],
      ['pipeline[0].rounding', { lhs, rhs, pipeline: [{ ...scale, rounding: null }, cast] }],
    ] as const) {
      await rejectsOn(field, () => gemm(p as never, { backend: 'cpu' }));
    }
    await rejectsOn('backend', () => gemm({ lhs, rhs }, { backend: null as never }));
  });
  it('describeDevice(null) and isHardwareAdapterAvailable(null) or its bad options: an InputError naming them', async () => {
    await rejectsOn('options', () => describeDevice(null as never));
    await rejectsOn('options', () => isHardwareAdapterAvailable(null as never));
    await rejectsOn('options', () => isHardwareAdapterAvailable([] as never));
    await rejectsOn('powerPreference', () => isHardwareAdapterAvailable({ powerPreference: 'fast' as never }));
    await rejectsOn('toggles', () => isHardwareAdapterAvailable({ toggles: ['nope' as never] }));
    await rejectsOn('dawnPath', () => isHardwareAdapterAvailable({ dawnPath: 3 as never }));
  });
  it('a valid call still runs', async () => {
    expect(Array.from((await gemm({ lhs, rhs }, { backend: 'cpu' })).data)).toEqual([11]);
  });
});

describe('brief', () => {
  it('cuts, names arrays and typed arrays by length, prints numbers as they are', () => {
    expect(brief('x'.repeat(1000)).length).toBeLessThan(140);
    expect(brief(new Float64Array(5))).toBe('a Float64Array of 5');
    expect(brief([1, 2])).toBe('an array of 2');
    expect(brief(Number.NaN)).toBe('NaN');
    expect(brief(Number.NEGATIVE_INFINITY)).toBe('-Infinity');
    expect(brief(3n)).toBe('3n');
    expect(brief(Symbol('s'))).toBe('Symbol(s)');
  });
});

describe("a dawnPath that is not Dawn's binding", () => {
  it('is never run or parsed: NoAdapterError saying so (a .js or .json file, a shared library)', async () => {
    for (const path of ['package.json', 'vite.config.ts', '/dev/null']) {
      await expect(gemm({ lhs, rhs }, { backend: 'webgpu', dawnPath: path })).rejects.toMatchObject({
        name: 'NoAdapterError',
        message: expect.stringContaining(`${path}: could not load it (it is not a native addon`),
      });
    }
  });
});
