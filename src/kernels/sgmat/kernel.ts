// The subgroup-matrix GEMM kernel 'sgmat-64x64' (pack -> GEMM -> output): ./sgmat.wgsl on the int8
// tensor cores that Dawn exposes as chromium-experimental-subgroup-matrix, reading 'u8k4-r64' operands
// band by band like the dot4 kernels, with the shared epilogue. It uses the u8 configuration: operands
// are in the uint8 domain already (int8 XOR 0x80, zero points + 128), so the four-term expansion is the
// dot4 kernels' exactly, and an i8 configuration would need the flip undone and other sums.
//
// No CI machine has the feature (SwiftShader and lavapipe lack it), so the kernel declares
// `needsSelfTest`: before a device first uses it, the context runs the exactness self-test of
// ../self-test.ts and, if it fails, disables the kernel for that device with a one-line warning.

import { bandedKernel, tileBindings } from '../banded.ts';
import type { GpuGemmKernel } from '../types.ts';
import { epilogueLibrary } from '../../epilogue/source.ts';
import bindings from './sgmat-bindings.wgsl?raw';
import enable from './sgmat-enable.wgsl?raw';
import sgmat from './sgmat.wgsl?raw';

/** The directives first, then the shared libraries, the declarations and the kernel. */
export const sgmatSource = [enable, epilogueLibrary, tileBindings, bindings, sgmat].join('\n');
/** What the host code reflects: everything the reflection parser reads (no subgroup-matrix syntax). */
export const sgmatDeclarations = [epilogueLibrary, tileBindings, bindings].join('\n');

/** Workgroup memory the kernel declares: two staging buffers of two 64 x 80-byte tiles. */
const WORKGROUP_BYTES = 2 * 2 * 64 * 80;

export const SGMAT_ID = 'sgmat-64x64';
export type SgmatId = typeof SGMAT_ID;

export const sgmatKernel: GpuGemmKernel = {
  ...bandedKernel({
    id: SGMAT_ID,
    source: sgmatSource,
    reflect: sgmatDeclarations,
    entryPoint: 'sgmat',
    overrides: {},
    tileM: 64,
    tileN: 64,
    supports: (caps) =>
      caps.subgroups &&
      caps.subgroupMinSize <= 32 &&
      caps.subgroupMaxSize >= 32 &&
      caps.limits.maxComputeWorkgroupStorageSize >= WORKGROUP_BYTES &&
      caps.subgroupMatrix.some(
        (c) => c.componentType === 'u8' && c.resultComponentType === 'u32' && c.M === 16 && c.N === 16 && c.K === 32,
      ),
  }),
  needsSelfTest: true,
};
