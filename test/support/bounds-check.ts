// What Dawn's `disable_robustness` toggle would let through, counted on any adapter. Every compute pipeline
// of layout 'auto' (all of the library's: pack -> gemm -> output, packs, kernels, reductions, epilogues,
// elementwise ops) is built from a rewritten copy of its module, in which each index into a storage array,
// a workgroup array, or a vector or array element of one, passes through a check against the length
// before it is used; each index out of range is counted, per variable, in a storage buffer of the test's.
// With robustness on (the default) Tint clamps such an index and nothing shows; without it a GPU reads or
// writes outside the binding. Exactness sweeps cannot tell the two apart (a clamped read may leave a result
// unchanged, and an unclamped one may too, until another GPU's memory holds something else), so this is
// how the GPU tests show that the kernels' accesses are in bounds by construction: test/gpu/toggles.test.ts
// (every kernel, robustness off), and any GPU test file under QGEMM_BOUNDS_CHECK=1 (test/gpu/gpu-env.ts; docs/gpu.md, "Dawn toggles").
//
// The counters live in group 3, which no library shader uses: the rewrite declares them, every compute
// entry point uses them (so layout 'auto' has group 3), and each compute pass binds them after setPipeline.
// The subgroup-matrix builtins (the real ones, on lavapipe or a GPU) read and write a whole fragment from
// an offset and a stride: each subgroupMatrixLoad / subgroupMatrixStore on a checked variable, in either
// form (src/kernels/sgmat/load-form.ts), has its span checked, its last element against the length.
// Not checked: arrays reached through a pointer variable, function-scope and private arrays (robustness
// clamps those too; the kernels index them with constant or loop-bounded indices), arrays in uniform structs.

import { closing, splitTopLevel } from '../../src/wgsl/text.ts';

const OOB_WORDS = 1 << 16; // one counter per (module, variable, index level): a family sweep makes thousands
const GROUP = 3;

interface Checked {
  name: string;
  /** The WGSL bound of the first index (a u32 expression), and of a second index where the element is a vector or array. */
  bounds: [string, string | undefined];
  /** The element's type, as declared. */
  element: string;
}

/** `array<T, N>` or `array<T>`: [T, N or undefined]; null where `type` is not an array. */
function arrayParts(type: string): [string, string | undefined] | null {
  const m = /^array<(.*)>$/s.exec(type.trim());
  if (!m) return null;
  const [element, count] = splitTopLevel(m[1], true);
  return [element, count];
}

/** The bound of an index into a value of `element` type: a vector's width, a fixed array's count. */
function elementBound(element: string): string | undefined {
  const vec = /^vec([234])</.exec(element);
  if (vec) return `${vec[1]}u`;
  const inner = arrayParts(element);
  return inner?.[1] === undefined ? undefined : `u32(${inner[1]})`;
}

/** The module's checked variables: storage arrays (runtime-sized) and workgroup arrays (fixed). */
function checkedVariables(code: string): Checked[] {
  const out: Checked[] = [];
  for (const m of code.matchAll(/var<(storage|workgroup)\b[^>]*>\s+(\w+)\s*:\s*([^;]+);/g)) {
    const parts = arrayParts(m[3]);
    if (!parts) continue;
    const [element, count] = parts;
    const first = count === undefined ? `arrayLength(&${m[2]})` : `u32(${count})`;
    out.push({ name: m[2], bounds: [first, elementBound(element)], element });
  }
  return out;
}

/** The labels of the counters handed out so far: counter i counts the out-of-range indices of labels[i]. */
const labels: string[] = [];

function counter(label: string): number {
  let id = labels.indexOf(label);
  if (id < 0) {
    id = labels.push(label) - 1;
    if (id >= OOB_WORDS) throw new Error('bounds-check: too many checked accesses');
  }
  return id;
}

/** Every index into the checked variables in `code`, wrapped in a check (recursively: indices inside indices). */
function wrapIndices(code: string, vars: Checked[], module: string): string {
  if (!vars.length) return code;
  const pattern = new RegExp(`(?<![\\w.])(${vars.map((v) => v.name).join('|')})\\s*\\[`, 'g');
  let out = '';
  let from = 0;
  for (let m = pattern.exec(code); m; m = pattern.exec(code)) {
    const v = vars.find((x) => x.name === m![1])!;
    let open = m.index + m[0].length - 1;
    out += code.slice(from, open);
    for (let level = 0; level < 2; level++) {
      const close = closing(code, open);
      if (close < 0) throw new Error(`bounds-check: unbalanced '[' at ${open}`);
      const index = wrapIndices(code.slice(open + 1, close), vars, module);
      const bound = v.bounds[level];
      out += bound ? `[qgemmChecked(${counter(`${module}: ${v.name}${'[]'.repeat(level + 1)}`)}u, u32(${index}), ${bound})]` : `[${index}]`;
      from = close + 1;
      const next = /^\s*\[/.exec(code.slice(from));
      if (!next || level === 1) break;
      out += code.slice(from, from + next[0].length - 1);
      open = from + next[0].length - 1;
    }
    pattern.lastIndex = from;
  }
  return out + code.slice(from);
}

const BYTES: Record<string, number> = { u8: 1, i8: 1, f16: 2, u32: 4, i32: 4, f32: 4 };

/** `type` with the module's aliases resolved (`alias StageWord = u32;`). */
function resolved(type: string, code: string): string {
  const t = type.trim();
  const alias = /^\w+$/.test(t) && new RegExp(`\\balias\\s+${t}\\s*=\\s*([^;]+);`).exec(code);
  return alias ? resolved(alias[1], code) : t;
}

/** The bytes of a value of scalar or vector type `type`. */
function bytesOf(type: string, code: string): number {
  const t = resolved(type, code);
  const vec = /^vec([234])<(\w+)>$/.exec(t);
  const bytes = vec ? Number(vec[1]) * BYTES[vec[2]] : BYTES[t];
  if (!bytes) throw new Error(`bounds-check: no size for ${type}`);
  return bytes;
}

/** A fragment type's rows and columns (WGSL expressions) and the bytes of one component. */
function fragmentShape(type: string, code: string): { rows: string; cols: string; componentBytes: number } {
  const m = /^subgroup_matrix_(?:left|right|result)\s*<(.*)>$/s.exec(resolved(type, code));
  if (!m) throw new Error(`bounds-check: not a fragment type: ${type}`);
  const [component, cols, rows] = splitTopLevel(m[1], true);
  return { rows, cols, componentBytes: bytesOf(component, code) };
}

/** The type of a stored fragment: a constructor call, or a variable declared with a type or initialized by one. */
function storedType(value: string, code: string): string {
  const made = /^(\w+)\s*\(\s*\)$/.exec(value);
  if (made) return made[1];
  const declared = /^\w+$/.test(value) && new RegExp(`\\b(?:var|let)\\s+${value}\\s*(?::\\s*(\\w+)\\s*)?=\\s*(\\w+)\\s*\\(`).exec(code);
  if (!declared) throw new Error(`bounds-check: no type for the stored fragment ${value}`);
  return declared[1] ?? declared[2];
}

/**
 * Every subgroupMatrixLoad / Store on a checked variable with its offset argument wrapped in a check of
 * the span it touches: outer lines (rows, or columns where column-major) `stride` apart, each `inner`
 * components long, the last element in range. The current form counts offset and stride in the array's
 * elements, the legacy form in the fragment's components (src/kernels/sgmat/load-form.ts).
 */
function wrapSpans(code: string, vars: Checked[], module: string): string {
  let out = '';
  let at = 0;
  const call = /\bsubgroupMatrix(Load|Store)\s*(?=[<(])/g;
  for (let m = call.exec(code); m; m = call.exec(code)) {
    let open = m.index + m[0].length;
    let template: string[] = [];
    if (code[open] === '<') {
      const gt = closing(code, open);
      template = splitTopLevel(code.slice(open + 1, gt), true);
      open = gt + 1 + code.slice(gt + 1).search(/\S/);
    }
    const close = closing(code, open);
    const args = splitTopLevel(code.slice(open + 1, close), false);
    const v = vars.find((x) => args[0] === `&${x.name}`);
    // The builtins take storage and workgroup arrays only, which are all checked: a call this does not read
    // (another pointer form, a call within the arguments) fails loudly, never runs unchecked.
    if (!v || /\bsubgroupMatrix(Load|Store)\b/.test(args.join())) {
      throw new Error(`bounds-check: a subgroup-matrix call it cannot check: ${code.slice(m.index, close + 1)}`);
    }
    const load = m[1] === 'Load';
    const legacy = load ? template.length === 1 : template.length === 0;
    const [type, major] = load ? template : [storedType(args[2], code), template[0]];
    const colMajor = legacy ? args.at(-2) : { row_major: 'false', col_major: 'true' }[major];
    if (colMajor !== 'true' && colMajor !== 'false') throw new Error(`bounds-check: no majorness in ${code.slice(m.index, close + 1)}`);
    const f = fragmentShape(type, code);
    const [outer, inner] = colMajor === 'true' ? [f.cols, f.rows] : [f.rows, f.cols];
    const elementBytes = bytesOf(v.element, code);
    // In elements (current form: a line's components rounded up to whole elements) or in components (legacy).
    const [innerUnits, bound] = legacy
      ? [`u32(${inner})`, `${v.bounds[0]} * ${elementBytes / f.componentBytes}u`]
      : [`(u32(${inner}) * ${f.componentBytes}u + ${elementBytes - 1}u) / ${elementBytes}u`, v.bounds[0]];
    const id = counter(`${module}: ${v.name} ${load ? 'load' : 'store'} span`);
    args[1] = `qgemmSpan(${id}u, u32(${args[1]}), u32(${args.at(-1)}), u32(${outer}), ${innerUnits}, ${bound})`;
    out += `${code.slice(at, open)}(${args.join(', ')})`;
    at = close + 1;
    call.lastIndex = at;
  }
  return out + code.slice(at);
}

/** The WGSL with every checked index wrapped and the counters declared; `module` names it in the counters' labels. */
export function boundsCheckedWgsl(source: string, module: string): string {
  // Comments go first: a bracket in one must not be taken for code.
  const code = source.replace(/\/\*[\s\S]*?\*\//g, ' ').replace(/\/\/[^\n]*/g, '');
  const vars = checkedVariables(code);
  let out = wrapSpans(wrapIndices(code, vars, module), vars, module);
  // Each compute entry point uses the counters, so that layout 'auto' always has group 3.
  out = out.replace(/(@compute\b[^{;]*?\bfn\s+\w+\s*\([^{]*\{)/g, '$1\n  _ = &qgemmOob;');
  return `${out}
@group(${GROUP}) @binding(0) var<storage, read_write> qgemmOob: array<atomic<u32>, ${OOB_WORDS}>;
fn qgemmChecked(id: u32, i: u32, n: u32) -> u32 {
  if (i >= n) {
    atomicAdd(&qgemmOob[id], 1u);
  }
  return i;
}
fn qgemmSpan(id: u32, offset: u32, stride: u32, outer: u32, inner: u32, n: u32) -> u32 {
  // offset + (outer - 1) * stride + inner <= n, without a u32 sum that wraps (an offset that went below 0
  // is a huge one, and must count)
  if (offset >= n || inner > n - offset || (outer > 1u && stride > (n - offset - inner) / (outer - 1u))) {
    atomicAdd(&qgemmOob[id], 1u);
  }
  return offset;
}
`;
}

/**
 * Runs a probe's entry point `main` over `workgroups` on `device`, group 0's bindings being storage buffers
 * of `sizes` bytes in order, and waits for it (the tests' probes of the counts).
 */
export async function runProbe(
  device: GPUDevice,
  code: string,
  sizes: readonly number[],
  workgroups: number,
  constants: Record<string, number> = {},
): Promise<void> {
  const module = device.createShaderModule({ code, label: 'probe' });
  const pipeline = await device.createComputePipelineAsync({ layout: 'auto', compute: { module, entryPoint: 'main', constants } });
  const buffers = sizes.map((size) => device.createBuffer({ size, usage: GPUBufferUsage.STORAGE }));
  const encoder = device.createCommandEncoder();
  const pass = encoder.beginComputePass();
  pass.setPipeline(pipeline);
  const entries = buffers.map((buffer, binding) => ({ binding, resource: { buffer } }));
  pass.setBindGroup(0, device.createBindGroup({ layout: pipeline.getBindGroupLayout(0), entries }));
  pass.dispatchWorkgroups(workgroups);
  pass.end();
  device.queue.submit([encoder.finish()]);
  await device.queue.onSubmittedWorkDone();
  for (const b of buffers) b.destroy();
}

export interface BoundsCheck {
  /** Shader modules checked so far (one per module that a pipeline of the library's uses). */
  readonly modules: number;
  /** The labels of modules whose checked copy did not compile (they ran unchecked). */
  readonly uncompiled: readonly string[];
  /** The out-of-range counts since the last call, by label ('qgemm dot4-64x64: lhsTile[]': 3), and resets them. */
  take(): Promise<Record<string, number>>;
}

/** Makes the library's compute pipelines on `device` bounds-checked (see above), and binds the counters in every compute pass. */
export function boundsCheckDevice(device: GPUDevice): BoundsCheck {
  const counts = device.createBuffer({
    label: 'bounds-check counters',
    size: OOB_WORDS * 4,
    usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC | GPUBufferUsage.COPY_DST,
  });
  const groups = new WeakMap<GPUComputePipeline, GPUBindGroup>();
  const groupOf = (pipeline: GPUComputePipeline) => {
    let g = groups.get(pipeline);
    if (!g) {
      g = device.createBindGroup({ layout: pipeline.getBindGroupLayout(GROUP), entries: [{ binding: 0, resource: { buffer: counts } }] });
      groups.set(pipeline, g);
    }
    return g;
  };
  // A module keeps its source; an async pipeline of layout 'auto' (all of the library's) gets the checked
  // module in its place. A module whose checked copy does not compile (a test's deliberately broken shader)
  // keeps its own, as do synchronous pipelines and explicit layouts (test harnesses): those run unchecked.
  const sources = new WeakMap<GPUShaderModule, GPUShaderModuleDescriptor>();
  const checkedModules = new WeakMap<GPUShaderModule, Promise<GPUShaderModule | null>>();
  let modules = 0;
  const uncompiled: string[] = [];
  const createModule = device.createShaderModule.bind(device);
  device.createShaderModule = (descriptor: GPUShaderModuleDescriptor) => {
    const module = createModule(descriptor);
    sources.set(module, descriptor);
    return module;
  };
  const checkedModule = (original: GPUShaderModule): Promise<GPUShaderModule | null> => {
    let module = checkedModules.get(original);
    if (!module) {
      const source = sources.get(original)!;
      const code = boundsCheckedWgsl(source.code, source.label ?? 'module'); // may throw: before the scope opens
      device.pushErrorScope('validation');
      const made = createModule({ ...source, code });
      module = device.popErrorScope().then((error) => {
        if (error) {
          uncompiled.push(source.label ?? 'module');
          return null;
        }
        modules++;
        return made;
      });
      checkedModules.set(original, module);
    }
    return module;
  };
  const checked = new WeakSet<GPUComputePipeline>();
  const createPipelineAsync = device.createComputePipelineAsync.bind(device);
  device.createComputePipelineAsync = async (d: GPUComputePipelineDescriptor) => {
    const module = d.layout === 'auto' && sources.has(d.compute.module) ? await checkedModule(d.compute.module) : null;
    const pipeline = await createPipelineAsync(module ? { ...d, compute: { ...d.compute, module } } : d);
    if (module) checked.add(pipeline);
    return pipeline;
  };
  const createEncoder = device.createCommandEncoder.bind(device);
  device.createCommandEncoder = (descriptor?: GPUCommandEncoderDescriptor) => {
    const encoder = createEncoder(descriptor);
    const begin = encoder.beginComputePass.bind(encoder);
    encoder.beginComputePass = (passDescriptor?: GPUComputePassDescriptor) => {
      const pass = begin(passDescriptor);
      const setPipeline = pass.setPipeline.bind(pass);
      pass.setPipeline = (pipeline: GPUComputePipeline) => {
        setPipeline(pipeline);
        if (checked.has(pipeline)) pass.setBindGroup(GROUP, groupOf(pipeline));
      };
      return pass;
    };
    return encoder;
  };
  return {
    get modules() {
      return modules;
    },
    uncompiled,
    async take() {
      const read = device.createBuffer({ size: OOB_WORDS * 4, usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST });
      const encoder = createEncoder();
      encoder.copyBufferToBuffer(counts, 0, read, 0, OOB_WORDS * 4);
      encoder.clearBuffer(counts);
      device.queue.submit([encoder.finish()]);
      await read.mapAsync(GPUMapMode.READ);
      const words = new Uint32Array(read.getMappedRange().slice(0));
      read.destroy();
      const out: Record<string, number> = {};
      words.forEach((n, id) => {
        if (n) out[labels[id] ?? `counter ${id}`] = n;
      });
      return out;
    },
  };
}
