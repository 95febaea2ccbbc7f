// Unit tier: the pack formats (src/pack/formats.ts) and how the registry matches them (pack -> gemm):
// a more padded pack serves kernels of a less padded one, prepacked 8-bit operands get 128-row padding,
// and the wide dot4 kernel (128-tiles on 'u8k4-r128') is chosen only where both sides fill two tiles.

import { describe, expect, it } from 'vitest';
import { selectGemmKernel } from '../../src/kernels/registry.ts';
import { formatOf, formatServes, PACK_FORMATS, packedRowBytes, prepackFormat } from '../../src/pack/formats.ts';
import { packEntry } from '../../src/pack/pack.ts';
import { testCaps, testLimits, testShape } from '../support/caps.ts';

const caps = testCaps;
const shape = (M: number, N: number, K: number) => testShape(M, N, K);

describe('pack formats', () => {
  it('a more padded format serves the kernels of a less padded one, not the reverse', () => {
    expect(formatServes('u8k4-r128', 'u8k4-r64')).toBe(true);
    expect(formatServes('u8k4-r64', 'u8k4-r128')).toBe(false);
    expect(formatServes('u8k4-r64', 'u8k4-r64')).toBe(true);
    expect(formatServes('u8k4-r128', 'u4k8-r64')).toBe(false);
    expect(prepackFormat({ dot4: true }, 'rhs', 8)).toBe('u8k4-r128');
    expect(prepackFormat({ dot4: true }, 'rhs', 4)).toBe('u4k8-r128');
    expect(prepackFormat({ dot4: false }, 'rhs', 4)).toBe('u8k4-r128');
    // For a kernel that reads 256-row packs (a context forced to it): 256; never less than 128.
    expect(prepackFormat({ dot4: true }, 'rhs', 4, 256)).toBe('u4k8-r256');
    expect(prepackFormat({ dot4: true }, 'lhs', 8, 256)).toBe('u8k4-r256');
    expect(prepackFormat({ dot4: true }, 'rhs', 8, 64)).toBe('u8k4-r128');
    // 256 only above 128 rows: a 128-row kernel's context keeps 128.
    for (const rows of [0, 128]) expect(prepackFormat({ dot4: true }, 'rhs', 8, rows)).toBe('u8k4-r128');
    expect(prepackFormat({ dot4: true }, 'rhs', 8, 256)).toBe('u8k4-r256');
  });
  it('the 4-bit formats serve as the 8-bit ones do: more padding serves less, never across widths', () => {
    expect(formatServes('u4k8-r128', 'u4k8-r64')).toBe(true);
    expect(formatServes('u4k8-r256', 'u4k8-r128')).toBe(true);
    expect(formatServes('u4k8-r256', 'u4k8-r64')).toBe(true);
    expect(formatServes('u4k8-r64', 'u4k8-r128')).toBe(false);
    expect(formatServes('u4k8-r128', 'u4k8-r256')).toBe(false);
    expect(formatServes('u4k8-r128', 'u8k4-r128')).toBe(false);
    expect(formatServes('u8k4-r256', 'u4k8-r64')).toBe(false);
    expect(formatOf(4, 256)).toBe('u4k8-r256');
    expect(formatOf(8, 64)).toBe('u8k4-r64');
    for (const f of Object.values(PACK_FORMATS)) expect(formatOf(f.valueBits, f.rowAlign as 64 | 128 | 256)).toBe(f.id);
    // Half the row bytes of the 8-bit format at the same padding.
    expect(packedRowBytes(65, PACK_FORMATS['u4k8-r128'])).toBe(packedRowBytes(65, PACK_FORMATS['u8k4-r128']) / 2);
  });
});

describe('the wide dot4 kernel in the choice table', () => {
  it('runs where both sides fill two 128-tiles, native or emulated', () => {
    expect(selectGemmKernel(caps(), shape(4096, 4096, 4096)).id).toBe('dot4-128x128');
    expect(selectGemmKernel(caps({ dot4: false }), shape(256, 300, 64)).id).toBe('dot4-128x128-emulated');
    expect(selectGemmKernel(caps(), shape(255, 4096, 64)).id).toBe('dot4-64x64');
    expect(selectGemmKernel(caps(), shape(100, 4096, 64)).id).toBe('dot4-64x64');
  });
  it('is passed over where compiling is slow (a software adapter), unless forced', () => {
    expect(selectGemmKernel(caps({ isSoftware: true, slowCompiler: true }), shape(4096, 4096, 4096)).id).toBe('dot4-64x64');
    expect(selectGemmKernel(caps({ slowCompiler: true }), shape(512, 512, 64), { force: 'dot4-128x128' }).id).toBe('dot4-128x128');
  });
  it('is refused with operands prepacked as u8k4-r64, chosen with u8k4-r128 ones', () => {
    expect(selectGemmKernel(caps(), shape(4096, 4096, 64), { lhsPackFormat: 'u8k4-r64', rhsPackFormat: 'u8k4-r64' }).id).toBe('dot4-64x64');
    expect(selectGemmKernel(caps(), shape(4096, 4096, 64), { lhsPackFormat: 'u8k4-r128', rhsPackFormat: 'u8k4-r128' }).id).toBe(
      'dot4-128x128',
    );
    expect(selectGemmKernel(caps(), shape(64, 64, 64), { rhsPackFormat: 'u8k4-r128' }).id).toBe('dot4-64x64');
    expect(() => selectGemmKernel(caps(), shape(64, 64, 64), { force: 'dot4-128x128', rhsPackFormat: 'u8k4-r64' })).toThrow(/cannot run/);
  });
  it('needs 16 KiB of workgroup memory and 256 invocations', () => {
    const small = caps({ limits: { ...caps().limits, maxComputeWorkgroupStorageSize: 12288 } });
    expect(selectGemmKernel(small, shape(4096, 4096, 64)).id).toBe('dot4-64x64'); // 8 KiB of staging, 1 KiB of row sums
    const fewer = caps({ limits: { ...caps().limits, maxComputeInvocationsPerWorkgroup: 128, maxComputeWorkgroupSizeX: 128 } });
    expect(selectGemmKernel(fewer, shape(4096, 4096, 64)).id).toBe('dot4-32x32'); // 64x64 is 256 invocations too
  });
});

describe('the pack entry point', () => {
  const rowMajor = (rows: number, cols: number) => ({ data: new Uint8Array(rows * cols), rows, cols });
  const [u8, u4] = [PACK_FORMATS['u8k4-r64'], PACK_FORMATS['u4k8-r64']];
  const hardware = { slowCompiler: false, limits: testLimits() };
  it('transposes strided operands of 64 rows or more, in 8-bit lanes, where compiling is cheap', () => {
    expect(packEntry(rowMajor(32, 64), 'rhs', u8, hardware)).toBe('packTranspose'); // k strided, 64 columns
    expect(packEntry(rowMajor(32, 63), 'rhs', u8, hardware)).toBe('pack');
    expect(packEntry(rowMajor(64, 32), 'lhs', u8, hardware)).toBe('pack'); // k contiguous
    expect(packEntry({ ...rowMajor(32, 64), order: 'col-major' as const }, 'rhs', u8, hardware)).toBe('pack');
    expect(packEntry(rowMajor(32, 64), 'rhs', u4, hardware)).toBe('pack'); // nibbles: the strided path
  });
  it('never where compiling is slow (a software adapter)', () => {
    expect(packEntry(rowMajor(32, 64), 'rhs', u8, { ...hardware, slowCompiler: true })).toBe('pack');
  });
  it("never where the device's workgroups hold fewer than its 256 invocations (a compatibility-mode device)", () => {
    const compat = { slowCompiler: false, limits: testLimits({ maxComputeInvocationsPerWorkgroup: 128, maxComputeWorkgroupSizeX: 128 }) };
    expect(packEntry(rowMajor(32, 64), 'rhs', u8, compat)).toBe('pack');
    const narrow = { slowCompiler: false, limits: testLimits({ maxComputeWorkgroupSizeX: 128 }) };
    expect(packEntry(rowMajor(32, 64), 'rhs', u8, narrow)).toBe('pack');
  });
});
