// The emulated variant of the subgroup-matrix kernel (GEMM stage of pack -> gemm -> output): the REAL
// kernel source (./kernel.ts sgmatSource, for a given fragment configuration) rewritten by a few textual
// rules so that its subgroup-matrix types and builtins become the plain WGSL of ./emulation.wgsl, which
// any adapter runs (SwiftShader in CI). The rewrite is applied whenever the variant's pipeline is built,
// so the emulated kernel can never drift from the real one: every index, k step, staging buffer, barrier
// and prefetch condition it runs is the real kernel's text. Each rule must match, or the rewrite throws
// (the kernel changed in a way the emulation must be taught), but the three for fragment loads, of which
// a form makes one or more: from `stage` (all but '-dd'), from the packed rhs (the direct-rhs and '-dd'
// tilings, ./sgmat-rhs-direct.wgsl), from the packed lhs ('-dd', ./sgmat-lhs-direct.wgsl). The fragments
// read their bytes through ./emulation-stage.wgsl, ./emulation-packed.wgsl (rhs too) or
// ./emulation-direct.wgsl (both operands).
//
// What it checks: the kernel's indexing, staging and synchronization, for fragment shapes no CI driver
// offers (16x16x32, 16x8x32). What it cannot: the builtins' real semantics in Dawn and the driver,
// whether the hardware's subgroup_id matches the virtual t / SUBGROUP_SIZE, uniformity rules, speed.
// The variant is labelled '-emulated', is not in the registry's list (the 'auto' choice never runs it),
// and is run by the kernel tests and `qgemm verify` (src/verify.ts) only.

import { configLabel, DEFAULT_TILING, type SgmatConfig, type SgmatTiling, tilingId, tilingProblem } from './config.ts';
import emulation from './emulation.wgsl?raw';
import emulationDirect from './emulation-direct.wgsl?raw';
import emulationPacked from './emulation-packed.wgsl?raw';
import emulationStage from './emulation-stage.wgsl?raw';
import { type SgmatRhsBits, type SgmatSource, sgmatSource, sgmatSourceU4, sgmatVariant } from './kernel.ts';
import type { GpuGemmKernel } from '../types.ts';

/**
 * One textual rule: a pattern (global), what replaces it, what it does, and, for the fragment loads, which
 * memory they read (a kernel may lack any one of them, but must load fragments from somewhere).
 */
interface RewriteRule {
  what: string;
  pattern: RegExp;
  /** The replacement, or a function of the match and its groups (the majorness of a load or store). */
  replace: string | ((match: string, ...groups: string[]) => string);
  optional?: 'stage' | 'rhs' | 'lhs';
}

export const EMULATION_RULES: readonly RewriteRule[] = [
  {
    what: 'drop the subgroup-matrix directives',
    pattern:
      /^(enable subgroups;|enable chromium_experimental_subgroup_matrix;|diagnostic\(off, chromium\.subgroup_matrix_uniformity\);)$/gm,
    replace: '',
  },
  { what: 'left and right fragment types', pattern: /subgroup_matrix_(left|right)<\w+, \w+, \w+>/g, replace: 'EmuOperand' },
  { what: 'result fragment type', pattern: /subgroup_matrix_result<\w+, \w+, \w+>/g, replace: 'EmuResult' },
  {
    what: 'fragment loads from the staging buffer (all but the -dd form)',
    pattern: /subgroupMatrixLoad<\w+, (row|col)_major>\(&stage, /g,
    replace: (_, major) => `emuLoad(${major === 'col'}, `,
    optional: 'stage',
  },
  {
    what: 'fragment loads from the packed rhs (the direct-rhs and -dd forms only)',
    pattern: /subgroupMatrixLoad<\w+, (row|col)_major>\(&rhsWords, /g,
    replace: (_, major) => `emuLoadPacked(${major === 'col'}, `,
    optional: 'rhs',
  },
  {
    what: 'fragment loads from the packed lhs (the -dd form only)',
    pattern: /subgroupMatrixLoad<\w+, (row|col)_major>\(&lhsWords, /g,
    replace: (_, major) => `emuLoadLhs(${major === 'col'}, `,
    optional: 'lhs',
  },
  { what: 'multiply-accumulate', pattern: /subgroupMatrixMultiplyAccumulate\(/g, replace: 'emuMultiplyAccumulate(' },
  {
    what: 'fragment stores to the staging buffer',
    pattern: /subgroupMatrixStore<(row|col)_major>\(&stage, /g,
    replace: (_, major) => `emuStore(${major === 'col'}, `,
  },
  {
    what: 'subgroup_id: virtual subgroups of consecutive invocations',
    pattern: /\n\s*@builtin\(subgroup_id\) sg: u32,\n\) \{\n/g,
    replace: '\n) {\n  let sg = t / SUBGROUP_SIZE;\n  emuLane = t % SUBGROUP_SIZE;\n',
  },
];

/** Rewrites a subgroup-matrix kernel source into plain WGSL; throws when a rule matches nothing. */
export function emulateSubgroupMatrix(source: string): string {
  let out = source;
  const loads = new Set<string>();
  for (const rule of EMULATION_RULES) {
    let n = 0;
    out = out.replace(rule.pattern, (match: string, ...groups: string[]) => {
      n++;
      return typeof rule.replace === 'string' ? rule.replace : rule.replace(match, ...groups);
    });
    if (rule.optional) {
      if (n > 0) loads.add(rule.optional);
    } else if (n === 0) throw new Error(`subgroup-matrix emulation: rule "${rule.what}" matches nothing in the kernel source`);
  }
  if (loads.size === 0 || (loads.has('lhs') && !loads.has('rhs'))) {
    throw new Error('subgroup-matrix emulation: the kernel source loads no fragments the emulation knows of');
  }
  if (/subgroup_?[mM]atrix|subgroup_id/.test(out.replace(/\/\/.*$/gm, ''))) {
    throw new Error('subgroup-matrix emulation: the rewritten source still uses a subgroup-matrix builtin');
  }
  const words = loads.has('lhs') ? emulationDirect : loads.has('rhs') ? emulationPacked : emulationStage;
  return `${out}\n${emulation}\n${words}`;
}

/** The configurations the emulated kernel is checked at: NVIDIA's two, lavapipe's, and an i8 one. */
export const EMULATED_CONFIGS: readonly SgmatConfig[] = [
  { componentType: 'u8', M: 16, N: 16, K: 32, subgroupSize: 32 },
  { componentType: 'u8', M: 16, N: 8, K: 32, subgroupSize: 32 },
  { componentType: 'u8', M: 8, N: 8, K: 8, subgroupSize: 8 },
  { componentType: 'i8', M: 16, N: 16, K: 32, subgroupSize: 32 },
];

/**
 * The emulated kernel 'sgmat-64x64-emulated' at configuration c (at another tiling t:
 * `${tilingId(t)}-emulated`; with rhsBits 4, the nibble-rhs variant 'sgmat-64x64-u4-emulated'). `source`
 * gives another kernel text to rewrite (the mutation test plants bugs there), under another `id`
 * (pipelines are cached by id). Runs on any adapter with the workgroup memory and size.
 */
export function sgmatEmulatedKernel(
  c: SgmatConfig,
  opts: { source?: SgmatSource; id?: string; tiling?: SgmatTiling; rhsBits?: SgmatRhsBits } = {},
): GpuGemmKernel {
  const rhsBits = opts.rhsBits ?? 8;
  const source = opts.source ?? (rhsBits === 4 ? sgmatSourceU4 : sgmatSource);
  const tiling = opts.tiling ?? DEFAULT_TILING;
  const fits = (caps: Parameters<GpuGemmKernel['supports']>[0]) => (tilingProblem(c, tiling, caps.limits) ? null : c);
  const id = opts.id ?? `${tilingId(tiling)}${rhsBits === 4 ? '-u4' : ''}-emulated`;
  return sgmatVariant(id, fits, (x, t, gather) => emulateSubgroupMatrix(source(x, t, gather)), false, tiling, rhsBits);
}

export { configLabel };
