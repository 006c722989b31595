#!/usr/bin/env python3
"""examples/models/make_cnn.py: writes cnn.onnx and cnn_input.npy, the small
image classifier that README's first command compiles and runs.

The ONNX protobuf is encoded by hand (a few message types, wire format only),
so that making the model needs nothing beyond numpy. Weights come from a fixed
seed: running this again reproduces the files byte for byte.

  x[1,3,16,16] -> Conv 3->8 3x3 pad 1 -> Relu -> MaxPool 2x2
               -> Conv 8->16 3x3 pad 1 -> BatchNormalization -> Relu
               -> GlobalAveragePool -> Flatten -> Gemm 16->10 -> Softmax -> y[1,10]
"""
import os
import struct

import numpy as np


def varint(n):
    out = bytearray()
    n &= (1 << 64) - 1
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def field(num, wire, payload):
    return varint((num << 3) | wire) + payload


def f_int(num, v):
    return field(num, 0, varint(v))


def f_bytes(num, b):
    return field(num, 2, varint(len(b)) + b)


def f_str(num, s):
    return f_bytes(num, s.encode())


def f_float(num, v):
    return field(num, 5, struct.pack("<f", v))


FLOAT = 1


def tensor(name, arr):
    arr = np.ascontiguousarray(arr, dtype=np.float32)
    msg = b"".join(f_int(1, d) for d in arr.shape)
    msg += f_int(2, FLOAT) + f_str(8, name) + f_bytes(9, arr.tobytes())
    return msg


def attr_int(name, v):
    return f_str(1, name) + f_int(3, v) + f_int(20, 2)


def attr_float(name, v):
    return f_str(1, name) + f_float(2, v) + f_int(20, 1)


def attr_ints(name, vs):
    return f_str(1, name) + b"".join(f_int(8, v) for v in vs) + f_int(20, 7)


def node(op, inputs, outputs, name, attrs=()):
    msg = b"".join(f_str(1, i) for i in inputs) + b"".join(f_str(2, o) for o in outputs)
    msg += f_str(3, name) + f_str(4, op)
    msg += b"".join(f_bytes(5, a) for a in attrs)
    return msg


def value_info(name, shape):
    dims = b"".join(f_bytes(1, f_int(1, d)) for d in shape)
    tensor_type = f_int(1, FLOAT) + f_bytes(2, dims)
    return f_str(1, name) + f_bytes(2, f_bytes(1, tensor_type))


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    rng = np.random.default_rng(20261129)
    w1 = rng.standard_normal((8, 3, 3, 3)) * 0.3
    b1 = rng.standard_normal(8) * 0.1
    w2 = rng.standard_normal((16, 8, 3, 3)) * 0.2
    scale = 1.0 + rng.standard_normal(16) * 0.1
    bias = rng.standard_normal(16) * 0.1
    mean = rng.standard_normal(16) * 0.1
    var = 1.0 + np.abs(rng.standard_normal(16)) * 0.2
    wf = rng.standard_normal((10, 16)) * 0.5
    bf = rng.standard_normal(10) * 0.1
    inits = [("w1", w1), ("b1", b1), ("w2", w2), ("bn_scale", scale), ("bn_bias", bias),
             ("bn_mean", mean), ("bn_var", var), ("wf", wf), ("bf", bf)]
    nodes = [
        node("Conv", ["x", "w1", "b1"], ["c1"], "conv1",
             [attr_ints("kernel_shape", [3, 3]), attr_ints("pads", [1, 1, 1, 1])]),
        node("Relu", ["c1"], ["r1"], "relu1"),
        node("MaxPool", ["r1"], ["p1"], "pool1",
             [attr_ints("kernel_shape", [2, 2]), attr_ints("strides", [2, 2])]),
        node("Conv", ["p1", "w2"], ["c2"], "conv2",
             [attr_ints("kernel_shape", [3, 3]), attr_ints("pads", [1, 1, 1, 1])]),
        node("BatchNormalization", ["c2", "bn_scale", "bn_bias", "bn_mean", "bn_var"], ["n2"],
             "bn2", [attr_float("epsilon", 1e-5)]),
        node("Relu", ["n2"], ["r2"], "relu2"),
        node("GlobalAveragePool", ["r2"], ["g"], "gap"),
        node("Flatten", ["g"], ["f"], "flatten", [attr_int("axis", 1)]),
        node("Gemm", ["f", "wf", "bf"], ["logits"], "fc", [attr_int("transB", 1)]),
        node("Softmax", ["logits"], ["y"], "softmax", [attr_int("axis", -1)]),
    ]
    graph = b"".join(f_bytes(1, n) for n in nodes) + f_str(2, "cnn")
    graph += b"".join(f_bytes(5, tensor(n, a)) for n, a in inits)
    graph += f_bytes(11, value_info("x", [1, 3, 16, 16]))
    graph += f_bytes(12, value_info("y", [1, 10]))
    model = f_int(1, 8) + f_str(2, "kiln examples/models/make_cnn.py")
    model += f_bytes(8, f_str(1, "") + f_int(2, 17)) + f_bytes(7, graph)
    with open(os.path.join(here, "cnn.onnx"), "wb") as fh:
        fh.write(model)
    x = rng.standard_normal((1, 3, 16, 16)).astype(np.float32)
    np.save(os.path.join(here, "cnn_input.npy"), x)


if __name__ == "__main__":
    main()
