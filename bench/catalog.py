"""bench/catalog.py: the benchmark's list of models and their inputs, free of
any framework import, so that the orchestrating process stays small (its
size would otherwise leak into the measuring processes it forks)."""

# name -> (input shapes, run on the interpreter, description). The
# interpreter takes 0.5-2.5 s per run on the three it runs here; the conv
# block, attention and SGEMM need 10-45 s for a single run, so they are left
# out rather than spend minutes on one correctness probe.
MODELS = {
    "eltwise": ({"x": (64, 65536)}, True, "elementwise chain"),
    "mlp": ({"x": (256, 512)}, True, "MLP 512-1024-512 + residual"),
    "convblock": ({"x": (4, 64, 56, 56)}, False, "2x (conv3x3 64, BN, ReLU)"),
    "layernorm": ({"x": (16, 256, 512)}, True, "LayerNorm + gated residual"),
    "layernorm13": ({"x": (16, 256, 512)}, True,
                    "the same, exported at opset 13 (LayerNorm written out in 9 nodes)"),
    "attention": ({"x": (2, 256, 512)}, False, "MHA 8 heads, d=512, T=256"),
    "resnet18": ({"x": (1, 3, 224, 224)}, False, "torchvision, random weights"),
    "mobilenet_v2": ({"x": (1, 3, 224, 224)}, False,
                     "torchvision, random weights; outputs ~1e-9, as torchvision's fan-out "
                     "init shrinks activations through the depthwise convs"),
    "resnet50": ({"x": (1, 3, 224, 224)}, False, "torchvision, random weights"),
    "sgemm": ({"a": (1024, 1024), "b": (1024, 1024)}, False, "1024^3 MatMul"),
}

SEED = 20240601
OPSET = 17  # kiln's loader reads 1-25; 17 is the newest torch 2.5's exporter knows well
# Models exported at another opset: where the exporter writes an operator
# out in primitive nodes, which kiln has to recognize.
OPSETS = {"layernorm13": 13}
