"""bench/zoo_catalog.py: the model zoo of `bench/run --zoo`, free of any
framework import (the orchestrating process must stay small: its size would
leak into the measuring processes it starts).

Each entry: inputs (name -> (shape, dtype, generator)), whether it is small
enough for the interpreter's one-run output check, its source and how it
is exported. Every model is exported at each of OPSETS (13 decomposes
LayerNorm and GELU into primitive ops; 17 has LayerNormalization)."""

SEED = 20240601
OPSETS = (13, 17)
# Bump when zoo_models.py or the export settings change what is exported:
# the cached exports under BUILD/bench-models/zoo/ are then redone.
GEN_VERSION = "1"

IMG = {"x": ((1, 3, 224, 224), "float32", "normal")}
VOCAB = 8192
SEQ = 128


def _tv(note, inputs=IMG, small=False):
    return {"source": "torchvision", "inputs": inputs, "small": small, "note": note}


def _nn(note, inputs, small=False, dynamic=None):
    return {"source": "torch.nn", "inputs": inputs, "small": small, "note": note,
            "dynamic": dynamic or {}}


# name -> entry. "small" marks the models the interpreter and opencl check
# (one interpreter run measured at 0.1-12 s on 2 busy cores; ResNet-18, one
# of the others, took 25 s, and the largest need minutes;
# --zoo-check-all checks them too). The torchvision ones use
# weights=None (random initialisation) and their default constructor.
ZOO = {
    "resnet18": _tv("ResNet-18"),
    "resnet50": _tv("ResNet-50"),
    "resnext50_32x4d": _tv("ResNeXt-50 32x4d (grouped convs)"),
    "densenet121": _tv("DenseNet-121 (Concat-heavy)"),
    "googlenet": _tv("GoogLeNet (Inception v1), eval mode: no aux heads"),
    "inception_v3": _tv("Inception v3, 299x299, eval mode: no aux head",
                        {"x": ((1, 3, 299, 299), "float32", "normal")}),
    "squeezenet1_1": _tv("SqueezeNet 1.1", small=True),
    "shufflenet_v2_x1_0": _tv("ShuffleNetV2 x1.0 (channel shuffle: Reshape/Transpose)",
                              small=True),
    "mobilenet_v2": _tv("MobileNetV2 (depthwise convs)", small=True),
    "mobilenet_v3_small": _tv("MobileNetV3-small (HardSwish, squeeze-excite)", small=True),
    "mobilenet_v3_large": _tv("MobileNetV3-large", small=True),
    "efficientnet_b0": _tv("EfficientNet-B0 (SiLU, squeeze-excite)", small=True),
    "mnasnet1_0": _tv("MNASNet 1.0", small=True),
    "regnet_y_400mf": _tv("RegNetY-400MF (grouped convs, squeeze-excite)", small=True),
    "convnext_tiny": _tv("ConvNeXt-T (7x7 depthwise, LayerNorm, GELU)"),
    "vit_b_16": _tv("ViT-B/16 (12 layers, d=768, 197 tokens)"),
    "swin_t": _tv("Swin-T (shifted windows: Roll/Pad/Reshape)"),
    "lraspp_mobilenet_v3_large": _tv(
        "LR-ASPP MobileNetV3-large segmentation (21 classes; Resize to the input size); "
        "output 'out' only", small=True),
    "bert": _nn("BERT-style encoder: token + position embedding, 4 x nn.TransformerEncoderLayer "
                "(d=256, 4 heads, FFN 1024, GELU, post-norm), padding mask from the ids",
                {"ids": ((1, SEQ), "int64", "tokens")}, small=True),
    "gpt": _nn("GPT-style decoder: token embedding + learned positions sliced to the input "
               "length, causal mask sliced from a buffer by the sequence length (exported "
               "with a symbolic sequence dim), 4 pre-norm blocks d=256, 4 heads, tied LM head",
               {"ids": ((1, SEQ), "int64", "tokens")}, small=True, dynamic={"ids": {1: "seq"}}),
    "lstm": _nn("2-layer bidirectional LSTM, input 64, hidden 128, seq 32, batch-first, "
                "linear head on the last step",
                {"x": ((1, 32, 64), "float32", "normal")}, small=True),
    "gru": _nn("2-layer GRU, input 64, hidden 128, seq 32, batch-first, linear head on the "
               "last step", {"x": ((1, 32, 64), "float32", "normal")}, small=True),
}

# Where a symbolic dim of a model's inputs is bound at measuring time.
DIMS = {"seq": SEQ}
