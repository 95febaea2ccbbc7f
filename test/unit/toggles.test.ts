// Unit tier for Dawn's device toggles (src/gpu/toggles.ts, the instance flags of src/gpu/dawn.ts): the
// audited default, the checks of a toggle list and of QGEMM_DAWN_TOGGLES (InputErrors naming the field),
// the flags handed to dawn.node's create(); and the audit itself: every `var<workgroup>` declared under
// src/ has its row in docs/gpu.md's table ("Dawn toggles"), and every row names a declared variable, so
// that a new kernel's workgroup memory cannot reach a `disable_workgroup_init` device unaudited. The
// GPU side (a poisoned sweep, the toggles reaching the device) is test/gpu/toggles.test.ts.

import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';
import { InputError } from '../../src/errors.ts';
import { dawnFlags } from '../../src/gpu/dawn.ts';
import { AUDITED_TOGGLES, checkToggles, describeToggles, envToggles } from '../../src/gpu/toggles.ts';

const root = join(import.meta.dirname, '../..');

function inputError(f: () => unknown): InputError {
  try {
    f();
  } catch (e) {
    if (e instanceof InputError) return e;
    throw e;
  }
  throw new Error('no InputError');
}

describe('Dawn toggles', () => {
  it('the audited default is disable_workgroup_init alone', () => {
    expect(AUDITED_TOGGLES).toEqual(['disable_workgroup_init']);
  });

  it('checks a toggle list: canonical order, no duplicates, an unknown name is an InputError naming the field', () => {
    expect(checkToggles('toggles', ['disable_robustness', 'disable_workgroup_init', 'disable_robustness'])).toEqual([
      'disable_workgroup_init',
      'disable_robustness',
    ]);
    expect(checkToggles('toggles', [])).toEqual([]);
    const e = inputError(() => checkToggles('toggles', ['disable_workgroup_init', 'skip_validation']));
    expect(e.field).toBe('toggles');
    expect(e.message).toContain('"skip_validation"');
    expect(inputError(() => checkToggles('toggles', 'disable_robustness' as never)).field).toBe('toggles');
  });

  it('QGEMM_DAWN_TOGGLES: unset or empty is the default, none is [], a list is checked, an empty name refused', () => {
    expect(envToggles(undefined)).toBeUndefined();
    expect(envToggles(' ')).toBeUndefined();
    expect(envToggles('none')).toEqual([]);
    expect(envToggles('disable_robustness, disable_workgroup_init')).toEqual(['disable_workgroup_init', 'disable_robustness']);
    expect(inputError(() => envToggles('disable_workgroup_init,nope')).field).toBe('QGEMM_DAWN_TOGGLES');
    // An empty name is a slip, not 'none' (which would drop the audited default): "," was taken for none.
    for (const slip of [',', ' , ', 'disable_robustness,', 'disable_robustness,,disable_workgroup_init']) {
      expect(inputError(() => envToggles(slip)).message, slip).toMatch(/^QGEMM_DAWN_TOGGLES: an empty toggle name/);
    }
  });

  it("dawn.node's instance flags carry the device toggles beside allow_unsafe_apis", () => {
    expect(dawnFlags([])).toEqual(['enable-dawn-features=allow_unsafe_apis', 'disable-dawn-features=timestamp_quantization']);
    expect(dawnFlags(['disable_workgroup_init', 'disable_robustness'])).toEqual([
      'enable-dawn-features=allow_unsafe_apis,disable_workgroup_init,disable_robustness',
      'disable-dawn-features=timestamp_quantization',
    ]);
  });

  it('describes toggles for people', () => {
    expect(describeToggles(['disable_workgroup_init'])).toBe('disable_workgroup_init');
    expect(describeToggles([])).toBe('none');
    expect(describeToggles(null)).toMatch(/not set by qgemm/);
  });
});

function wgslFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((d) =>
    d.isDirectory() ? wgslFiles(join(dir, d.name)) : d.name.endsWith('.wgsl') ? [join(dir, d.name)] : [],
  );
}

describe("the workgroup-memory audit of docs/gpu.md ('Dawn toggles')", () => {
  it('lists exactly the workgroup variables declared under src/', () => {
    const declared = wgslFiles(join(root, 'src'))
      .flatMap((f) => [...readFileSync(f, 'utf8').matchAll(/^\s*var<workgroup>\s+(\w+)/gm)].map((m) => `${relative(root, f)} ${m[1]}`))
      .sort();
    const doc = readFileSync(join(root, 'docs/gpu.md'), 'utf8');
    const section = doc.slice(doc.indexOf('## Dawn toggles'));
    const audited = [...section.matchAll(/^\| (src\/\S+\.wgsl) \| ([^|]+) \|/gm)]
      .flatMap((m) => [...m[2].matchAll(/`(\w+)`/g)].map((v) => `${m[1]} ${v[1]}`))
      .sort();
    expect(declared.length).toBeGreaterThan(0);
    expect(audited).toEqual(declared);
  });
});
