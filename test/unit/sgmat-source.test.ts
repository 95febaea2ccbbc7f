// Unit tier for the subgroup-matrix kernel, which no CI adapter can compile (SwiftShader and lavapipe have
// no subgroup matrices): its composed WGSL starts with the directives WGSL wants first, has no templating,
// and reflects like the other banded kernels (the TileParams layout and every named binding), so the host
// code binds it right on the GPUs that have it. Its exactness is checked there by the self-test.

import { describe, expect, it } from 'vitest';
import { namedEntries, uniformLayout } from '../../src/gpu/reflect.ts';
import { sgmatDeclarations, sgmatKernel, sgmatSource } from '../../src/kernels/sgmat/kernel.ts';
import sgmat from '../../src/kernels/sgmat/sgmat.wgsl?raw';
import type { AdapterCaps } from '../../src/gpu/caps.ts';

describe('sgmat-64x64 source', () => {
  it('puts the enable and diagnostic directives before any declaration', () => {
    const code = sgmatSource.split('\n').filter((l) => l.trim() && !l.trim().startsWith('//'));
    expect(code.slice(0, 3)).toEqual([
      'enable subgroups;',
      'enable chromium_experimental_subgroup_matrix;',
      'diagnostic(off, chromium.subgroup_matrix_uniformity);',
    ]);
    expect(code.slice(3).some((l) => /^(enable|diagnostic|requires)\b/.test(l.trim()))).toBe(false);
    expect(sgmatSource).toContain(sgmatDeclarations.split('\n').at(-2));
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
  it('is chosen only where the adapter offers a u8 M16 N16 K32 configuration, subgroups of 32 and the workgroup memory', () => {
    const caps = (over: Partial<AdapterCaps>): AdapterCaps => ({
      vendor: 'nvidia',
      architecture: 'hopper',
      isSoftware: false,
      dot4: true,
      subgroups: true,
      subgroupMinSize: 32,
      subgroupMaxSize: 32,
      subgroupMatrix: [{ componentType: 'u8', resultComponentType: 'u32', M: 16, N: 16, K: 32 }],
      f16: true,
      timestamps: true,
      limits: {
        maxStorageBufferBindingSize: 2 ** 31,
        maxComputeWorkgroupsPerDimension: 65535,
        maxBufferSize: 2 ** 32,
        maxComputeWorkgroupStorageSize: 49152,
        maxComputeInvocationsPerWorkgroup: 1024,
        minStorageBufferOffsetAlignment: 256,
        minUniformBufferOffsetAlignment: 256,
      },
      ...over,
    });
    const shape = { M: 4096, N: 4096, K: 4096, dstType: 'uint8' as const, dstOrder: 'row-major' as const };
    expect(sgmatKernel.supports(caps({}), shape)).toBe(true);
    expect(
      sgmatKernel.supports(caps({ subgroupMatrix: [{ componentType: 'i8', resultComponentType: 'i32', M: 16, N: 16, K: 32 }] }), shape),
    ).toBe(false);
    expect(sgmatKernel.supports(caps({ subgroupMinSize: 64, subgroupMaxSize: 64 }), shape)).toBe(false);
    expect(sgmatKernel.supports(caps({ subgroups: false }), shape)).toBe(false);
    expect(sgmatKernel.supports(caps({ limits: { ...caps({}).limits, maxComputeWorkgroupStorageSize: 16384 } }), shape)).toBe(false);
    expect(sgmatKernel.needsSelfTest).toBe(true);
  });
});
