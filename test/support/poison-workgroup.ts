// What a device with Dawn's `disable_workgroup_init` toggle may do, made to happen on any adapter: the
// WGSL of every shader module is rewritten so that each compute entry point first fills every workgroup
// variable of the module with a poison pattern (0xdeadbeef in each 32-bit word), then meets a barrier, and
// only then runs its own body. A kernel that reads workgroup memory it did not write first (pack -> gemm
// -> output: staging tiles, reductions, atomics) then computes from garbage instead of zeros. SwiftShader
// zero-fills workgroup memory with or without the toggle (docs/gpu.md, "Dawn toggles"), so this rewrite
// is how the GPU tests prove the audit (test/gpu/toggles.test.ts).

import { closing, splitTopLevel } from '../../src/wgsl/text.ts';

const POISON = '0xdeadbeefu';

let loopVars = 0;

/** Statements that write the poison into every 32-bit word of `lvalue`, of WGSL type `type`. */
function poisonStatements(lvalue: string, type: string): string {
  const t = type.trim();
  const array = /^array<(.*)>$/s.exec(t);
  if (array) {
    const [element, count] = splitTopLevel(array[1], true);
    if (count === undefined) throw new Error(`poison: runtime-sized workgroup array ${lvalue}`);
    const i = `poisonI${loopVars++}`;
    return `for (var ${i} = 0u; ${i} < u32(${count}); ${i}++) { ${poisonStatements(`${lvalue}[${i}]`, element)} }`;
  }
  if (/^atomic<(u32|i32)>$/.test(t)) return `atomicStore(&${lvalue}, bitcast<${t.slice(7, 10)}>(${POISON}));`;
  const vec = /^vec([234])<(u32|i32|f32)>$/.exec(t);
  if (vec) return `${lvalue} = ${t}(bitcast<${vec[2]}>(${POISON}));`;
  // u32, i32, f32, or an alias of one (sgmat's StageWord).
  return `${lvalue} = bitcast<${t}>(${POISON});`;
}

/** The WGSL with every compute entry point poisoning every workgroup variable first; unchanged without any. */
export function poisonWorkgroupMemory(code: string): string {
  const vars = [...code.matchAll(/var<workgroup>\s+(\w+)\s*:\s*([^;]+);/g)].map((m) => ({ name: m[1], type: m[2] }));
  if (!vars.length) return code;
  const fill = vars.map((v) => poisonStatements(v.name, v.type)).join('\n    ');
  let entries = 0;
  let out = '';
  let from = 0;
  for (const m of code.matchAll(/@compute\b[^{;]*?\bfn\s+\w+\s*\(/g)) {
    // The parameter list, up to its balanced closing parenthesis, then the body's opening brace.
    const close = closing(code, m.index + m[0].length - 1);
    const params = code.slice(m.index + m[0].length, close);
    const brace = code.indexOf('{', close);
    const lid = /@builtin\(local_invocation_index\)\s*(\w+)/.exec(params)?.[1];
    const name = lid ?? 'poisonLid';
    const extra = lid ? '' : `${params.trim() ? ', ' : ''}@builtin(local_invocation_index) poisonLid: u32`;
    out += `${code.slice(from, close)}${extra}${code.slice(close, brace + 1)}`;
    out += `\n  if (${name} == 0u) {\n    ${fill}\n  }\n  workgroupBarrier();\n`;
    from = brace + 1;
    entries++;
  }
  out += code.slice(from);
  if (!entries) throw new Error('poison: workgroup variables but no compute entry point');
  return out;
}

/** Makes `device` compile every shader module poisoned (see the top); returns how many modules it rewrote. */
export function poisonDevice(device: GPUDevice): { rewritten: number } {
  const counter = { rewritten: 0 };
  const create = device.createShaderModule.bind(device);
  device.createShaderModule = (descriptor: GPUShaderModuleDescriptor) => {
    const code = poisonWorkgroupMemory(descriptor.code);
    if (code !== descriptor.code) counter.rewritten++;
    return create({ ...descriptor, code });
  };
  return counter;
}
