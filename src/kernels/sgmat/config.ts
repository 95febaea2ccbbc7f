// The fragment configuration of the subgroup-matrix kernel (./sgmat.wgsl), in the GEMM stage of
// pack -> gemm -> output: which of the adapter's subgroup-matrix configurations (Dawn's
// adapter.info.subgroupMatrixConfigs) the kernel uses, and the WGSL constants generated from it. WGSL
// takes a subgroup-matrix type's dimensions only as const-expressions (not overrides), and function-scope
// arrays only with const sizes, so the fragment shape, the component type and the subgroup size reach
// the one kernel source as a few generated `const` and `alias` lines in front of it; everything else
// (workgroup size, fragments per subgroup, loads per invocation) the kernel derives from them.
//
// What the kernel needs of a configuration, checked here and by its `supports`:
//   - u8 -> u32 or i8 -> i32 components (u8 first: the operands are packed in the uint8 domain);
//   - FRAG_M and FRAG_N dividing 32 (a subgroup's 32 x 32 quarter of the 64 x 64 tile), FRAG_K dividing
//     the 64-byte k step;
//   - one subgroup size: the adapter's subgroupMinSize == subgroupMaxSize. The kernel's workgroup is
//     4 * SUBGROUP_SIZE invocations and subgroup `subgroup_id` owns quarter (id / 2, id % 2): that holds
//     only if the workgroup really is 4 subgroups, which an adapter with a range of sizes (Intel: 8 to
//     32) does not guarantee. Such adapters do not run the kernel. Which invocations form a subgroup
//     does not matter: the kernel uses subgroup_id only to pick a quarter.
//   - SUBGROUP_SIZE a power of two of at most 64 (a workgroup of at most 256 invocations that divides the
//     256 16-byte loads of a k step).
// The best configuration is the largest fragment (M x N x K), then u8 before i8: NVIDIA's 16x16x32 before
// its 16x8x32, lavapipe's 8x8x8 where that is all there is.

import type { AdapterCaps, SubgroupMatrixConfig } from '../../gpu/caps.ts';

/** One configuration the kernel can be built for. */
export interface SgmatConfig {
  componentType: 'u8' | 'i8';
  M: number;
  N: number;
  K: number;
  subgroupSize: number;
}

/** Bytes of workgroup memory the kernel declares: two staging buffers of two 64 x 80-byte tiles. */
export const SGMAT_WORKGROUP_BYTES = 2 * 2 * 64 * 80;

const pow2 = (x: number) => x > 0 && (x & (x - 1)) === 0;

/** Whether the kernel takes this fragment shape and type (any subgroup size). */
function fragmentUsable(c: SubgroupMatrixConfig): boolean {
  const types =
    (c.componentType === 'u8' && c.resultComponentType === 'u32') || (c.componentType === 'i8' && c.resultComponentType === 'i32');
  return types && 32 % c.M === 0 && 32 % c.N === 0 && 64 % c.K === 0 && c.M >= 1 && c.N >= 1 && c.K >= 1;
}

/** The adapter's one subgroup size, or 0 where it has none the kernel can rely on. */
function fixedSubgroupSize(caps: AdapterCaps): number {
  const s = caps.subgroupMaxSize;
  if (!caps.subgroups || s === 0 || caps.subgroupMinSize !== s || !pow2(s) || s > 64) return 0;
  return 4 * s <= caps.limits.maxComputeInvocationsPerWorkgroup ? s : 0;
}

/** The configuration to use on an adapter (largest fragment, u8 before i8), or null where none fits. */
export function bestConfig(caps: AdapterCaps): SgmatConfig | null {
  const subgroupSize = fixedSubgroupSize(caps);
  if (!subgroupSize || caps.limits.maxComputeWorkgroupStorageSize < SGMAT_WORKGROUP_BYTES) return null;
  const usable = caps.subgroupMatrix.filter(fragmentUsable);
  usable.sort((a, b) => b.M * b.N * b.K - a.M * a.N * a.K || (a.componentType === 'u8' ? -1 : 1) - (b.componentType === 'u8' ? -1 : 1));
  const c = usable[0];
  return c ? { componentType: c.componentType as 'u8' | 'i8', M: c.M, N: c.N, K: c.K, subgroupSize } : null;
}

/** 'u8->u32 16x16x32 sg32': a configuration in one short label. */
export function configLabel(c: SgmatConfig): string {
  return `${c.componentType}->${c.componentType === 'u8' ? 'u32' : 'i32'} ${c.M}x${c.N}x${c.K} sg${c.subgroupSize}`;
}

/** The generated constants in front of the kernel: fragment shape, types and subgroup size. */
export function configConstants(c: SgmatConfig): string {
  const signed = c.componentType === 'i8';
  const result = signed ? 'i32' : 'u32';
  return [
    `// Generated from the configuration ${configLabel(c)} (src/kernels/sgmat/config.ts).`,
    `const FRAG_M: u32 = ${c.M}u;`,
    `const FRAG_N: u32 = ${c.N}u;`,
    `const FRAG_K: u32 = ${c.K}u;`,
    `const SUBGROUP_SIZE: u32 = ${c.subgroupSize}u;`,
    `const SIGNED_FRAGMENTS: bool = ${signed};`,
    `alias StageWord = ${result};`,
    `alias LeftFragment = subgroup_matrix_left<${c.componentType}, FRAG_K, FRAG_M>;`,
    `alias RightFragment = subgroup_matrix_right<${c.componentType}, FRAG_N, FRAG_K>;`,
    `alias ResultFragment = subgroup_matrix_result<${result}, FRAG_N, FRAG_M>;`,
    '',
  ].join('\n');
}

/** What reflection reads in place of the generated constants (the parser knows no subgroup-matrix types). */
export const REFLECTION_CONSTANTS = 'alias StageWord = u32;\n';
