#!/usr/bin/env python3
"""tests/core/data/make_add_batch.py: writes add_batch.onnx, y = x + z with
x, z and y all f32[batch, 3] ('batch' a symbolic dim, as an export with
dynamic axes writes it), for tool_test.sh's checks of `kiln run` binding
symbolic dims from the arrays it is given.

The protobuf is encoded by hand (wire format only), so that it needs
nothing but Python; running it again writes the same bytes."""
import os


def varint(n):
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        out.append(b | (0x80 if n else 0))
        if not n:
            return bytes(out)


def field(num, payload):
    """A length-delimited field (strings, bytes, sub-messages)."""
    if isinstance(payload, str):
        payload = payload.encode()
    return varint(num << 3 | 2) + varint(len(payload)) + payload


def vfield(num, value):
    """A varint field."""
    return varint(num << 3) + varint(value)


def value_info(name):
    """ValueInfoProto: name, f32 tensor of shape [batch, 3]."""
    shape = field(1, field(2, "batch")) + field(1, vfield(1, 3))
    tensor = vfield(1, 1) + field(2, shape)
    return field(1, name) + field(2, field(1, tensor))


node = field(1, "x") + field(1, "z") + field(2, "y") + field(3, "add") + field(4, "Add")
graph = (field(1, node) + field(2, "add_batch") + field(11, value_info("x")) +
         field(11, value_info("z")) + field(12, value_info("y")))
model = vfield(1, 8) + field(8, field(1, "") + vfield(2, 13)) + field(7, graph)
here = os.path.dirname(os.path.abspath(__file__))
with open(os.path.join(here, "add_batch.onnx"), "wb") as f:
    f.write(model)
