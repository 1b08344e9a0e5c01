"""Float32 emulation of a low-precision ONNX model under our numeric contract, for running
it in ONNX Runtime. ONNX Runtime's CPU provider has no bfloat16 arithmetic kernels, and for a float16
node it has no kernel for it computes in float32 and drops the surrounding Casts, so the
tests also run an emulation: a float32 model in which every low value is widened exactly
and every node writing a low value has its output rounded once by Cast(to=low) ->
Cast(to=float) (nearest even), subgraphs included."""
import numpy as np
import onnx
from onnx import helper, numpy_helper

LOW_TYPES = {onnx.TensorProto.FLOAT16, onnx.TensorProto.BFLOAT16}


def value_types(model):
    """elem_type of every tensor value in the model, subgraphs included."""
    types = {}

    def visit(graph):
        for values in (graph.input, graph.output, graph.value_info):
            for v in values:
                if v.type.HasField("tensor_type"):
                    types[v.name] = v.type.tensor_type.elem_type
        for t in graph.initializer:
            types[t.name] = t.data_type
        for node in graph.node:
            for attr in node.attribute:
                if attr.type == onnx.AttributeProto.GRAPH:
                    visit(attr.g)
                for g in attr.graphs:
                    visit(g)

    visit(model.graph)
    return types


def to_float_tensor(tensor):
    """A float16/bfloat16 TensorProto widened exactly to float32."""
    if tensor.data_type == onnx.TensorProto.BFLOAT16:
        bits = np.frombuffer(tensor.raw_data, dtype=np.uint16) if tensor.raw_data else \
            np.array(tensor.int32_data, dtype=np.uint16)
        values = (bits.astype(np.uint32) << 16).view(np.float32)
    else:
        values = numpy_helper.to_array(tensor).astype(np.float32)
    return numpy_helper.from_array(values.reshape(tuple(tensor.dims)), tensor.name)


def emulate(converted):
    """A float32 model computing what `converted` computes under our numeric contract:
    low values become float32, and each node writing a low value has its output rounded
    once by Cast(to=low) -> Cast(to=float). Subgraphs are rewritten the same way."""
    inferred = onnx.shape_inference.infer_shapes(converted, strict_mode=True)
    types = value_types(inferred)
    opset = next((o.version for o in converted.opset_import if o.domain in ("", "ai.onnx")), 0)

    def cast(source, target, to):
        # Cast-1 (below opset 6) names the type as a string.
        return helper.make_node("Cast", [source], [target],
                                to=onnx.TensorProto.DataType.Name(to) if opset < 6 else to)

    def rewrite(graph):
        for i, tensor in enumerate(graph.initializer):
            if tensor.data_type in LOW_TYPES:
                graph.initializer[i].CopyFrom(to_float_tensor(tensor))
        for values in (graph.input, graph.output, graph.value_info):
            for v in values:
                if v.type.tensor_type.elem_type in LOW_TYPES:
                    v.type.tensor_type.elem_type = onnx.TensorProto.FLOAT
        nodes = []
        for node in graph.node:
            for attr in node.attribute:
                if attr.type == onnx.AttributeProto.TENSOR and attr.t.data_type in LOW_TYPES:
                    attr.t.CopyFrom(to_float_tensor(attr.t))
                if attr.type == onnx.AttributeProto.GRAPH:
                    rewrite(attr.g)
                for g in attr.graphs:
                    rewrite(g)
            rounded = [(k, o) for k, o in enumerate(node.output) if types.get(o) in LOW_TYPES]
            for k, o in rounded:
                node.output[k] = o + "__unrounded"
            nodes.append(node)
            for _, o in rounded:
                nodes.append(cast(o + "__unrounded", o + "__low", types[o]))
                nodes.append(cast(o + "__low", o, onnx.TensorProto.FLOAT))
                if opset < 6:  # Cast-1 infers no type: declare what the two Casts read and write
                    unrounded = types[o] if node.op_type == "Cast" else onnx.TensorProto.FLOAT
                    declared = {v.name for v in list(graph.value_info) + list(graph.output)}
                    for name, elem_type in ((o + "__unrounded", unrounded), (o + "__low", types[o]),
                                            (o, onnx.TensorProto.FLOAT)):
                        if name not in declared:
                            graph.value_info.append(helper.make_tensor_value_info(name, elem_type, None))
        del graph.node[:]
        graph.node.extend(nodes)

    emulated = onnx.ModelProto()
    emulated.CopyFrom(converted)
    rewrite(emulated.graph)
    return emulated
