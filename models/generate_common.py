"""Shared helpers for the bundled-model generators.

Every generator builds its graph through GraphBuilder, which keeps its own
lists of inputs, outputs, nodes and initializers. The ONNX model and the
<name>.expected.json summary are both derived from those lists, so the summary
is an independent statement of what the model should contain, not a re-read
of the file.

Run with Debian's python3 (numpy + onnx 1.12): opset 17 (or --opset), IR version 8.
"""

import argparse
import collections
import json
import math
import os

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OPSET = 17
IR_VERSION = 8
PRODUCER_NAME = "onnx-amp model generators"
PRODUCER_VERSION = "1"
MODELS_DIR = os.path.dirname(os.path.abspath(__file__))

# numpy dtype -> (TensorProto code, name as ONNX spells it, element size in bytes)
_DTYPES = {
    np.dtype(np.float32): (TensorProto.FLOAT, "float", 4),
    np.dtype(np.int64): (TensorProto.INT64, "int64", 8),
}


def _dtype_info(dtype):
    info = _DTYPES.get(np.dtype(dtype))
    if info is None:
        raise ValueError(f"unsupported dtype {dtype}")
    return info


def glorot_uniform(rng, shape, fan_in, fan_out):
    """Keras' GlorotUniform: U(-limit, limit), limit = sqrt(6 / (fan_in + fan_out))."""
    limit = math.sqrt(6.0 / (fan_in + fan_out))
    return rng.uniform(-limit, limit, size=shape).astype(np.float32)


def dense_kernel(rng, n_in, n_out):
    """Kernel laid out [in, out] like Keras' Dense (Gemm with transB=0, or MatMul)."""
    return glorot_uniform(rng, (n_in, n_out), n_in, n_out)


def conv_kernel(rng, out_ch, in_ch, kh, kw):
    """ONNX Conv weight [out, in, kh, kw]; fans count the receptive field like Keras."""
    return glorot_uniform(rng, (out_ch, in_ch, kh, kw), in_ch * kh * kw, out_ch * kh * kw)


def batch_norm_params(rng, channels):
    """Keras' initial gamma 1 / beta 0, with a non-trivial running mean and variance.

    mean ~ U(-0.5, 0.5) and var ~ U(0.5, 2.0) make inference-mode BatchNormalization
    actually shift and rescale every channel, so tests exercise it.
    """
    gamma = np.ones(channels, dtype=np.float32)
    beta = np.zeros(channels, dtype=np.float32)
    mean = rng.uniform(-0.5, 0.5, size=channels).astype(np.float32)
    var = rng.uniform(0.5, 2.0, size=channels).astype(np.float32)
    return gamma, beta, mean, var


class GraphBuilder:
    """Records a graph as plain lists, then emits the ONNX model and its summary."""

    def __init__(self, graph_name, opset=OPSET):
        self.graph_name = graph_name
        self.opset = opset
        self.inputs = []  # (name, numpy dtype, shape)
        self.outputs = []  # (name, numpy dtype, shape)
        self.nodes = []  # (op_type, name, inputs, outputs, attributes)
        self.initializers = []  # (name, numpy array)
        self._names = set()

    def _claim(self, name):
        if name in self._names:
            raise ValueError(f"duplicate name {name}")
        self._names.add(name)

    def add_input(self, name, dtype, shape):
        self._claim(name)
        self.inputs.append((name, np.dtype(dtype), list(shape)))
        return name

    def add_output(self, name, dtype, shape):
        self.outputs.append((name, np.dtype(dtype), list(shape)))
        return name

    def add_initializer(self, name, array):
        self._claim(name)
        array = np.ascontiguousarray(array)
        _dtype_info(array.dtype)
        self.initializers.append((name, array))
        return name

    def add_node(self, op_type, name, inputs, outputs=None, **attributes):
        """Adds a node; its single output is named after the node unless given."""
        if outputs is None:
            outputs = [name]
        for output in outputs:
            self._claim(output)
        self.nodes.append((op_type, name, list(inputs), list(outputs), attributes))
        return outputs[0] if len(outputs) == 1 else outputs

    def build(self):
        def value_info(name, dtype, shape):
            return helper.make_tensor_value_info(name, _dtype_info(dtype)[0], shape)

        graph = helper.make_graph(
            nodes=[helper.make_node(op, inputs, outputs, name=name, **attrs)
                   for op, name, inputs, outputs, attrs in self.nodes],
            name=self.graph_name,
            inputs=[value_info(*entry) for entry in self.inputs],
            outputs=[value_info(*entry) for entry in self.outputs],
            initializer=[numpy_helper.from_array(array, name)
                         for name, array in self.initializers],
        )
        model = helper.make_model(
            graph,
            opset_imports=[helper.make_opsetid("", self.opset)],
            producer_name=PRODUCER_NAME,
            producer_version=PRODUCER_VERSION,
        )
        model.ir_version = IR_VERSION
        return model

    def expected(self):
        """The summary `onnx-amp inspect --json` must reproduce, from the lists."""
        def io_entry(name, dtype, shape):
            return {"name": name, "dtype": _dtype_info(dtype)[1], "shape": shape}

        parameters = collections.Counter()
        parameter_bytes = collections.Counter()
        for _, array in self.initializers:
            _, dtype_name, size = _dtype_info(array.dtype)
            parameters[dtype_name] += int(array.size)
            parameter_bytes[dtype_name] += int(array.size) * size
        node_counts = collections.Counter(op for op, *_ in self.nodes)
        subgraphs = sum(isinstance(value, onnx.GraphProto)
                        for *_, attrs in self.nodes for value in attrs.values())
        return {
            "opsets": {"": self.opset},
            "ir_version": IR_VERSION,
            "inputs": [io_entry(*entry) for entry in self.inputs],
            "outputs": [io_entry(*entry) for entry in self.outputs],
            "node_counts": dict(sorted(node_counts.items())),
            "parameters": dict(sorted(parameters.items())),
            "parameter_bytes": dict(sorted(parameter_bytes.items())),
            "num_nodes": len(self.nodes),
            "num_initializers": len(self.initializers),
            "subgraphs": subgraphs,
        }

    def save(self, onnx_path):
        """Checks the model, then writes <path>.onnx and <path minus .onnx>.expected.json."""
        model = self.build()
        onnx.checker.check_model(model, full_check=True)
        folder = os.path.dirname(os.path.abspath(onnx_path))
        os.makedirs(folder, exist_ok=True)
        with open(onnx_path, "wb") as f:
            f.write(model.SerializeToString(deterministic=True))
        stem = onnx_path[:-len(".onnx")] if onnx_path.endswith(".onnx") else onnx_path
        with open(stem + ".expected.json", "w", encoding="utf-8") as f:
            json.dump(self.expected(), f, indent=2)
            f.write("\n")


def add_conv_bn(g, rng, index, inputs, in_ch, out_ch, epsilon):
    """conv<index> (3x3, pad 1, zero bias) followed by bn<index> in inference mode;
    returns the BatchNormalization output."""
    weight = g.add_initializer(f"conv{index}.weight", conv_kernel(rng, out_ch, in_ch, 3, 3))
    bias = g.add_initializer(f"conv{index}.bias", np.zeros(out_ch, dtype=np.float32))
    h = g.add_node("Conv", f"conv{index}", [inputs, weight, bias],
                   kernel_shape=[3, 3], pads=[1, 1, 1, 1], strides=[1, 1])
    bn = [g.add_initializer(f"bn{index}.{field}", value)
          for field, value in zip(("scale", "bias", "mean", "var"), batch_norm_params(rng, out_ch))]
    return g.add_node("BatchNormalization", f"bn{index}", [h, *bn], epsilon=epsilon)


def add_classifier_head(g, rng, features, in_features, num_classes):
    """dense (Gemm, kernel [in, out], zero bias, tensor "logits") -> softmax -> output
    "probs" [batch, num_classes]."""
    kernel = g.add_initializer("dense.kernel", dense_kernel(rng, in_features, num_classes))
    bias = g.add_initializer("dense.bias", np.zeros(num_classes, dtype=np.float32))
    logits = g.add_node("Gemm", "dense", [features, kernel, bias], ["logits"],
                        alpha=1.0, beta=1.0, transA=0, transB=0)
    g.add_node("Softmax", "softmax", [logits], ["probs"], axis=-1)
    g.add_output("probs", np.float32, ["batch", num_classes])


def output_arg_parser(description, default_file):
    """Argument parser with -o defaulting to the committed file in models/."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("-o", "--output", default=os.path.join(MODELS_DIR, default_file),
                        help=f"output .onnx path (default: models/{default_file}); "
                             "the .expected.json is written next to it")
    return parser


def add_opset_arg(parser):
    """--opset: the default-domain opset the model declares (the checker decides whether
    the graph is valid at it)."""
    parser.add_argument("--opset", type=int, default=OPSET,
                        help=f"default-domain opset (default {OPSET}); the same graph, as exporters "
                             "of older opsets write it")
