"""bench/models.py: the benchmark models (listed in catalog.py) as PyTorch
modules, one builder per model, each seeded so that the ONNX export (bench.py gen) and the PyTorch
eager runner (bench.py torch) rebuild the very same weights in separate
processes without shipping a checkpoint between them."""

import math

import torch
from torch import nn
import torch.nn.functional as F

from catalog import OPSET, OPSETS, SEED  # noqa: F401 - re-exported for bench.py gen


class Eltwise(nn.Module):
    """y = exp(-gelu(relu(sigmoid(tanh(1.5x+0.5)) - 0.6))) * x + sin(x)."""

    def forward(self, x):
        t = torch.sigmoid(torch.tanh(1.5 * x + 0.5))
        g = F.gelu(torch.relu(t - 0.6))
        return torch.exp(-g) * x + torch.sin(x)


class Mlp(nn.Module):
    """x + fc2(relu(fc1(x))), 512 -> 1024 -> 512."""

    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(512, 1024)
        self.fc2 = nn.Linear(1024, 512)

    def forward(self, x):
        return x + self.fc2(torch.relu(self.fc1(x)))


class ConvBlock(nn.Module):
    """Twice: 3x3 conv 64->64 (pad 1, no bias), batch norm, ReLU."""

    def __init__(self):
        super().__init__()
        layers = []
        for _ in range(2):
            bn = nn.BatchNorm2d(64)
            # Non-trivial running statistics, so that batch norm does work.
            with torch.no_grad():
                bn.running_mean.uniform_(-0.5, 0.5)
                bn.running_var.uniform_(0.5, 1.5)
                bn.weight.uniform_(0.5, 1.5)
                bn.bias.uniform_(-0.5, 0.5)
            layers += [nn.Conv2d(64, 64, 3, padding=1, bias=False), bn, nn.ReLU()]
        self.body = nn.Sequential(*layers)

    def forward(self, x):
        return self.body(x)


class GatedLayerNorm(nn.Module):
    """h = LN(x); x + tanh(h*g1+b1) * sigmoid(h*g2+b2)."""

    def __init__(self, d=512):
        super().__init__()
        self.ln = nn.LayerNorm(d)
        self.g1 = nn.Parameter(torch.randn(d) * 0.5 + 1.0)
        self.b1 = nn.Parameter(torch.randn(d) * 0.1)
        self.g2 = nn.Parameter(torch.randn(d) * 0.5 + 1.0)
        self.b2 = nn.Parameter(torch.randn(d) * 0.1)

    def forward(self, x):
        h = self.ln(x)
        return x + torch.tanh(h * self.g1 + self.b1) * torch.sigmoid(h * self.g2 + self.b2)


class Attention(nn.Module):
    """Multi-head self-attention: one QKV projection, softmax(QK^T/sqrt(d))V,
    output projection. Written out by hand (not nn.MultiheadAttention) so
    that the exported graph is plain MatMul/Softmax/Transpose."""

    def __init__(self, d=512, heads=8):
        super().__init__()
        self.d, self.h = d, heads
        self.qkv = nn.Linear(d, 3 * d)
        self.out = nn.Linear(d, d)

    def forward(self, x):
        b, t, d = x.shape
        hd = d // self.h
        qkv = self.qkv(x).reshape(b, t, 3, self.h, hd).permute(2, 0, 3, 1, 4)
        q, k, v = qkv[0], qkv[1], qkv[2]
        a = torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(hd), dim=-1)
        y = (a @ v).transpose(1, 2).reshape(b, t, d)
        return self.out(y)


class Sgemm(nn.Module):
    """C = A @ B, both operands inputs (an ONNX MatMul)."""

    def forward(self, a, b):
        return a @ b


def _torchvision(name):
    import torchvision

    return getattr(torchvision.models, name)(weights=None)


BUILDERS = {
    "eltwise": Eltwise,
    "mlp": Mlp,
    "convblock": ConvBlock,
    "layernorm": GatedLayerNorm,
    "layernorm13": GatedLayerNorm,
    "attention": Attention,
    "resnet18": lambda: _torchvision("resnet18"),
    "mobilenet_v2": lambda: _torchvision("mobilenet_v2"),
    "resnet50": lambda: _torchvision("resnet50"),
    "sgemm": Sgemm,
}


def build(name):
    """The eval-mode module for a model name, with its fixed-seed weights."""
    torch.manual_seed(SEED)
    m = BUILDERS[name]()
    m.eval()
    return m
