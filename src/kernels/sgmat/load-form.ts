// Which form of the subgroup-matrix loads and stores a device's WGSL compiler takes, for the kernel of
// ./sgmat.wgsl (GEMM stage of pack -> gemm -> output). Dawn's chromium_experimental_subgroup_matrix has
// two:
//   - current: `subgroupMatrixLoad<T, row_major | col_major>(&array, offset, stride)` and
//     `subgroupMatrixStore<row_major | col_major>(&array, offset, value, stride)`, offset and stride
//     counted in elements of the array (u32 words for our 8-bit fragments); in Dawn since July 2026 (in
//     the last two weeks of June it took the legacy units: wrong sums, which the kernel's self-test,
//     run before first use, refuses);
//   - legacy: `subgroupMatrixLoad<T>(&array, offset, colMajor, stride)` and
//     `subgroupMatrixStore(&array, offset, value, colMajor, stride)`, counted in the fragment's components
//     (bytes for 8-bit fragments, words for 32-bit results). Dawn has marked it deprecated (each call
//     warns, "use of deprecated builtin"; its removal is planned, Tint's wgsl.def, b/529415904).
// The kernel's files are written in the current form. A device compiles a small probe (./load-probe.wgsl)
// once, before its first subgroup-matrix pipeline, and where the probe fails (an older browser or Dawn
// build) the kernel's source is rewritten into the legacy form. In dawn.node 0.6.2 both compile to the
// same SPIR-V load, with the same bounds clamp (the legacy one's byte offset divided back into words),
// so the choice costs nothing; the lavapipe tier runs the kernel in both.

import enable from './sgmat-enable.wgsl?raw';
import probe from './load-probe.wgsl?raw';
import { configConstants, type SgmatConfig } from './config.ts';

export type SgmatLoadForm = 'current' | 'legacy';

/** A current-form load of an 8-bit fragment: type, majorness, array, offset (no comma), stride (a plain name). */
const LOAD = /subgroupMatrixLoad<(LeftFragment|RightFragment), (row|col)_major>\(&(\w+), ([^,]+), ([\w.]+)\)/g;
/** A current-form store of a result fragment: majorness, array, offset (no comma), value, stride. */
const STORE = /subgroupMatrixStore<(row|col)_major>\(&(\w+), ([^,]+), (\w+), ([\w.]+)\)/g;

/**
 * The kernel source in the legacy form: 8-bit fragment loads count bytes (offset and stride x 4), result
 * stores count words (the array's elements, as in the current form). Throws where a current-form call is
 * left that the two patterns do not know (the kernel changed in a way this rewrite must be taught).
 */
export function toLegacyForm(source: string): string {
  const out = source
    .replace(LOAD, (_, type, major, array, offset, stride) => {
      return `subgroupMatrixLoad<${type}>(&${array}, (${offset}) * 4u, ${major === 'col'}, ${stride} * 4u)`;
    })
    .replace(STORE, (_, major, array, offset, value, stride) => {
      return `subgroupMatrixStore(&${array}, ${offset}, ${value}, ${major === 'col'}, ${stride})`;
    });
  const left = out.replace(/\/\/.*$/gm, '').match(/subgroupMatrix(Load|Store)<[^>]*_major>|subgroupMatrixStore<\w+>/);
  if (left) throw new Error(`subgroup-matrix legacy form: no rewrite for "${left[0]}"`);
  return out;
}

/** The probe's source at configuration c: the kernel's directives and fragment aliases, then the probe. */
export const loadProbeSource = (c: SgmatConfig): string => [enable, configConstants(c), probe].join('\n');

const forms = new WeakMap<GPUDevice, Promise<SgmatLoadForm>>();

/** The form this device's compiler takes (probed once per device; a failed probe is not kept). */
export function loadForm(device: GPUDevice, c: SgmatConfig): Promise<SgmatLoadForm> {
  let form = forms.get(device);
  if (!form) {
    form = probeLoadForm(device, c);
    forms.set(device, form);
    form.catch(() => forms.delete(device));
  }
  return form;
}

async function probeLoadForm(device: GPUDevice, c: SgmatConfig): Promise<SgmatLoadForm> {
  // Push, create and pop before any await: the probe's error is its own, never another call's.
  device.pushErrorScope('validation');
  const module = device.createShaderModule({ code: loadProbeSource(c), label: 'qgemm sgmat load-form probe' });
  const error = device.popErrorScope();
  const [scoped, info] = await Promise.all([error, module.getCompilationInfo()]);
  return scoped || info.messages.some((m) => m.type === 'error') ? 'legacy' : 'current';
}

/**
 * A subgroup-matrix kernel's source as this device compiles it: as written where its compiler takes the
 * current form or where the source calls no builtin (the emulated kernel), else in the legacy form.
 */
export async function sourceForDevice(device: GPUDevice, c: SgmatConfig, source: string): Promise<string> {
  if (!source.includes('subgroupMatrixLoad<')) return source;
  return (await loadForm(device, c)) === 'current' ? source : toLegacyForm(source);
}
