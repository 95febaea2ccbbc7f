// Unit tier for the subgroup-matrix kernel (src/kernels/sgmat/): its composed WGSL, for every fragment
// configuration, starts with the directives WGSL wants first, has no templating in the kernel file, and
// reflects like the other banded kernels (the TileParams layout and every named binding); the registry
// kernel takes the adapter's best configuration and refuses adapters whose subgroup size is not fixed;
// the emulation rewrite applies every rule and leaves no subgroup-matrix builtin; the form that gathers a
// convolution's lhs composes in place of the packed pieces for the tilings that stage their lhs. Exactness is checked on
// GPUs: emulated on SwiftShader (test/gpu/sgmat.test.ts), real builtins on lavapipe (test/lavapipe/).

import { describe, expect, it } from 'vitest';
import { namedEntries, uniformLayout } from '../../src/gpu/reflect.ts';
import {
  sgmatDeclarations,
  sgmatKernel,
  sgmatSource,
  sgmatSourceU4,
  sgmatTiledKernel,
  sgmatU4Kernel,
  sgmatVariant,
} from '../../src/kernels/sgmat/kernel.ts';
import {
  bestConfig,
  configConstants,
  DEFAULT_TILING,
  bothDirectTilings,
  directTilings,
  sgmatTilings,
  type SgmatTiling,
  SPLITK_TILING,
  tilingId,
  tilingLayout,
  tilingProblem,
} from '../../src/kernels/sgmat/config.ts';
import { splitDeclarations } from '../../src/kernels/sgmat/split-k.ts';
import { loadForm, sourceForDevice, toLegacyForm } from '../../src/kernels/sgmat/load-form.ts';
import { EMULATED_CONFIGS, EMULATION_RULES, emulateSubgroupMatrix } from '../../src/kernels/sgmat/emulation.ts';
import sgmat from '../../src/kernels/sgmat/sgmat.wgsl?raw';
import rhs from '../../src/kernels/sgmat/sgmat-rhs.wgsl?raw';
import lhsStaged from '../../src/kernels/sgmat/sgmat-lhs.wgsl?raw';
import lhsDirect from '../../src/kernels/sgmat/sgmat-lhs-direct.wgsl?raw';
import lhsPatches from '../../src/kernels/sgmat/sgmat-lhs-patches.wgsl?raw';
import { patchGatherWgsl } from '../../src/pack/patches.ts';
import rhsDirect from '../../src/kernels/sgmat/sgmat-rhs-direct.wgsl?raw';
import rhsU4 from '../../src/kernels/sgmat/sgmat-rhs-u4.wgsl?raw';
import right from '../../src/kernels/sgmat/sgmat-right.wgsl?raw';
import { h100Caps } from '../support/caps.ts';
import { candidateConfigs, kernelOf, parseKernelConfig } from '../../src/kernels/kernel-configs.ts';
import { selectGemmKernel } from '../../src/kernels/registry.ts';
import { candidates } from '../../src/tune.ts';

describe('sgmat-64x64 source', () => {
  it.each(EMULATED_CONFIGS)('puts the enable and diagnostic directives before any declaration (%o)', (config) => {
    const source = sgmatSource(config);
    expect(source).toContain(configConstants(config));
    const code = source.split('\n').filter((l) => l.trim() && !l.trim().startsWith('//'));
    expect(code.slice(0, 3)).toEqual([
      'enable subgroups;',
      'enable chromium_experimental_subgroup_matrix;',
      'diagnostic(off, chromium.subgroup_matrix_uniformity);',
    ]);
    expect(code.slice(3).some((l) => /^(enable|diagnostic|requires)\b/.test(l.trim()))).toBe(false);
    expect(source).toContain(sgmatDeclarations.split('\n').at(-2));
    expect(sgmat).not.toContain('${');
  });
  it('reflects TileParams and binds every resource by name (from its declarations: the parser reads no subgroup-matrix syntax)', () => {
    const layout = uniformLayout(sgmatDeclarations, 'TileParams');
    expect([...layout.members.keys()]).toEqual(['depthWords', 'bandM', 'bandN', 'bandRows', 'bandCols', 'workgroupBase']);
    const buffer = {} as GPUBuffer;
    const entries = namedEntries(sgmatDeclarations, {
      epilogue: { buffer },
      rowSums: { buffer },
      colSums: { buffer },
      stages: { buffer },
      dst: { buffer },
      tile: { buffer },
      lhsPacked: { buffer },
      rhsPacked: { buffer },
    });
    expect(entries.map((e) => e.binding).sort((a, b) => a - b)).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
  });
  it('takes the best int8 configuration of an adapter with one subgroup size and the workgroup memory', () => {
    const caps = h100Caps;
    const shape = { M: 4096, N: 4096, K: 4096, dstType: 'uint8' as const, dstOrder: 'row-major' as const };
    const cfg = (componentType: string, M: number, N: number, K: number) => ({
      componentType,
      resultComponentType: componentType === 'u8' ? 'u32' : 'i32',
      M,
      N,
      K,
    });
    expect(sgmatKernel.supports(caps({}), shape)).toBe(true);
    // NVIDIA's configurations: the larger fragment, u8 before i8.
    const nvidia = [cfg('i8', 16, 16, 32), cfg('u8', 16, 8, 32), cfg('u8', 16, 16, 32), cfg('i8', 16, 8, 32)];
    expect(bestConfig(caps({ subgroupMatrix: nvidia }))).toEqual({ componentType: 'u8', M: 16, N: 16, K: 32, subgroupSize: 32 });
    expect(bestConfig(caps({ subgroupMatrix: [cfg('i8', 16, 8, 32), cfg('u8', 16, 8, 32)] }))?.N).toBe(8);
    expect(bestConfig(caps({ subgroupMatrix: [cfg('i8', 16, 16, 32)] }))?.componentType).toBe('i8');
    // lavapipe's: 8x8x8 with subgroups of 8.
    const lavapipe = caps({ subgroupMinSize: 8, subgroupMaxSize: 8, subgroupMatrix: [cfg('u8', 8, 8, 8), cfg('i8', 8, 8, 8)] });
    expect(bestConfig(lavapipe)).toEqual({ componentType: 'u8', M: 8, N: 8, K: 8, subgroupSize: 8 });
    expect(sgmatKernel.supports(lavapipe, shape)).toBe(true);
    // Fragments the 32 x 32 quarters and the 64-byte k step cannot hold; f16; no configuration at all.
    expect(sgmatKernel.supports(caps({ subgroupMatrix: [cfg('u8', 64, 16, 32), cfg('u8', 16, 16, 128)] }), shape)).toBe(false);
    expect(
      sgmatKernel.supports(caps({ subgroupMatrix: [{ componentType: 'f16', resultComponentType: 'f32', M: 16, N: 16, K: 16 }] }), shape),
    ).toBe(false);
    expect(sgmatKernel.supports(caps({ subgroupMatrix: [] }), shape)).toBe(false);
    // A range of subgroup sizes: 4 subgroups per workgroup is not guaranteed, so the kernel does not run.
    expect(sgmatKernel.supports(caps({ subgroupMinSize: 8, subgroupMaxSize: 32 }), shape)).toBe(false);
    expect(sgmatKernel.supports(caps({ subgroupMinSize: 0, subgroupMaxSize: 0 }), shape)).toBe(false);
    expect(sgmatKernel.supports(caps({ subgroupMinSize: 64, subgroupMaxSize: 64 }), shape)).toBe(true);
    expect(sgmatKernel.supports(caps({ subgroupMinSize: 128, subgroupMaxSize: 128 }), shape)).toBe(false);
    expect(sgmatKernel.supports(caps({ subgroups: false }), shape)).toBe(false);
    expect(sgmatKernel.supports(caps({ limits: { ...caps({}).limits, maxComputeWorkgroupStorageSize: 16384 } }), shape)).toBe(false);
    expect(sgmatKernel.needsSelfTest).toBe(true);
  });
  it.each(EMULATED_CONFIGS)('the emulation rewrite applies every rule and leaves plain WGSL (%o)', (config) => {
    const emulated = emulateSubgroupMatrix(sgmatSource(config));
    const code = emulated.replace(/\/\/.*$/gm, '');
    expect(code).not.toMatch(/subgroup_matrix|subgroupMatrix|subgroup_id|enable /);
    expect(code).toContain('acc33 = emuMultiplyAccumulate(a3, b, acc33);');
    expect(code).toContain('fn emuWord(packed: u32, index: u32) -> u32 {\n  return bitcast<u32>(stage[index]);');
    expect(EMULATION_RULES.length).toBe(9);
    // A kernel text a rule no longer matches is refused, not silently half-emulated.
    expect(() =>
      emulateSubgroupMatrix(
        sgmatSource(config).replaceAll('subgroupMatrixStore<row_major>(&stage, ', 'subgroupMatrixStore<row_major>(&other, '),
      ),
    ).toThrow(/fragment stores to the staging buffer/);
  });
  it('the -u4 variant composes the nibble staging in place of the 8-bit one, reads u4k8 rows padded as the tiling, and runs 4-bit rhs only', () => {
    const config = EMULATED_CONFIGS[0];
    const u4 = sgmatSourceU4(config);
    expect(u4).toContain(rhsU4);
    expect(u4).not.toContain(rhs);
    expect(sgmatSource(config)).toContain(rhs);
    expect(u4.replace(rhsU4, rhs)).toBe(sgmatSource(config));
    for (const piece of [rhs, rhsU4]) expect(piece).not.toContain('${');
    expect(emulateSubgroupMatrix(u4)).toContain('(v[j] >> 4u) & 0x0f0f0f0fu');
    const k = sgmatU4Kernel();
    expect([k.id, k.packFormat, k.rhsPackFormat, k.needsSelfTest]).toEqual(['sgmat-64x64-u4', 'u8k4-r64', 'u4k8-r64', true]);
    const shape = { M: 512, N: 512, K: 512, dstType: 'int32' as const, dstOrder: 'row-major' as const };
    expect(k.supports(h100Caps(), shape)).toBe(false);
    expect(k.supports(h100Caps(), { ...shape, bitDepth: { lhs: 8, rhs: 4, rounding: 'nearest' } })).toBe(true);
    expect(k.supports(h100Caps({ subgroupMatrix: [] }), { ...shape, bitDepth: { lhs: 8, rhs: 3, rounding: 'nearest' } })).toBe(false);
    // Nibble rows are padded as the lhs rows: to the tiling's larger side.
    const wide = { tileM: 128, tileN: 64, sgRows: 4, sgCols: 2, kStep: 64, buffers: 2 } as const;
    const formats = (t: SgmatTiling) => {
      const x = sgmatU4Kernel(t);
      return [x.id, x.packFormat, x.rhsPackFormat];
    };
    expect(formats({ ...wide, tileM: 64 })).toEqual(['sgmat-64x64-w4x2-k64-b2-u4', 'u8k4-r64', 'u4k8-r64']);
    expect(formats(wide)).toEqual(['sgmat-128x64-w4x2-k64-b2-u4', 'u8k4-r128', 'u4k8-r128']);
    expect(formats({ ...wide, tileN: 256 })).toEqual(['sgmat-128x256-w4x2-k64-b2-u4', 'u8k4-r256', 'u4k8-r256']);
    expect(formats(SPLITK_TILING)).toEqual(['sgmat-64x64-sk-u4', 'u8k4-r64', 'u4k8-r64']);
    expect(formats({ ...wide, splitK: 4 })).toEqual(['sgmat-128x64-w4x2-k64-b2-s4-u4', 'u8k4-r128', 'u4k8-r128']);
    // The split-K form composes the nibble staging too, and runs 4-bit rhs only.
    expect(sgmatSourceU4(config, SPLITK_TILING)).toContain(rhsU4);
    const sk = sgmatVariant('x-sk-u4', () => config, sgmatSourceU4, false, SPLITK_TILING, 4);
    expect(sk.supports(h100Caps(), shape)).toBe(false);
    expect(sk.supports(h100Caps(), { ...shape, bitDepth: { lhs: 8, rhs: 2, rounding: 'nearest' } })).toBe(true);
  });
  it('the split-K form: its own slice uniform and workspace, the raw sums to the workspace instead of the epilogue', () => {
    const config = EMULATED_CONFIGS[0];
    const split = sgmatSource(config, SPLITK_TILING);
    expect(split).toContain('workspace[((o.slice * tile.bandRows + row + r) * tile.bandCols + col) / 4u] = raw[r];');
    expect(split).not.toContain('storeBlock(raw, tile.bandM + row');
    expect(sgmatSource(config)).toContain('storeBlock(raw, tile.bandM + row');
    expect([...uniformLayout(splitDeclarations, 'SliceParams').members.keys()]).toEqual(['splits', 'stepsPerSplit', 'rowSumsAt']);
    const buffer = {} as GPUBuffer;
    const names = ['tile', 'slicing', 'lhsPacked', 'rhsPacked', 'rowSums', 'colSums', 'workspace'];
    const entries = namedEntries(splitDeclarations, Object.fromEntries(names.map((n) => [n, { buffer }])));
    expect(entries.map((e) => e.binding)).toEqual([5, 10, 6, 7, 1, 2, 11]); // 8 and 9: a gathered lhs's geometry and input
    expect(emulateSubgroupMatrix(split)).toContain('emuMultiplyAccumulate(');
  });
});

describe('sgmat direct rhs: right fragments loaded from the packed rhs', () => {
  const [u8, , , i8] = EMULATED_CONFIGS;
  const dr = { ...DEFAULT_TILING, rhsDirect: true };
  it('composes sgmat-rhs-direct.wgsl in place of the rhs staging, reads rhs bytes as words, and stages the lhs only', () => {
    const source = sgmatSource(u8, dr);
    expect(source).toContain(rhsDirect);
    for (const staged of [rhs, right]) expect(source).not.toContain(staged);
    expect(sgmatSource(u8)).toContain(right);
    // Binding 7 as words; its vec4 declaration (../tile.wgsl) is never used by this form.
    expect(source).toContain('@group(0) @binding(7) var<storage, read> rhsWords: array<u32>;');
    expect(source.replace(/\/\/.*$/gm, '')).not.toMatch(/rhsPacked\[/);
    expect(source).toContain('const RHS_ROWS_STAGED: u32 = 0u;');
    expect(tilingLayout(dr).workgroupBytes).toBe(tilingLayout(DEFAULT_TILING).workgroupBytes / 2);
    expect(emulateSubgroupMatrix(source)).toContain('return rhsWords[index];');
    expect(emulateSubgroupMatrix(sgmatSource(u8)).replace(/\/\/.*$/gm, '')).not.toContain('rhsWords');
    for (const piece of [rhsDirect, right]) expect(piece).not.toContain('${');
  });
  it("is named '-dr', runs u8 fragments only, and no nibble rhs", () => {
    expect(tilingId(dr)).toBe('sgmat-64x64-dr');
    expect(tilingId({ ...dr, kStep: 128, splitK: 0 })).toBe('sgmat-64x64-w2x2-k128-b2-dr-sk');
    expect(tilingProblem(u8, dr)).toBe('');
    expect(tilingProblem(i8, dr)).toMatch(/u8 fragments/);
    expect(sgmatTiledKernel(dr).supports(h100Caps(), { M: 512, N: 512, K: 512, dstType: 'int32', dstOrder: 'row-major' })).toBe(true);
    const i8Only = h100Caps({ subgroupMatrix: [{ componentType: 'i8', resultComponentType: 'i32', M: 16, N: 16, K: 32 }] });
    expect(sgmatTiledKernel(dr).supports(i8Only, { M: 512, N: 512, K: 512, dstType: 'int32', dstOrder: 'row-major' })).toBe(false);
    expect(() => sgmatVariant('x-u4', () => u8, sgmatSourceU4, false, dr, 4)).toThrow(/8-bit rhs rows only/);
    expect(directTilings(u8, h100Caps().limits).every((t) => t.rhsDirect && !tilingProblem(u8, t))).toBe(true);
  });
  it("is the tuner's candidate right after each staged one-pass tiling (u8 adapters), and a table may name it", () => {
    const caps = h100Caps();
    const ids = candidateConfigs(caps).map((c) => kernelOf(c).id);
    expect(ids).toEqual(expect.arrayContaining(['sgmat-64x64-dr', 'sgmat-128x128-w4x2-k64-b2-dr']));
    expect(ids.some((id) => id.includes('-dr-'))).toBe(false); // one-pass only
    const big = { M: 4096, N: 4096, K: 4096, dstType: 'int32' as const, dstOrder: 'row-major' as const };
    const order = candidates(caps, big, selectGemmKernel(caps, big, { force: '' })).map((k) => k.id);
    const at = order.indexOf('sgmat-128x128-w4x2-k64-b2');
    expect(order.indexOf('sgmat-128x128-w4x2-k64-b2-dr')).toBeGreaterThan(at);
    const sgmat = order.filter((id) => id.startsWith('sgmat-'));
    expect(sgmat[sgmat.indexOf('sgmat-128x128-w4x2-k64-b2') + 1]).toBe('sgmat-128x128-w4x2-k64-b2-dr');
    const config = { family: 'sgmat', ...DEFAULT_TILING, rhsDirect: true };
    expect(parseKernelConfig(JSON.parse(JSON.stringify(config)), 'k')).toEqual(config);
    expect(() => parseKernelConfig({ ...config, rhsDirect: 'yes' }, 'k')).toThrow(/k\.rhsDirect/);
    const i8Caps = h100Caps({ subgroupMatrix: [{ componentType: 'i8', resultComponentType: 'i32', M: 16, N: 16, K: 32 }] });
    expect(candidateConfigs(i8Caps).some((c) => c.family === 'sgmat' && c.rhsDirect)).toBe(false);
  });
});

describe("sgmat '-dd': left and right fragments loaded from the packed operands", () => {
  const [u8, , , i8] = EMULATED_CONFIGS;
  const dd = { ...DEFAULT_TILING, rhsDirect: true, lhsDirect: true };
  it('composes both direct pieces, stages nothing in the k loop, and emulates loads from lhsWords', () => {
    const source = sgmatSource(u8, dd);
    for (const piece of [lhsDirect, rhsDirect]) expect(source).toContain(piece);
    for (const staged of [lhsStaged, rhs, right]) expect(source).not.toContain(staged);
    expect(sgmatSource(u8)).toContain(lhsStaged);
    expect(source).toContain('@group(0) @binding(6) var<storage, read> lhsWords: array<u32>;');
    expect(source.replace(/\/\/.*$/gm, '')).not.toMatch(/lhsPacked\[|rhsPacked\[|subgroupMatrixLoad<\w+, \w+>\(&stage/);
    expect(source).toContain('const LHS_ROWS_STAGED: u32 = 0u;');
    expect(sgmat).toContain('const STAGED: bool = BUFFER_WORDS > 0u;');
    // Workgroup memory: the result pass only (one band of 32 rows x 64 columns), no staging buffers.
    expect(tilingLayout(dd)).toEqual({ rowBytes: 80, stageWords: 32 * 64, outBands: 1, workgroupBytes: 32 * 64 * 4 });
    const emulated = emulateSubgroupMatrix(source);
    expect(emulated).toContain('return lhsWords[index];');
    expect(emulated).toContain('emuLoadLhs(');
    expect(emulated).not.toContain('return emuLoad('); // no fragment from `stage` (emuLoad itself stays defined)
    expect(emulateSubgroupMatrix(sgmatSource(u8))).toContain('return emuLoad(');
    expect(emulateSubgroupMatrix(sgmatSource(u8, { ...DEFAULT_TILING, rhsDirect: true }))).not.toContain('lhsWords[');
    // A kernel text that loads no fragment the emulation knows of is refused.
    expect(() =>
      emulateSubgroupMatrix(
        source
          .replaceAll('subgroupMatrixLoad<LeftFragment, row_major>(&lhsWords, ', 'subgroupMatrixLoad<LeftFragment, row_major>(&other, ')
          .replaceAll('(&rhsWords, ', '(&other, '),
      ),
    ).toThrow(/loads no fragments/);
    for (const piece of [lhsDirect, lhsStaged]) expect(piece).not.toContain('${');
  });
  it("is named '-dd', needs rhsDirect and u8 fragments, no nibble rhs, and split-K is free", () => {
    expect(tilingId(dd)).toBe('sgmat-64x64-dd');
    expect(tilingId({ ...dd, tileM: 128, tileN: 128, sgRows: 4, sgCols: 2 })).toBe('sgmat-128x128-w4x2-k64-b2-dd');
    expect(tilingId({ ...dd, splitK: 0 })).toBe('sgmat-64x64-dd-sk');
    expect(tilingProblem(u8, dd)).toBe('');
    expect(tilingProblem(u8, { ...dd, splitK: 4 })).toBe('');
    expect(tilingProblem(u8, { ...DEFAULT_TILING, lhsDirect: true })).toMatch(/needs rhsDirect/);
    expect(tilingProblem(i8, dd)).toMatch(/u8 fragments/);
    expect(() => sgmatVariant('x', () => u8, sgmatSource, false, { ...DEFAULT_TILING, lhsDirect: true })).toThrow(/direct rhs/);
    expect(() => sgmatVariant('x-u4', () => u8, sgmatSourceU4, false, dd, 4)).toThrow(/8-bit rhs rows only/);
    expect(bothDirectTilings(u8, h100Caps().limits).every((t) => t.lhsDirect && t.rhsDirect && !tilingProblem(u8, t))).toBe(true);
    expect(sgmatTiledKernel(dd).supports(h100Caps(), { M: 512, N: 512, K: 512, dstType: 'int32', dstOrder: 'row-major' })).toBe(true);
  });
  it("is the tuner's candidate at two tilings only, after their '-dr' twin, and a table may name it", () => {
    const caps = h100Caps();
    const ids = candidateConfigs(caps).map((c) => kernelOf(c).id);
    expect(ids.filter((id) => id.includes('-dd'))).toEqual(['sgmat-64x64-dd', 'sgmat-128x128-w4x2-k64-b2-dd']);
    const big = { M: 4096, N: 4096, K: 4096, dstType: 'int32' as const, dstOrder: 'row-major' as const };
    const sgmat = candidates(caps, big, selectGemmKernel(caps, big, { force: '' }))
      .map((k) => k.id)
      .filter((id) => id.startsWith('sgmat-'));
    const at = sgmat.indexOf('sgmat-128x128-w4x2-k64-b2');
    expect(sgmat.slice(at, at + 3)).toEqual(['sgmat-128x128-w4x2-k64-b2', 'sgmat-128x128-w4x2-k64-b2-dr', 'sgmat-128x128-w4x2-k64-b2-dd']);
    const config = { family: 'sgmat', ...dd };
    expect(parseKernelConfig(JSON.parse(JSON.stringify(config)), 'k')).toEqual(config);
    expect(() => parseKernelConfig({ ...config, lhsDirect: 1 }, 'k')).toThrow(/k\.lhsDirect/);
    expect(() => parseKernelConfig({ ...config, rhsDirect: false }, 'k')).toThrow(/k\.lhsDirect/);
    const i8Caps = h100Caps({ subgroupMatrix: [{ componentType: 'i8', resultComponentType: 'i32', M: 16, N: 16, K: 32 }] });
    expect(candidateConfigs(i8Caps).some((c) => c.family === 'sgmat' && c.lhsDirect)).toBe(false);
  });
});

describe('sgmat tilings: 64 to 256 wide', () => {
  const nvidia = EMULATED_CONFIGS[0];
  const h100 = h100Caps().limits;
  it('256-wide tiles as 8 subgroups of 4 x 4 fragments, within the workgroup memory of the adapter', () => {
    const ids = sgmatTilings(nvidia, h100).map(tilingId);
    expect(ids[0]).toBe('sgmat-64x64');
    expect(ids).toEqual(expect.arrayContaining(['sgmat-256x128-w4x2-k32-b2', 'sgmat-64x256-w2x4-k64-b1', 'sgmat-256x64-w4x2-k64-b1']));
    // 128 x 256 stages a subgroup row of results at the full 256 width (64 KiB): not within 48 KiB.
    const tall = { tileM: 128, tileN: 256, sgRows: 2, sgCols: 4, kStep: 32, buffers: 1 as const };
    expect(tilingProblem(nvidia, tall)).toBe('');
    expect(tilingProblem(nvidia, tall, h100)).toBe('too much workgroup memory');
    for (const t of sgmatTilings(nvidia, h100)) expect(tilingLayout(t).workgroupBytes).toBeLessThanOrEqual(49152);
    // 256 x 128 with 4 x 2 subgroups: 64 x 64 per subgroup, 4 x 4 fragments of 16 x 16.
    const wide = { tileM: 256, tileN: 128, sgRows: 4, sgCols: 2, kStep: 64, buffers: 2 as const };
    expect(tilingProblem(nvidia, wide)).toBe('');
    expect(tilingProblem(nvidia, wide, h100)).toBe('too much workgroup memory');
    expect(tilingProblem(nvidia, { ...wide, tileN: 256 })).toMatch(/1 to 4 fragments per subgroup/);
    expect(tilingProblem(EMULATED_CONFIGS[2], wide)).toMatch(/1 to 4 fragments per subgroup/); // 8x8x8: 8 x 8 per subgroup
    expect(tilingProblem(nvidia, { ...wide, tileM: 512 })).toBe('tileM and tileN are 64, 128 or 256');
    // SwiftShader's 32 KiB: the emulated sweep runs the 256-wide tilings that fit.
    const swiftshader = { ...h100, maxComputeWorkgroupStorageSize: 32768, maxComputeInvocationsPerWorkgroup: 256 };
    expect(sgmatTilings(nvidia, swiftshader).map(tilingId)).toContain('sgmat-256x128-w4x2-k32-b1');
  });
  it('split-K ids and validation', () => {
    expect(tilingId(SPLITK_TILING)).toBe('sgmat-64x64-sk');
    expect(tilingId({ ...DEFAULT_TILING, splitK: 4 })).toBe('sgmat-64x64-s4');
    expect(tilingId({ ...DEFAULT_TILING, splitK: 1 })).toBe('sgmat-64x64');
    expect(tilingProblem(nvidia, { ...DEFAULT_TILING, splitK: 3 })).toMatch(/splitK is one of/);
    expect(sgmatTilings(nvidia, h100, [0, 4]).slice(0, 3).map(tilingId)).toEqual(['sgmat-64x64', 'sgmat-64x64-sk', 'sgmat-64x64-s4']);
  });
});

describe('sgmat gathering a convolution lhs (sgmat-lhs-patches.wgsl)', () => {
  const [u8, , , i8] = EMULATED_CONFIGS;
  it('composes the patch gather in place of the packed lhs pieces, reflects its two bindings, and emulates', () => {
    for (const c of [u8, i8]) {
      const source = sgmatSource(c, DEFAULT_TILING, true);
      expect(source).toContain(lhsPatches);
      expect(source).toContain(patchGatherWgsl);
      expect(source).not.toContain(lhsStaged);
      expect(source.replace(/\/\/.*$/gm, '')).not.toMatch(/lhsPacked\[/);
      expect(emulateSubgroupMatrix(source)).toContain('return emuLoad(');
      expect(sgmatSourceU4(c, DEFAULT_TILING, true)).toContain(lhsPatches);
    }
    // The packed forms keep no-op hooks under the same names.
    for (const piece of [lhsStaged, lhsDirect])
      expect(piece).toMatch(/fn shareLhsRowSums\(t: u32\) \{\}[\s\S]*fn useLhsRowSums\(tileRow: u32, m: u32\) \{\}/);
    expect(lhsPatches).not.toContain('${');
  });
  it('only a tiling that stages its lhs gathers; a split-K slice writes its row sums to the workspace', () => {
    expect(() => sgmatSource(u8, { ...DEFAULT_TILING, rhsDirect: true, lhsDirect: true }, true)).toThrow(/gathers patches/);
    expect(sgmatSource(u8, { ...DEFAULT_TILING, rhsDirect: true }, true)).toContain(lhsPatches);
    const split = sgmatSource(u8, SPLITK_TILING, true);
    expect(split).toContain(lhsPatches);
    expect(split).toContain('workspace[(slicing.rowSumsAt + o.slice * tile.bandRows + o.rowBase) / 4u + i] = tileRowSums(4u * i);');
    // Bindings apart: the slicing and workspace of the split form, the geometry and input of the gather.
    const names = ['slicing', 'workspace', 'geometry', 'patchInput'];
    const declarations = [splitDeclarations, patchGatherWgsl].join('\n');
    const entries = namedEntries(declarations, Object.fromEntries(names.map((n) => [n, { buffer: {} as GPUBuffer }])));
    expect(entries.map((e) => e.binding)).toEqual([10, 11, 8, 9]);
  });
});

// The builtins' two forms (src/kernels/sgmat/load-form.ts): the kernel is written in the current one;
// a device whose compiler lacks it gets the source rewritten into the legacy one. Both are exact on
// lavapipe (test/lavapipe/sgmat.test.ts); here, the rewrite and the probe's decision.
describe('sgmat load and store forms', () => {
  const u8 = EMULATED_CONFIGS[0];
  const i8 = EMULATED_CONFIGS[3];
  const calls = (s: string) => (s.replace(/\/\/.*$/gm, '').match(/subgroupMatrix(Load|Store)\b/g) ?? []).length;
  const sources = [
    sgmatSource(u8),
    sgmatSource(i8, SPLITK_TILING),
    sgmatSourceU4(u8),
    sgmatSource(u8, DEFAULT_TILING, true),
    ...directTilings(u8)
      .slice(0, 3)
      .map((t) => sgmatSource(u8, t)),
    ...bothDirectTilings(u8).map((t) => sgmatSource(u8, t)),
  ];
  it.each(sources.map((s, i) => [i, s] as const))('rewrites every call of source %i, counting bytes for 8-bit fragments', (_, source) => {
    const legacy = toLegacyForm(source);
    expect(calls(legacy)).toBe(calls(source));
    expect(legacy).not.toMatch(/_major>/);
    expect(legacy).toContain('subgroupMatrixStore(&stage, out, acc00, false, OUT_STRIDE)');
    for (const m of legacy.matchAll(/subgroupMatrixLoad<(\w+)>\(&(\w+), (.*), (true|false), (.*) \* 4u\)/g)) {
      expect(m[1] === 'LeftFragment' ? 'false' : 'true').toBe(m[4]); // left row-major, right column-major
      expect(m[3]).toMatch(/^\(.*\) \* 4u$/);
    }
    expect(legacy.match(/subgroupMatrixLoad</g)?.length).toBe(legacy.match(/\* 4u, (true|false), [\w.]+ \* 4u\)/g)?.length);
  });
  it('the staged loads in both forms address the same bytes', () => {
    const legacy = toLegacyForm(sgmatSource(u8));
    expect(legacy).toContain('subgroupMatrixLoad<LeftFragment>(&stage, (lhsBase + row * ROW_WORDS + kk / 4u) * 4u, false, ROW_WORDS * 4u)');
    expect(legacy).toContain('subgroupMatrixLoad<RightFragment>(&stage, (rhsBase + col * ROW_WORDS + kk / 4u) * 4u, true, ROW_WORDS * 4u)');
  });
  it('finds each call by its brackets: calls and commas in an argument, inline types, 32-bit loads', () => {
    const load = (t: string, args: string) => toLegacyForm(`let x = subgroupMatrixLoad<${t}>(${args});`);
    expect(load('LeftFragment, row_major', '&C, min(a, b), S')).toBe(
      'let x = subgroupMatrixLoad<LeftFragment>(&C, (min(a, b)) * 4u, false, S * 4u);',
    );
    expect(load('subgroup_matrix_right<i8, 32, 16>, col_major', '&C, 64u, 8u')).toBe(
      'let x = subgroupMatrixLoad<subgroup_matrix_right<i8, 32, 16>>(&C, 64u * 4u, true, 8u * 4u);',
    );
    expect(load('ResultFragment, row_major', '&stage, o + 1u, OUT_STRIDE')).toBe(
      'let x = subgroupMatrixLoad<ResultFragment>(&stage, o + 1u, false, OUT_STRIDE);',
    );
    expect(toLegacyForm('subgroupMatrixStore <col_major>(&C, f(a, b), acc, N);')).toBe('subgroupMatrixStore(&C, f(a, b), acc, true, N);');
  });
  it('refuses a current-form call it has no rule for', () => {
    const f16 = `${sgmatSource(u8)}\nfn odd() -> L { return subgroupMatrixLoad<subgroup_matrix_left<f16, 8, 8>, row_major>(&h, 0u, 8u); }`;
    expect(() => toLegacyForm(f16)).toThrow(/no rewrite for a load of subgroup_matrix_left<f16, 8, 8>/);
    expect(() => toLegacyForm('let m = subgroupMatrixLoad<LeftFragment, row_major>(&C, 0u);')).toThrow(
      /no rewrite for "subgroupMatrixLoad/,
    );
    expect(() => toLegacyForm('const major = row_major;')).toThrow(/no rewrite for "const major = row_major;"/);
  });
  it('the fragment K must be a multiple of 4 (whole words)', () => {
    expect(tilingProblem({ ...u8, K: 2 }, { ...DEFAULT_TILING, kStep: 32 })).toMatch(/multiple of 4/);
    expect(bestConfig(h100Caps({ subgroupMatrix: [{ componentType: 'u8', resultComponentType: 'u32', M: 16, N: 16, K: 2 }] }))).toBeNull();
  });

  /** A device that compiles modules with the given errors (`scoped`: caught by the validation scope), and counts them. */
  const fakeDevice = (opts: { messages?: string[]; scoped?: string; fail?: boolean }) => {
    const made: string[] = [];
    const scopes: string[] = [];
    const device = {
      pushErrorScope: (filter: string) => scopes.push(filter),
      popErrorScope: () => Promise.resolve(scopes.pop() === 'validation' && opts.scoped ? { message: opts.scoped } : null),
      createShaderModule: ({ code }: { code: string }) => {
        made.push(code);
        return {
          getCompilationInfo: () =>
            opts.fail
              ? Promise.reject(new Error('device lost'))
              : Promise.resolve({ messages: (opts.messages ?? []).map((message) => ({ type: 'error', message })) }),
        };
      },
    } as unknown as GPUDevice;
    return { device, made };
  };
  it('probes once per device: current where the probe compiles, legacy where it does not', async () => {
    const ok = fakeDevice({});
    expect(await loadForm(ok.device, u8)).toBe('current');
    expect(await loadForm(ok.device, u8)).toBe('current');
    expect(ok.made).toHaveLength(1);
    expect(ok.made[0]).toContain('subgroupMatrixLoad<LeftFragment, row_major>(&probe, 0u, FRAG_K / 4u)');
    expect(ok.made[0]).toContain('alias LeftFragment = subgroup_matrix_left<u8, FRAG_K, FRAG_M>;');
    expect(await loadForm(fakeDevice({ messages: ["unresolved value 'row_major'"] }).device, u8)).toBe('legacy');
    expect(await loadForm(fakeDevice({ scoped: 'invalid ShaderModule' }).device, u8)).toBe('legacy');
  });
  it('gives each source as the device compiles it, and keeps no failed probe', async () => {
    const old = fakeDevice({ messages: ['no matching call'] });
    expect(await sourceForDevice(old.device, u8, sgmatSource(u8))).toBe(toLegacyForm(sgmatSource(u8)));
    expect(await sourceForDevice(fakeDevice({}).device, u8, sgmatSource(u8))).toBe(sgmatSource(u8));
    const emulated = emulateSubgroupMatrix(sgmatSource(u8));
    const none = fakeDevice({});
    expect(await sourceForDevice(none.device, u8, emulated)).toBe(emulated);
    expect(none.made).toHaveLength(0); // no builtin, no probe
    const lost = fakeDevice({ fail: true });
    await expect(loadForm(lost.device, u8)).rejects.toThrow(/device lost/);
    await expect(loadForm(lost.device, u8)).rejects.toThrow(/device lost/);
    expect(lost.made).toHaveLength(2);
  });
});
