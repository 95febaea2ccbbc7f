// GPU tier for tuning tables on SwiftShader (src/kernels/tuning.ts; the tuner itself, src/tune.ts, runs through
// the binary in test/cli/tune-cli.test.ts): a GpuContext created with a table runs the table's kernel
// where an entry serves the shape (exact against the reference) and the rules elsewhere; a table whose kernel
// fails its exactness self-test is refused with a warning and the rules serve; a table naming a 256-wide
// tiling makes the context prepack at 256 rows; a table of another adapter and
// a malformed one are InputErrors before any GEMM.

import { afterAll, describe, expect, it, vi } from 'vitest';
import { describeDevice } from '../../src/api.ts';
import { InputError } from '../../src/errors.ts';
import { bandedKernel, dot4TileLoop, tileBindings } from '../../src/kernels/banded.ts';
import { defineKernelFamily } from '../../src/kernels/kernel-configs.ts';
import { sgmatEmulatedKernel } from '../../src/kernels/sgmat/emulation.ts';
import { parseTuningTable, TUNING_FORMAT, type TuningTable, tuningAdapter } from '../../src/kernels/tuning.ts';
import { gemmKernelSource } from '../../src/epilogue/source.ts';
import dot4Gemm from '../../src/kernels/dot4-tiled/gemm.wgsl?raw';
import { referenceGemm } from '../../src/reference/gemm.ts';
import { GpuContext } from '../../src/scheduler/context.ts';
import { arbProblemOfShape } from '../support/arbitraries.ts';
import { diffResults, formatMismatch } from '../support/compare.ts';
import fc from 'fast-check';
import { getGpu, releaseGpu } from './gpu-env.ts';

vi.setConfig({ testTimeout: 600_000, hookTimeout: 600_000 });
const gpu = await getGpu();
afterAll(releaseGpu);

describe.skipIf(!gpu)('tune() and tuning tables on this adapter', () => {
  // A table of this adapter, as `qgemm tune` writes it (test/cli/tune-cli.test.ts runs the tuner itself).
  const table: TuningTable = parseTuningTable({
    format: TUNING_FORMAT,
    adapter: tuningAdapter(gpu?.summary ?? { vendor: '', architecture: '', device: '', description: '' }),
    entries: [{ class: 'square', shape: { M: 128, N: 128, K: 128 }, kernel: { family: 'registry', id: 'dot4-64x64' } }],
  });

  const problem = (M: number, N: number, K: number, seed: number) => fc.sample(arbProblemOfShape(M, N, K), { numRuns: 1, seed })[0];
  const exact = async (ctx: GpuContext, p: ReturnType<typeof problem>, what: string) => {
    const d = diffResults(await ctx.gemm(p), referenceGemm(p));
    if (d) expect.fail(formatMismatch(d, what));
  };

  /**
   * A table of one entry naming family `family`, defined as a dot4-tiled kernel `id` with square tiles of
   * `tile` whose k loop skips the last word of every step (wrong sums); a context made with it, its
   * warnings, and a GEMM of the entry's shape: exact, since the kernel fails its self-test and the rules serve.
   */
  const planted = async (family: string, id: string, tile: 32 | 64, seed: number) => {
    const broken = gemmKernelSource(
      [
        tileBindings,
        dot4TileLoop.replace('for (var kw = 0u; kw < TILE_KW; kw++)', 'for (var kw = 0u; kw + 1u < TILE_KW; kw++)'),
        dot4Gemm,
      ].join('\n'),
      false,
    );
    const overrides = { TILE_M: tile, TILE_N: tile, TILE_KW: 16 };
    defineKernelFamily(family, () =>
      bandedKernel({ id, source: broken, entryPoint: 'gemm', overrides, tileM: tile, tileN: tile, supports: () => true }),
    );
    const t = { ...table, entries: [{ ...table.entries[0], kernel: { family } }] } as unknown as TuningTable;
    const warnings: string[] = [];
    const ctx = await GpuContext.create({ device: gpu!.device, tuning: t, warn: (m) => warnings.push(m) });
    const s = table.entries[0].shape;
    await exact(ctx, problem(s.M, s.N, s.K, seed), 'refused');
    return { ctx, warnings: warnings.join('\n') };
  };

  it("a context created with the table runs the table's kernel where an entry serves the shape, the rules elsewhere", async () => {
    // The tuned entry, pointed at a configuration the rules never choose, so that its use shows.
    const t: TuningTable = {
      ...table,
      entries: [{ ...table.entries[0], kernel: { family: 'dot4-tiled', dot4: 'native', tileM: 32, tileN: 64, tileKW: 8 } }],
    };
    if (!gpu!.hasDot4) (t.entries[0].kernel as { dot4: string }).dot4 = 'emulated';
    const ctx = await GpuContext.create({ device: gpu!.device, tuning: t, tuningName: 'test table' });
    expect([ctx.tuning.source, ctx.tuning.name]).toEqual(['user', 'test table']);
    await exact(ctx, problem(100, 140, 90, 1), 'tuned');
    expect(ctx.lastRun.kernel).toMatch(/^dot4-32x64-kw8/);
    const rules = await GpuContext.create({ device: gpu!.device });
    await exact(ctx, problem(5, 300, 70, 2), 'rules');
    await rules.gemm(problem(5, 300, 70, 2));
    expect(ctx.lastRun.kernel).toBe(rules.lastRun.kernel);
    ctx.destroy();
    rules.destroy();
  });

  it("describeDevice names the table as asked: the shared context's key holds tuningName", async () => {
    const a = await describeDevice({ tuning: table, tuningName: 'A' });
    const b = await describeDevice({ tuning: table, tuningName: 'B' });
    expect([a.tuning?.name, b.tuning?.name]).toEqual(['A', 'B']);
    expect(a.tuning?.description).toMatch(/^table A, /);
  });

  it('a table whose kernel fails its self-test is refused with a warning, and the rules serve', async () => {
    const { ctx, warnings } = await planted('planted', 'planted-64x64', 64, 3);
    expect(warnings).toMatch(/planted-64x64 failed its exactness self-test.*differ/);
    expect(ctx.lastRun.kernel).not.toBe('planted-64x64');
    ctx.destroy();
  });

  it("a self-test that a context's lowered limits keep from running disables the kernel in that context only, not on the device", async () => {
    const t: TuningTable = {
      ...table,
      entries: [
        {
          ...table.entries[0],
          kernel: { family: 'dot4-tiled', dot4: gpu!.hasDot4 ? 'native' : 'emulated', tileM: 32, tileN: 64, tileKW: 4 },
        },
      ],
    };
    const warnings: string[] = [];
    // One binding of 1 MiB: the self-test's deep problem (64 x 64 x 40000) exceeds it.
    const small = await GpuContext.create({
      device: gpu!.device,
      tuning: t,
      limits: { maxStorageBufferBindingSize: 1 << 20 },
      warn: (m) => warnings.push(m),
    });
    await exact(small, problem(100, 140, 90, 4), 'lowered limits');
    expect(small.lastRun.kernel).not.toMatch(/^dot4-32x64-kw4/);
    expect(warnings.join('\n')).toMatch(
      /dot4-32x64-kw4\S* could not run its exactness self-test here and is not used by this context \(problem 2 \(64x64x40000\) threw/,
    );
    small.destroy();
    // Another context on the same device runs the self-test itself, passes it, and uses the kernel.
    const normal = await GpuContext.create({ device: gpu!.device, tuning: t, warn: (m) => warnings.push(m) });
    await exact(normal, problem(100, 140, 90, 5), 'normal limits');
    expect(normal.lastRun.kernel).toMatch(/^dot4-32x64-kw4/);
    expect(warnings).toHaveLength(1);
    normal.destroy();
  });

  it("a context whose table names a 256-wide tiling prepacks at 256 rows, so the table's kernel can read the pack", async () => {
    // The emulated subgroup-matrix kernel at 256 x 128 (no GEMM runs: only the prepack's format is checked).
    const config = { componentType: 'u8', M: 8, N: 8, K: 8, subgroupSize: 8 } as const;
    const tiling = { tileM: 256, tileN: 128, sgRows: 4, sgCols: 2, kStep: 32, buffers: 1 } as const;
    defineKernelFamily('wide-emulated', () => sgmatEmulatedKernel(config, { tiling, id: 'wide-emulated' }));
    const t = { ...table, entries: [{ ...table.entries[0], kernel: { family: 'wide-emulated' } }] } as unknown as TuningTable;
    const rhs = problem(8, 40, 30, 5).rhs;
    const wide = await GpuContext.create({ device: gpu!.device, tuning: t });
    const plain = await GpuContext.create({ device: gpu!.device });
    for (const [ctx, format] of [
      [wide, 'u8k4-r256'],
      [plain, 'u8k4-r128'],
    ] as const) {
      const packed = await ctx.prepack('rhs', rhs);
      expect(packed.packFormat).toBe(format);
      packed.destroy();
      ctx.destroy();
    }
  });

  it('a table of another adapter, or a malformed one, is an InputError naming the field', async () => {
    const other = { ...table, adapter: { ...table.adapter, device: 'nvidia-h100-80gb-hbm3' } };
    await expect(GpuContext.create({ device: gpu!.device, tuning: other })).rejects.toThrow(InputError);
    await expect(GpuContext.create({ device: gpu!.device, tuning: other })).rejects.toThrow(/^tuning\.adapter: /);
    await expect(GpuContext.create({ device: gpu!.device, tuning: { ...table, format: TUNING_FORMAT.replace('1', '0') } })).rejects.toThrow(
      /^tuning\.format: /,
    );
  });
  it("a table's kernel by a registry kernel's id is self-tested itself (last: the device's verdict on that id stays)", async () => {
    // The planted kernel by the id of a registry kernel: the self-test must run it, not the registry's.
    const id = gpu!.hasDot4 ? 'dot4-32x32' : 'dot4-32x32-emulated';
    const { ctx, warnings } = await planted('planted-registry-id', id, 32, 6);
    expect(warnings).toContain(`${id} failed its exactness self-test`);
    expect(ctx.lastRun.kernel).not.toBe(id);
    ctx.destroy();
  });
});
