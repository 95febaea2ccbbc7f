// `qgemm verify` and verifyDevice() (src/verify.ts, src/cli/verify.ts): the CPU kernels over the fixed
// suite through the CLI (table, --json, exit codes), the prepacked few-row path as a row of its own, and on WebGPU (SwiftShader in CI) a kernel of the
// registry with the emulated subgroup-matrix kernel, which must be listed, labelled and exact; a kernel
// whose text carries a planted bug must make verify report mismatches and fail.

import { afterAll, describe, expect, it, vi } from 'vitest';
import { main } from '../../src/cli/main.ts';
import { needsDevice } from '../../src/cli/quiet.ts';
import { cmdVerify } from '../../src/cli/verify.ts';
import { EMULATED_CONFIGS, sgmatEmulatedKernel } from '../../src/kernels/sgmat/emulation.ts';
import { sgmatSource } from '../../src/kernels/sgmat/kernel.ts';
import {
  VerifyMismatchError,
  verifyConvProblems,
  verifyDevice,
  verifyPrepackedProblems,
  verifyProblems,
  type VerifyReport,
  verifyVerdict,
} from '../../src/verify.ts';
import { getGpu, releaseGpu } from '../gpu/gpu-env.ts';
import { verifyPrepackedDrivers } from '../support/cpu-drivers.ts';

function capture() {
  const out: string[] = [];
  const err: string[] = [];
  return { io: { out: (t: string) => void out.push(t), err: (t: string) => void err.push(t) }, out, err };
}

describe('qgemm verify --backend cpu', () => {
  it('--json: every CPU kernel over the whole suite, 0 mismatches, exit 0', async () => {
    const c = capture();
    expect(await main(['verify', '--backend', 'cpu', '--json'], c.io)).toBe(0);
    const report = JSON.parse(c.out.join('')) as VerifyReport;
    expect(report.backend).toBe('cpu');
    expect(report.ok).toBe(true);
    // Progress on stderr, stdout the JSON alone: a header with the device, then a line per kernel as each is done.
    expect(c.err[0]).toBe(`qgemm verify: cpu on ${report.device}\n`);
    expect(c.err.slice(1)).toEqual(
      report.rows.map((r) =>
        expect.stringMatching(new RegExp(`^ {2}${r.kernel}( \\(.*\\))?: ${r.problems} problems, 0 mismatches, \\d+\\.\\d\\d s\\n$`)),
      ),
    );
    expect(report.rows.map((r) => r.kernel)).toContain('cpu-js');
    for (const r of report.rows) {
      const prepacked = r.configuration.startsWith('prepacked rhs: ');
      expect(r).toMatchObject({ mismatches: 0, detail: '', problems: (prepacked ? verifyPrepackedProblems() : verifyProblems()).length });
      expect(r.ms).toBeGreaterThan(0);
    }
    // Where WebAssembly SIMD runs, the prepacked path's row names the few-row drivers it ran: those of the
    // kernel prepackCpu packs for (the byte lanes and the widening kernel, or the relaxed few-row kernels
    // where the engine proved its relaxed dot exact) and every 4-bit shape (dot7 or the 16-bit one).
    if (report.device.includes('wasm-simd')) {
      const row = report.rows.find((r) => r.configuration.startsWith('prepacked rhs: '));
      expect(row?.kernel).toBe(report.device.includes('relaxed-simd') ? 'cpu-wasm-relaxed' : 'cpu-wasm-simd');
      for (const driver of verifyPrepackedDrivers({ relaxedSimd: report.device.includes('relaxed-simd') }))
        expect(row?.configuration).toMatch(driver);
      for (const shape of ['1x4', '2x2', '4x1']) expect(row?.configuration).toMatch(new RegExp(`gemm_nibble7?_${shape}`));
    }
  });
  it('prints the table kernel | configuration | problems | mismatches | time', async () => {
    const c = capture();
    expect(await main(['verify', '--backend', 'cpu', '--kernel', 'cpu-js'], c.io)).toBe(0);
    const text = c.out.join('');
    expect(text).toMatch(/^kernel +\| configuration \| problems \| mismatches \| time$/m);
    expect(text).toMatch(new RegExp(`^cpu-js +\\| - +\\| ${verifyProblems().length} +\\| 0 +\\| \\d+\\.\\d\\d s$`, 'm'));
    expect(text).toMatch(/all 1 kernels exact/);
  });
  it('counts a kernel checked twice (its prepacked rhs) as rows, and names each row with its configuration', () => {
    const row = (kernel: string, configuration: string, mismatches = 0) =>
      ({ kernel, configuration, problems: 4, mismatches, ms: 1, ran: true }) as never;
    const ok = { ok: true, rows: [row('cpu-wasm-simd', ''), row('cpu-wasm-simd', 'prepacked rhs: gemm_quad_4x4')] } as never;
    expect(verifyVerdict(ok)).toBe('all 2 rows of 1 kernels exact'); // it said "all 2 kernels exact"
    const bad = { ok: false, rows: [row('cpu-wasm-simd', ''), row('cpu-wasm-simd', 'prepacked rhs: gemm_quad_4x4', 1)] } as never;
    expect(verifyVerdict(bad)).toBe('MISMATCH: 1 of 2 rows differ from the reference: cpu-wasm-simd (prepacked rhs: gemm_quad_4x4)');
  });
  it("runs in the quiet child (which drops Dawn's stderr) unless it stays on the CPU", () => {
    expect(needsDevice(['verify'])).toBe(true);
    expect(needsDevice(['verify', '--backend', 'webgpu', '--json'])).toBe(true);
    expect(needsDevice(['verify', '--backend', 'cpu'])).toBe(false);
    expect(needsDevice(['verify', '--backend=cpu'])).toBe(false);
    expect(needsDevice(['verify', '--help'])).toBe(false);
  });
  it('an unknown kernel is bad input (exit 2, naming the flag)', async () => {
    const c = capture();
    expect(await main(['verify', '--backend', 'cpu', '--kernel', 'nope'], c.io)).toBe(2);
    expect(c.err.join('')).toMatch(/^qgemm: error: --kernel: unknown kernel "nope"/);
  });
});

describe('verify never reports success after checking nothing', () => {
  it('a GPU kernel asked for on the CPU is a row that did not run, with its reason; exit 1', async () => {
    const c = capture();
    expect(await main(['verify', '--backend', 'cpu', '--kernel', 'gemv', '--json'], c.io)).toBe(1);
    const report = JSON.parse(c.out.join('')) as VerifyReport;
    expect(report.ok).toBe(false);
    expect(report.rows).toEqual([
      {
        kernel: 'gemv',
        configuration: '',
        problems: 0,
        mismatches: 0,
        ms: 0,
        detail: expect.stringMatching(/^not run: a WebGPU kernel/),
        ran: false,
      },
    ]);
    expect(c.err.join('')).toMatch(
      /\n {2}gemv: not run: a WebGPU kernel.*\nqgemm: VerifyIncompleteError: 1 of 1 kernels asked for did not run here: gemv\n$/,
    );
  });
  it('the table says so too', async () => {
    const c = capture();
    expect(await main(['verify', '--backend', 'cpu', '--kernel', 'gemv', 'sgmat-64x64'], c.io)).toBe(1);
    const text = c.out.join('');
    expect(text).toMatch(/^gemv +\| not run +\| 0 +\| - +\| -$/m);
    expect(text).toMatch(/^sgmat-64x64 +\| not run +\| 0 +\| - +\| -$/m);
    expect(text).not.toMatch(/exact/);
    expect(text).toMatch(/^NOT VERIFIED: 2 of 2 kernels asked for did not run here: gemv, sgmat-64x64$/m);
  });
  it('knows the WebGPU-only sgmat variants by id: the 4-bit rhs kernel and its emulated form (test/gpu/sgmat-u4.test.ts runs them)', async () => {
    const report = await verifyDevice({ backend: 'cpu', kernels: ['sgmat-64x64-u4', 'sgmat-64x64-u4-emulated'] });
    expect(report.rows.map((r) => [r.kernel, r.ran, r.detail])).toEqual([
      ['sgmat-64x64-u4', false, 'not run: a WebGPU kernel (verify it with backend "webgpu")'],
      ['sgmat-64x64-u4-emulated', false, 'not run: a WebGPU kernel (verify it with backend "webgpu")'],
    ]);
  });
  it('cpu-wasm-relaxed where the runtime has no relaxed SIMD is a row that did not run', async () => {
    const report = await verifyDevice({ backend: 'cpu', kernels: ['cpu-wasm-relaxed'] });
    if (report.device.includes('relaxed-simd')) {
      expect(report.rows.every((r) => r.ran && r.kernel === 'cpu-wasm-relaxed')).toBe(true);
    } else {
      expect(report.rows).toMatchObject([{ kernel: 'cpu-wasm-relaxed', ran: false, detail: expect.stringMatching(/relaxed SIMD/) }]);
      expect(report.ok).toBe(false);
    }
  });
  it('an empty kernel list is an InputError naming kernels', async () => {
    await expect(verifyDevice({ backend: 'cpu', kernels: [] })).rejects.toMatchObject({ name: 'InputError', field: 'kernels' });
    await expect(verifyDevice({ kernels: [] })).rejects.toMatchObject({ name: 'InputError', field: 'kernels' });
  });
  it('an unknown kernel is an InputError naming its index in kernels', async () => {
    await expect(verifyDevice({ backend: 'cpu', kernels: ['cpu-js', 'nope'] })).rejects.toMatchObject({ field: 'kernels[1]' });
  });
  for (const backend of ['CPU', 'gpu', 'WebGPU', 5, '']) {
    it(`backend ${JSON.stringify(backend)} is an InputError naming backend, before any device`, async () => {
      const onStart = vi.fn();
      await expect(verifyDevice({ backend: backend as 'cpu', onStart })).rejects.toMatchObject({ name: 'InputError', field: 'backend' });
      expect(onStart).not.toHaveBeenCalled();
    });
  }
});

// Pipelines compile slowly on software adapters (seconds each, more on a loaded machine).
vi.setConfig({ testTimeout: 600_000, hookTimeout: 600_000 });

const gpu = await getGpu();
afterAll(releaseGpu);
const hasSgmat = gpu?.device.features.has('chromium-experimental-subgroup-matrix' as GPUFeatureName);

describe.skipIf(!gpu)('verifyDevice on WebGPU', () => {
  it('lists the emulated subgroup-matrix kernel beside the registry kernels, exact', async () => {
    const report = await verifyDevice({ device: gpu!.device, kernels: ['dot4-32x32-emulated', 'sgmat-64x64-emulated'] });
    expect(report.rows.map((r) => r.kernel)).toEqual(['dot4-32x32-emulated', 'sgmat-64x64-emulated']);
    expect(report.rows[1].configuration).toMatch(/x.*emulated builtins/);
    // The suite, then its convolution layers (the lhs read from the NHWC input: dot4-32x32 gathers it, sgmat gets it packed).
    const problems = verifyProblems().length + verifyConvProblems().length;
    for (const r of report.rows) expect(r).toMatchObject({ mismatches: 0, detail: '', problems });
    expect(report.ok).toBe(true);
  });
  it('a kernel text with a planted bug fails verify (and the CLI command with it)', async () => {
    const mutant = sgmatEmulatedKernel(EMULATED_CONFIGS[0], {
      id: 'sgmat-verify-mutant',
      source: (c) => sgmatSource(c).replace('let more = kt + 1u < steps;', 'let more = kt + 2u < steps;'),
    });
    const report = await verifyDevice({ device: gpu!.device, kernels: ['sgmat-verify-mutant'], extraKernels: [mutant] });
    expect(report.rows).toHaveLength(1);
    expect(report.rows[0].mismatches).toBeGreaterThan(0);
    expect(report.ok).toBe(false);
    const c = capture();
    await expect(
      cmdVerify({ backend: 'webgpu', kernel: ['sgmat-verify-mutant'] }, c.io, { device: gpu!.device, extraKernels: [mutant] }),
    ).rejects.toThrow(VerifyMismatchError);
    const problems = verifyProblems().length + verifyConvProblems().length;
    expect(c.out.join('')).toMatch(new RegExp(`^sgmat-verify-mutant +\\| - +\\| ${problems} +\\| [1-9]\\d* +\\|`, 'm'));
  });
  it('a kernel this adapter cannot run, or a CPU kernel, is a row that did not run; progress comes first', async () => {
    const events: string[] = [];
    const report = await verifyDevice({
      device: gpu!.device,
      kernels: ['cpu-js', ...(hasSgmat ? [] : ['sgmat-64x64'])],
      onStart: (s) => events.push(`start ${s.backend}`),
      onRow: (r) => events.push(`row ${r.kernel}`),
    });
    expect(report.ok).toBe(false);
    expect(report.rows[0]).toMatchObject({ kernel: 'cpu-js', ran: false, detail: expect.stringMatching(/^not run: a CPU kernel/) });
    if (!hasSgmat) expect(report.rows[1]).toMatchObject({ kernel: 'sgmat-64x64', ran: false, detail: /^not run: this adapter/ });
    expect(events).toEqual(['start webgpu', ...report.rows.map((r) => `row ${r.kernel}`)]);
  });
});
