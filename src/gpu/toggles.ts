// Dawn device toggles: which of Dawn's safety passes a device the library creates runs without, below the
// whole pack -> gemm -> output path (a toggle holds for every shader the device compiles). Two are
// known here: `disable_workgroup_init` (no zero-fill of workgroup memory at the start of each workgroup)
// and `disable_robustness` (no index clamping of buffer and array accesses). The default, AUDITED_TOGGLES,
// is what the audit of every WGSL file under src/ proves safe (docs/gpu.md, "Dawn toggles"): every
// workgroup variable is written before it is read, so `disable_workgroup_init`; robustness stays on,
// since not every access is in bounds by construction. In Node the toggles reach Dawn as instance flags
// (./dawn.ts), which dawn.node hands to the adapter and to every device; a page cannot set any.

import { InputError } from '../errors.ts';

export type DawnToggle = 'disable_workgroup_init' | 'disable_robustness';

export const DAWN_DEVICE_TOGGLES: readonly DawnToggle[] = ['disable_workgroup_init', 'disable_robustness'];

/** The toggles of the library's own Dawn devices unless the caller says otherwise (docs/gpu.md). */
export const AUDITED_TOGGLES: readonly DawnToggle[] = ['disable_workgroup_init'];

/** Checks a toggle list (known names) and returns it in canonical order, each once (a repeat is harmless: folded). */
export function checkToggles(field: string, toggles: readonly unknown[]): DawnToggle[] {
  if (!Array.isArray(toggles)) throw new InputError(field, `expected a list of Dawn toggles, got ${typeof toggles}`);
  for (const t of toggles) {
    if (!DAWN_DEVICE_TOGGLES.includes(t as DawnToggle)) {
      throw new InputError(
        field,
        `unknown Dawn toggle ${JSON.stringify(String(t).slice(0, 40))}; known: ${DAWN_DEVICE_TOGGLES.join(', ')}`,
      );
    }
  }
  return DAWN_DEVICE_TOGGLES.filter((t) => toggles.includes(t));
}

/**
 * QGEMM_DAWN_TOGGLES: 'none', or a comma-separated list of toggles, for comparing runs with and without
 * them (bench/README.md, "Tuning on a GPU"); undefined when the variable is unset or empty.
 */
export function envToggles(value: string | undefined): DawnToggle[] | undefined {
  if (value === undefined || value.trim() === '') return undefined;
  if (value.trim() === 'none') return [];
  const names = value.split(',').map((s) => s.trim());
  // An empty name (",", "a,,b", a trailing comma) is a slip, not 'none': it would drop the audited default.
  if (names.includes(''))
    throw new InputError('QGEMM_DAWN_TOGGLES', `an empty toggle name in ${JSON.stringify(value.slice(0, 80))}; give 'none' for none`);
  return checkToggles('QGEMM_DAWN_TOGGLES', names);
}

/** One line for people: 'disable_workgroup_init', 'none', or why the library did not set them (null). */
export function describeToggles(toggles: readonly DawnToggle[] | null | undefined): string {
  if (toggles === null || toggles === undefined) return "not set by qgemm (a browser's or the caller's device)";
  return toggles.length ? toggles.join(', ') : 'none';
}
