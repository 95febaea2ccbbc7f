// Runs in runner-tfjs.html: window.loadRuntime() points @tensorflow/tfjs-tflite's model runner at its
// WebAssembly builds; window.runModels(models) creates a runner per .tflite model (base64, one thread),
// writes the inputs, infers and returns the output's values. Part of the golden generator
// (tools/tflite-golden/), not of the library.
const fromBase64 = (s) => Uint8Array.from(atob(s), (ch) => ch.charCodeAt(0));

window.loadRuntime = async () => {
  tfweb.tflite_web_api.setWasmPath(new URL('./node_modules/@tensorflow/tfjs-tflite/wasm/', location.href).href);
  return tfweb.tflite_web_api.getWasmFeatures();
};

window.runModels = async (models) => {
  const results = [];
  for (const m of models) {
    const runner = await tfweb.TFLiteWebModelRunner.create(fromBase64(m.tflite).buffer, { numThreads: 1 });
    runner.getInputs().forEach((input, i) => {
      input.data().set(m.inputs[i].data);
    });
    if (!runner.infer()) throw new Error('infer failed');
    const out = runner.getOutputs()[0];
    results.push({ output: Array.from(out.data()), dtype: out.dataType });
    runner.cleanUp();
  }
  return results;
};
window.runnerReady = true;
