# Runs .tflite models in TFLite's own C++ interpreter through TensorFlow's Python package, with one op
# resolver, for the golden generator (./generate.ts); not part of the library.
#   python run_tflite.py RESOLVER < models.json > outputs.json
# RESOLVER: AUTO (the default: the XNNPACK delegate applied), BUILTIN_WITHOUT_DEFAULT_DELEGATES (the
# optimized builtin kernels), BUILTIN_REF (the reference kernels). models.json: a list of
# {"tflite": base64, "inputs": [{"dtype": "int8"|"uint8", "data": [...], "shape": [...]}, ...]};
# outputs.json: {"tensorflow": version, "runs": [{"output": [...], "log": [...]}, ...]}, one thread.
import base64
import json
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402


def main() -> None:
    resolver = getattr(tf.lite.experimental.OpResolverType, sys.argv[1])
    models = json.load(sys.stdin)
    runs = []
    for m in models:
        interpreter = tf.lite.Interpreter(
            model_content=base64.b64decode(m["tflite"]), experimental_op_resolver_type=resolver, num_threads=1
        )
        interpreter.allocate_tensors()
        for detail, t in zip(interpreter.get_input_details(), m["inputs"]):
            interpreter.set_tensor(detail["index"], np.array(t["data"], dtype=t["dtype"]).reshape(t["shape"]))
        interpreter.invoke()
        out = interpreter.get_tensor(interpreter.get_output_details()[0]["index"])
        runs.append({"output": out.reshape(-1).tolist(), "log": []})
    json.dump({"tensorflow": tf.__version__, "runs": runs}, sys.stdout)


main()
