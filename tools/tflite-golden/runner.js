// Runs in runner.html: window.loadRuntime(file) loads one of LiteRT's WebAssembly builds
// (litert_wasm_internal.js, relaxed SIMD; litert_wasm_compat_internal.js, without), then
// window.runModels(models) compiles and runs each .tflite model (base64, with its inputs in order) on
// the CPU ('wasm' accelerator, one thread) and returns the output tensor's values. Part of the golden generator (tools/tflite-golden/),
// not of the library.
import { loadAndCompile, loadLiteRt, supportsFeature, Tensor } from '@litertjs/core';

const fromBase64 = (s) => Uint8Array.from(atob(s), (ch) => ch.charCodeAt(0));

window.loadRuntime = async (file) => {
  await loadLiteRt(new URL(`./node_modules/@litertjs/core/wasm/${file}`, location.href).href);
  return { relaxedSimd: await supportsFeature('relaxedSimd') };
};

window.runModels = async (models) => {
  const results = [];
  for (const m of models) {
    const model = await loadAndCompile(fromBase64(m.tflite), { accelerator: 'wasm', cpuOptions: { numThreads: 1 } });
    const inputs = m.inputs.map((t) => new Tensor(t.dtype === 'int8' ? Int8Array.from(t.data) : Uint8Array.from(t.data), t.shape));
    const outputs = await model.run(inputs);
    const out = outputs[0].toTypedArray();
    results.push({ output: Array.from(out), dtype: out.constructor.name });
    for (const t of inputs) t.delete();
    for (const t of outputs) t.delete();
    model.delete();
  }
  return results;
};
window.runnerReady = true;
