// Unit tier: the kernel registry (src/kernels/registry.ts) without a GPU: the choice table by adapter
// capability and shape class, forcing a kernel (option and QGEMM_KERNEL), pack-format matching, and
// the errors for a kernel that does not exist or cannot run the case.

import { afterEach, describe, expect, it } from 'vitest';
import { InputError } from '../../src/errors.ts';
import { CPU_KERNELS, GPU_KERNELS, kernelIds, selectCpuKernel, selectGemmKernel } from '../../src/kernels/registry.ts';
import { normalizeProblem } from '../../src/problem/problem.ts';
import { h100Caps, testCaps, testShape } from '../support/caps.ts';

const caps = testCaps;
const shape = (M: number, N: number, K: number) => testShape(M, N, K);
/** A runtime without WebAssembly SIMD or threads: the CPU rows' JavaScript-only column. */
const JS_ONLY = { wasmSimd: false, relaxedSimd: false, threads: 1, sharedMemory: false };

afterEach(() => {
  delete process.env.QGEMM_KERNEL;
});

describe('selectGemmKernel', () => {
  it('picks a kernel every adapter can run, and one that supports the shape', () => {
    for (const c of [caps(), caps({ dot4: false }), caps({ subgroups: true, subgroupMinSize: 32, subgroupMaxSize: 32 })]) {
      for (const [M, N, K] of [
        [1, 4096, 4096],
        [4, 7, 9],
        [5, 100, 64],
        [64, 64, 64],
        [4096, 4096, 4096],
        [3136, 64, 576],
      ]) {
        const k = selectGemmKernel(c, shape(M, N, K));
        expect(k.supports(c, shape(M, N, K))).toBe(true);
        if (!c.dot4) expect(k.id).toMatch(/emulated/);
      }
    }
  });
  it('every listed kernel has a unique id, and kernelIds lists them all', () => {
    const ids = [...GPU_KERNELS, ...CPU_KERNELS].map((k) => k.id);
    expect(new Set(ids).size).toBe(ids.length);
    expect([...kernelIds().webgpu, ...kernelIds().cpu]).toEqual(ids);
  });
  it('forces a kernel by option or by QGEMM_KERNEL, the option first', () => {
    const runnable = GPU_KERNELS.filter((k) => k.supports(caps(), shape(100, 100, 100)));
    const id = runnable[runnable.length - 1].id;
    expect(selectGemmKernel(caps(), shape(100, 100, 100), { force: id }).id).toBe(id);
    process.env.QGEMM_KERNEL = id;
    expect(selectGemmKernel(caps(), shape(100, 100, 100)).id).toBe(id);
    const other = runnable[0].id;
    expect(selectGemmKernel(caps(), shape(100, 100, 100), { force: other }).id).toBe(other);
  });
  it('an unknown kernel, or one the adapter cannot run, is an InputError naming `kernel`', () => {
    expect(() => selectGemmKernel(caps(), shape(8, 8, 8), { force: 'no-such-kernel' })).toThrow(InputError);
    const native = GPU_KERNELS.find((k) => !k.supports(caps({ dot4: false }), shape(8, 8, 8)));
    if (native)
      expect(() => selectGemmKernel(caps({ dot4: false }), shape(8, 8, 8), { force: native.id })).toThrow(/kernel: kernel .* cannot run/);
  });
  it('an unknown kernel or one that cannot run, from QGEMM_KERNEL, names QGEMM_KERNEL (the option, `kernel`)', () => {
    process.env.QGEMM_KERNEL = 'no-such-kernel';
    const field = (f: () => unknown) => {
      try {
        f();
      } catch (e) {
        return (e as InputError).field;
      }
    };
    expect(field(() => selectGemmKernel(caps(), shape(8, 8, 8)))).toBe('QGEMM_KERNEL');
    const p = normalizeProblem({
      lhs: { data: new Uint8Array(6), rows: 2, cols: 3, order: 'row-major' },
      rhs: { data: new Uint8Array(12), rows: 3, cols: 4, order: 'row-major' },
    });
    expect(field(() => selectCpuKernel(JS_ONLY, p))).toBe('QGEMM_KERNEL');
    expect(field(() => selectGemmKernel(caps(), shape(8, 8, 8), { force: 'no-such-kernel-either' }))).toBe('kernel');
    const native = GPU_KERNELS.find((k) => !k.supports(caps({ dot4: false }), shape(8, 8, 8)));
    process.env.QGEMM_KERNEL = native?.id;
    if (native) expect(field(() => selectGemmKernel(caps({ dot4: false }), shape(8, 8, 8)))).toBe('QGEMM_KERNEL');
  });
  it('a CPU kernel forced on the GPU path leaves the choice to the table', () => {
    expect(selectGemmKernel(caps(), shape(8, 8, 8), { force: 'cpu-js' }).backend).toBe('webgpu');
  });
  it('only kernels reading the format of a packed operand qualify', () => {
    const k = selectGemmKernel(caps(), shape(64, 64, 64), { packFormat: 'u8k4-r64' });
    expect(k.packFormat).toBe('u8k4-r64');
  });
  it('skinny shapes: gemv for M <= 4 (subgroup reduction where offered), split-K for small M with few tiles and large K', () => {
    const sg = caps({ subgroups: true });
    expect(selectGemmKernel(sg, shape(1, 4096, 4096)).id).toBe('gemv');
    expect(selectGemmKernel(caps(), shape(4, 4096, 4096)).id).toBe('gemv-workgroup');
    expect(selectGemmKernel(caps({ dot4: false }), shape(1, 4096, 4096)).id).toBe('gemv-emulated');
    expect(selectGemmKernel(sg, shape(16, 4096, 4096)).id).toBe('splitk-32x32');
    expect(selectGemmKernel(sg, shape(128, 4096, 4096)).id).toBe('splitk-32x32');
    expect(selectGemmKernel(sg, shape(16, 4096, 128)).id).toBe('dot4-32x32'); // K too short to split
    expect(selectGemmKernel(sg, shape(129, 4096, 4096)).id).toBe('dot4-64x64');
    // A software adapter runs a few workgroups at a time: its grid is full already.
    expect(selectGemmKernel(caps({ isSoftware: true }), shape(16, 1024, 1024)).id).toBe('dot4-32x32');
  });
  it('M >= 64 on the tensor cores where the adapter has them: split-K where the 64x64 grid leaves the GPU idle', () => {
    const h100 = h100Caps();
    expect(selectGemmKernel(h100, shape(128, 4096, 4096)).id).toBe('sgmat-64x64-sk');
    expect(selectGemmKernel(h100, shape(128, 1024, 1024)).id).toBe('sgmat-64x64-sk');
    expect(selectGemmKernel(h100, shape(64, 11008, 11008)).id).toBe('sgmat-64x64-sk');
    expect(selectGemmKernel(h100, shape(128, 11008, 11008)).id).toBe('sgmat-64x64'); // 344 tiles: one slice
    expect(selectGemmKernel(h100, shape(128, 1024, 128)).id).toBe('sgmat-64x64'); // K too short to split
    expect(selectGemmKernel(h100, shape(4096, 4096, 4096)).id).toBe('sgmat-64x64');
    expect(selectGemmKernel(h100, shape(96, 4096, 4096)).id).toBe('sgmat-64x64-sk');
    // Below 64 rows, and at N <= 32, the dot4 ladder as before; M <= 4 stays gemv.
    expect(selectGemmKernel(h100, shape(16, 1024, 1024)).id).toBe('splitk-32x32');
    expect(selectGemmKernel(h100, shape(128, 32, 4096)).id).toBe('splitk-32x32');
    expect(selectGemmKernel(h100, shape(256, 32, 256)).id).toBe('dot4-32x32');
    expect(selectGemmKernel(h100, shape(1, 4096, 4096)).id).toBe('gemv');
    // A split-K kernel that failed its self-test: the one-pass kernel; both failed: the dot4 ladder.
    expect(selectGemmKernel(h100, shape(128, 4096, 4096), { disabled: new Set(['sgmat-64x64-sk']) }).id).toBe('sgmat-64x64');
    const neither = new Set(['sgmat-64x64-sk', 'sgmat-64x64']);
    expect(selectGemmKernel(h100, shape(128, 4096, 4096), { disabled: neither }).id).toBe('splitk-32x32');
    // 4-bit rhs keeps the nibble kernels: the tensor cores' split-K '-u4', else split-K u4.
    const b4 = { ...shape(128, 4096, 4096), bitDepth: { lhs: 8, rhs: 4, rounding: 'nearest' as const } };
    expect(selectGemmKernel(h100, b4).id).toBe('sgmat-64x64-sk-u4');
    expect(selectGemmKernel(h100, b4, { disabled: new Set(['sgmat-64x64-sk-u4']) }).id).toBe('splitk-u4-32x32');
  });
  it('4-bit rhs: nibble kernels up to M = 128 (8-bit lanes above), a nibble-prepacked rhs at any M', () => {
    const sg = caps({ subgroups: true });
    const b4 = (M: number) => ({ ...shape(M, 4096, 4096), bitDepth: { lhs: 8, rhs: 4, rounding: 'nearest' as const } });
    expect(selectGemmKernel(sg, b4(1)).id).toBe('gemv-u4');
    expect(selectGemmKernel(caps(), b4(3)).id).toBe('gemv-u4-workgroup');
    expect(selectGemmKernel(sg, b4(64)).id).toBe('splitk-u4-32x32');
    expect(selectGemmKernel(sg, b4(512)).id).toBe('dot4-128x128'); // 8-bit lanes: the wide tiles at M, N >= 256
    expect(selectGemmKernel(sg, b4(512), { rhsPackFormat: 'u4k8-r64' }).id).toBe('splitk-u4-32x32');
    expect(selectGemmKernel(sg, b4(512), { rhsPackFormat: 'u4k8-r128' }).id).toBe('splitk-u4-32x32');
    expect(selectGemmKernel(sg, b4(3), { rhsPackFormat: 'u4k8-r256' }).id).toBe('gemv-u4');
    expect(selectGemmKernel(sg, b4(2), { rhsPackFormat: 'u8k4-r64' }).id).toBe('gemv');
    // A nibble kernel cannot run an 8-bit rhs, nor read an 8-bit-packed one.
    expect(() => selectGemmKernel(sg, shape(1, 64, 64), { force: 'gemv-u4' })).toThrow(InputError);
    expect(() => selectGemmKernel(sg, b4(1), { force: 'gemv-u4', rhsPackFormat: 'u8k4-r64' })).toThrow(InputError);
  });
  it('4-bit rhs on the tensor cores: sgmat-64x64-u4 where an 8-bit rhs gets tiles, unless disabled by its self-test', () => {
    const b4 = (M: number, N = 4096, K = 4096) => ({ ...shape(M, N, K), bitDepth: { lhs: 8, rhs: 4, rounding: 'nearest' as const } });
    const h100 = h100Caps();
    // As for an 8-bit rhs: split-K where the 64 x 64 grid alone would leave the GPU idle, else one pass.
    expect(selectGemmKernel(h100, shape(129, 4096, 4096)).id).toBe('sgmat-64x64-sk');
    expect(selectGemmKernel(h100, b4(129)).id).toBe('sgmat-64x64-sk-u4');
    expect(selectGemmKernel(h100, b4(512)).id).toBe('sgmat-64x64-u4');
    expect(selectGemmKernel(h100, b4(4096), { rhsPackFormat: 'u4k8-r64' }).id).toBe('sgmat-64x64-u4');
    expect(selectGemmKernel(h100, b4(4096), { rhsPackFormat: 'u4k8-r128' }).id).toBe('sgmat-64x64-u4'); // as prepacked
    expect(selectGemmKernel(h100, b4(512)).rhsPackFormat).toBe('u4k8-r64');
    // The bench's 128x11008x11008: tiles, as for 8 bits (2.70 ms split-K u4 against 0.42 ms sgmat-64x64 on the H100).
    expect(selectGemmKernel(h100, shape(128, 11008, 11008)).id).toBe('sgmat-64x64');
    expect(selectGemmKernel(h100, b4(128, 11008, 11008)).id).toBe('sgmat-64x64-u4');
    expect(selectGemmKernel(h100, b4(128, 11008, 11008), { rhsPackFormat: 'u4k8-r64' }).id).toBe('sgmat-64x64-u4');
    // Where split-K pays (few tiles, deep K): the tensor cores' split-K '-u4' at M >= 64, as an 8-bit rhs
    // gets 'sgmat-64x64-sk'; below, M <= 4, or N <= 32: the nibble gemv and split-K kernels, or the 32-tiles.
    expect(selectGemmKernel(h100, shape(128, 4096, 4096)).id).toBe('sgmat-64x64-sk');
    expect(selectGemmKernel(h100, b4(128)).id).toBe('sgmat-64x64-sk-u4');
    expect(selectGemmKernel(h100, b4(128), { rhsPackFormat: 'u4k8-r128' }).rhsPackFormat).toBe('u4k8-r64');
    expect(selectGemmKernel(h100, b4(16, 1024, 1024)).id).toBe('splitk-u4-32x32');
    expect(selectGemmKernel(h100, b4(32, 11008, 11008)).id).toBe('splitk-u4-32x32');
    expect(selectGemmKernel(h100, b4(1)).id).toBe('gemv-u4');
    expect(selectGemmKernel(h100, b4(512, 32)).id).toBe('dot4-32x32');
    expect(selectGemmKernel(h100, b4(512, 32), { rhsPackFormat: 'u4k8-r64' }).id).toBe('splitk-u4-32x32');
    // A failed self-test: the 8-bit tensor-core kernel (8-bit lanes), or split-K u4 for a nibble-prepacked rhs.
    const disabled = new Set(['sgmat-64x64-u4']);
    expect(selectGemmKernel(h100, b4(512), { disabled }).id).toBe('sgmat-64x64');
    expect(selectGemmKernel(h100, b4(512), { disabled, rhsPackFormat: 'u4k8-r64' }).id).toBe('splitk-u4-32x32');
    expect(selectGemmKernel(h100, b4(128), { disabled: new Set(['sgmat-64x64-sk-u4']) }).id).toBe('splitk-u4-32x32');
    // Without subgroup matrices, or with an 8-bit rhs, the choices of before.
    expect(selectGemmKernel(caps({ subgroups: true }), b4(512)).id).toBe('dot4-128x128');
    expect(selectGemmKernel(h100, shape(512, 4096, 4096)).id).toBe('sgmat-64x64');
    expect(() => selectGemmKernel(h100, shape(512, 4096, 4096), { force: 'sgmat-64x64-u4' })).toThrow(/cannot run/);
    expect(() => selectGemmKernel(h100, shape(128, 4096, 4096), { force: 'sgmat-64x64-sk-u4' })).toThrow(/cannot run/);
  });
});

describe('selectGemmKernel on a compatibility-mode device (128 invocations, 128 along x)', () => {
  const compat = { maxComputeInvocationsPerWorkgroup: 128, maxComputeWorkgroupSizeX: 128 };
  const adapters = {
    'dot4 with subgroups': testCaps({ limits: { ...testCaps().limits, ...compat } }),
    'subgroup matrices (32-wide subgroups)': h100Caps({ limits: { ...h100Caps().limits, ...compat } }),
  };
  const sides = [1, 4, 5, 16, 33, 64, 65, 128, 256, 1024, 4096];
  for (const [name, caps] of Object.entries(adapters)) {
    it(`${name}: every choice over a shape sweep fits, and a kernel that does not is refused when forced`, () => {
      for (const M of sides)
        for (const N of sides)
          for (const K of [64, 4096]) {
            const id = selectGemmKernel(caps, testShape(M, N, K)).id;
            expect(id, `${M}x${N}x${K}`).not.toMatch(/^dot4-(64x64|128x128)|^sgmat-(128|256)|-w4x2|-w2x4/);
          }
      expect(() => selectGemmKernel(caps, testShape(256, 256, 64), { force: 'dot4-64x64' })).toThrow(/cannot run/);
      expect(() => selectGemmKernel(caps, testShape(256, 256, 64), { force: 'dot4-128x128' })).toThrow(/cannot run/);
    });
  }
  it('the 4-subgroup tensor-core tiling fits (4 x 32 invocations) and still serves large shapes', () => {
    expect(selectGemmKernel(adapters['subgroup matrices (32-wide subgroups)'], testShape(4096, 4096, 4096)).id).toBe('sgmat-64x64');
  });
});

describe('selectCpuKernel', () => {
  const p = normalizeProblem({
    lhs: { data: new Uint8Array(6), rows: 2, cols: 3, order: 'row-major' },
    rhs: { data: new Uint8Array(12), rows: 3, cols: 4, order: 'row-major' },
  });
  it('picks a CPU kernel that supports the problem', () => {
    const k = selectCpuKernel(JS_ONLY, p);
    expect(k.backend).toBe('cpu');
    expect(k.supports(JS_ONLY, p)).toBe(true);
  });
  it('forces one by id; a GPU id leaves the choice to the table', () => {
    expect(selectCpuKernel(JS_ONLY, p, { force: 'cpu-js' }).id).toBe('cpu-js');
    expect(selectCpuKernel(JS_ONLY, p, { force: GPU_KERNELS[0].id }).backend).toBe('cpu');
    expect(() => selectCpuKernel(JS_ONLY, p, { force: 'nope' })).toThrow(InputError);
  });
});
