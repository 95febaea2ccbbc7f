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
// Not checked: arrays reached through a pointer variable, function-scope and private arrays (robustness
// clamps those too; the kernels index them with constant or loop-bounded indices), arrays in uniform structs.

import { closing, splitTopLevel } from '../../src/wgsl/text.ts';

const OOB_WORDS = 1 << 16; // one counter per (module, variable, index level): a family sweep makes thousands
const GROUP = 3;

interface Checked {
  name: string;
  /** The WGSL bound of the first index (a u32 expression), and of a second index where the element is a vector or array. */
  bounds: [string, string | undefined];
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
    out.push({ name: m[2], bounds: [first, elementBound(element)] });
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

/** The WGSL with every checked index wrapped and the counters declared; `module` names it in the counters' labels. */
export function boundsCheckedWgsl(source: string, module: string): string {
  // Comments go first: a bracket in one must not be taken for code.
  const code = source.replace(/\/\*[\s\S]*?\*\//g, ' ').replace(/\/\/[^\n]*/g, '');
  let out = wrapIndices(code, checkedVariables(code), module);
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
`;
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
      device.pushErrorScope('validation');
      const made = createModule({ ...source, code: boundsCheckedWgsl(source.code, source.label ?? 'module') });
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
