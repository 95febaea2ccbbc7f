// What the GPU plumbing reads from WGSL source by reflection (wgsl_reflect), so that no byte offset or
// binding number is written twice: the byte layout of a uniform struct (values are then written by
// member name), and the binding number of each named resource (bind groups are then built by name).
// Used by every kernel's host code under the scheduler (pack -> gemm -> output).

import { WgslReflect } from 'wgsl_reflect';

export interface UniformLayout {
  struct: string;
  size: number;
  members: Map<string, { offset: number; type: string }>;
}

interface Reflected {
  layouts: Map<string, UniformLayout>;
  bindings: Map<string, number>;
}

const reflected = new Map<string, Reflected>();

/** One parse per source text (kernel sources are module constants, so this is bounded). */
function reflect(source: string): Reflected {
  let r = reflected.get(source);
  if (!r) {
    const w = new WgslReflect(source);
    const layouts = new Map<string, UniformLayout>();
    for (const info of w.structs) {
      const members = new Map(info.members.map((m) => [m.name, { offset: m.offset, type: m.type.name }]));
      layouts.set(info.name, { struct: info.name, size: Math.ceil(info.size / 16) * 16, members });
    }
    const bindings = new Map<string, number>();
    for (const group of w.getBindGroups()) for (const v of group ?? []) if (v) bindings.set(v.name, v.binding);
    r = { layouts, bindings };
    reflected.set(source, r);
  }
  return r;
}

/**
 * Parses `source` now, so that later lookups hit the cache (./pipelines.ts calls it while a pipeline
 * compiles). A source the parser rejects is left for the lookup that needs it to report.
 */
export function warmReflection(source: string): void {
  try {
    reflect(source);
  } catch {
    // reported by uniformLayout or namedEntries, where the source is used
  }
}

/** The layout of `structName` in `source`. */
export function uniformLayout(source: string, structName: string): UniformLayout {
  const layout = reflect(source).layouts.get(structName);
  if (!layout) throw new Error(`internal: struct ${structName} not found in WGSL source`);
  return layout;
}

/** Writes one uniform struct into `view`; every member must be given (a missing one is a scheduler bug). */
export function packUniforms(layout: UniformLayout, values: Record<string, number>, view: DataView): void {
  for (const [name, { offset, type }] of layout.members) {
    const v = values[name];
    if (v === undefined) throw new Error(`internal: uniform ${layout.struct}.${name} not set`);
    if (type === 'i32') view.setInt32(offset, v, true);
    else if (type === 'u32') view.setUint32(offset, v, true);
    else throw new Error(`internal: uniform member type ${type} not supported`);
  }
  for (const name of Object.keys(values)) {
    if (!layout.members.has(name)) throw new Error(`internal: ${layout.struct} has no member ${name}`);
  }
}

/** Bind group entries from resources named as in the WGSL source (group 0). */
export function namedEntries(source: string, resources: Record<string, GPUBindingResource>): GPUBindGroupEntry[] {
  const bindings = reflect(source).bindings;
  return Object.entries(resources).map(([name, resource]) => {
    const binding = bindings.get(name);
    if (binding === undefined) throw new Error(`internal: the WGSL source binds no resource named ${name}`);
    return { binding, resource };
  });
}
