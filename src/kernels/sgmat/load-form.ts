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
import { GpuValidationError } from '../../errors.ts';
import { openErrorScope } from '../../gpu/scopes.ts';
import { configConstants, type SgmatConfig } from './config.ts';
import { closing, splitTopLevel } from '../../wgsl/text.ts';

export type SgmatLoadForm = 'current' | 'legacy';

/** The legacy units of a loaded fragment type per array element (u32 words): 4 for 8-bit components, 1 for 32-bit. */
function componentsPerWord(type: string): number {
  if (/^(LeftFragment|RightFragment)$|^subgroup_matrix_\w+<\s*(u8|i8)\b/.test(type)) return 4;
  if (/^ResultFragment$|^subgroup_matrix_\w+<\s*(u32|i32|f32)\b/.test(type)) return 1;
  throw new Error(`subgroup-matrix legacy form: no rewrite for a load of ${type}`);
}

/**
 * The source in the legacy form: each current-form call, found with its template and arguments by
 * bracket matching (an argument may hold calls and commas), becomes the boolean form, loads counting
 * their offset and stride in the fragment's components (x 4 for 8-bit fragments), stores (of 32-bit
 * results, whose components are the array's words) unchanged in units. Throws where a majorness is left
 * outside comments (a call this rewrite does not know).
 */
export function toLegacyForm(source: string): string {
  let out = '';
  let at = 0;
  const call = /\bsubgroupMatrix(Load|Store)\s*</g;
  for (let m = call.exec(source); m; m = call.exec(source)) {
    const lt = m.index + m[0].length - 1;
    const gt = closing(source, lt);
    const open = gt < 0 ? -1 : source.slice(gt + 1).search(/\S/) + gt + 1;
    const close = open > gt && source[open] === '(' ? closing(source, open) : -1;
    const template = splitTopLevel(source.slice(lt + 1, gt), true);
    const major = template.at(-1);
    if (close < 0 || (major !== 'row_major' && major !== 'col_major')) continue; // not a current-form call
    const args = splitTopLevel(source.slice(open + 1, close), false);
    const col = major === 'col_major';
    let legacy: string;
    if (m[1] === 'Load' && template.length === 2 && args.length === 3) {
      const k = componentsPerWord(template[0]);
      const scale = (x: string) => (k === 1 ? x : /^[\w.]+$/.test(x) ? `${x} * ${k}u` : `(${x}) * ${k}u`);
      legacy = `subgroupMatrixLoad<${template[0]}>(${args[0]}, ${scale(args[1])}, ${col}, ${scale(args[2])})`;
    } else if (m[1] === 'Store' && template.length === 1 && args.length === 4) {
      legacy = `subgroupMatrixStore(${args[0]}, ${args[1]}, ${args[2]}, ${col}, ${args[3]})`;
    } else {
      throw new Error(`subgroup-matrix legacy form: no rewrite for "${source.slice(m.index, close + 1)}"`);
    }
    out += source.slice(at, m.index) + legacy;
    at = close + 1;
    call.lastIndex = at;
  }
  out += source.slice(at);
  const left = out.replace(/\/\/.*$/gm, '').match(/.*\b(row|col)_major\b.*/);
  if (left) throw new Error(`subgroup-matrix legacy form: no rewrite for "${left[0].trim()}"`);
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
  // Scopes opened and closed before any await: the probe's error is its own, never another call's.
  const close = openErrorScope(device, 'the subgroup-matrix load-form probe');
  let module: GPUShaderModule;
  let closed: Promise<void>;
  try {
    module = device.createShaderModule({ code: loadProbeSource(c), label: 'qgemm sgmat load-form probe' });
  } finally {
    closed = close();
  }
  // A validation error is the answer (the form does not compile); running out of memory is not.
  const valid = closed.then(
    () => true,
    (e: unknown) => {
      if (e instanceof GpuValidationError) return false;
      throw e;
    },
  );
  const [compiled, info] = await Promise.all([valid, module.getCompilationInfo()]);
  return compiled && !info.messages.some((m) => m.type === 'error') ? 'current' : 'legacy';
}

/**
 * A subgroup-matrix kernel's source as this device compiles it: as written where its compiler takes the
 * current form or where the source enables no subgroup matrices (the emulated kernel), else in the legacy
 * form. Where the probe fails, Dawn prints its compile error once (on stdout in Node, in a page's console).
 */
export async function sourceForDevice(device: GPUDevice, c: SgmatConfig, source: string): Promise<string> {
  if (!/^enable chromium_experimental_subgroup_matrix;/m.test(source)) return source;
  return (await loadForm(device, c)) === 'current' ? source : toLegacyForm(source);
}
