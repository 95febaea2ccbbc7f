// Uniform buffers laid out by reflection: the byte layout of a WGSL uniform struct (GemmParams,
// PackParams) is read from the shader source with wgsl_reflect, never counted by hand, and values are
// written by member name. Part of the GPU plumbing under the scheduler (pack -> gemm -> output).

import { WgslReflect } from 'wgsl_reflect';

export interface UniformLayout {
  struct: string;
  size: number;
  members: Map<string, { offset: number; type: string }>;
}

const layouts = new Map<string, UniformLayout>();

/** The layout of `structName` in `source` (cached by struct name; a struct has one definition). */
export function uniformLayout(source: string, structName: string): UniformLayout {
  const cached = layouts.get(structName);
  if (cached) return cached;
  const reflect = new WgslReflect(source);
  const info = reflect.structs.find((s) => s.name === structName);
  if (!info) throw new Error(`internal: struct ${structName} not found in WGSL source`);
  const members = new Map(info.members.map((m) => [m.name, { offset: m.offset, type: m.type.name }]));
  const layout = { struct: structName, size: Math.ceil(info.size / 16) * 16, members };
  layouts.set(structName, layout);
  return layout;
}

/** Bytes of one uniform struct; every member must be given (a missing one is a scheduler bug). */
export function packUniforms(layout: UniformLayout, values: Record<string, number>): ArrayBuffer {
  const buffer = new ArrayBuffer(layout.size);
  const view = new DataView(buffer);
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
  return buffer;
}
