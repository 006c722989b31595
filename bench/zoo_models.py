"""bench/zoo_models.py: the zoo's models (listed in zoo_catalog.py) as eval-mode
PyTorch modules with fixed-seed random weights. The torchvision ones are
the library's own constructors with weights=None; the sequence models
(BERT- and GPT-style, LSTM, GRU) are small modules written here."""

import torch
from torch import nn
import torch.nn.functional as F

from zoo_catalog import SEED, VOCAB, ZOO


class Bert(nn.Module):
    """Token + learned position embedding, LayerNorm, 4 post-norm
    nn.TransformerEncoderLayer blocks; ids == 0 are padding (a key padding
    mask computed from the input, as BERT's attention mask)."""

    def __init__(self, d=256, heads=4, layers=4, ffn=1024, max_len=512):
        super().__init__()
        self.tok = nn.Embedding(VOCAB, d)
        self.pos = nn.Embedding(max_len, d)
        self.ln = nn.LayerNorm(d)
        layer = nn.TransformerEncoderLayer(d, heads, ffn, dropout=0.0, activation="gelu",
                                           batch_first=True)
        # No nested tensors: their fast path has no ONNX export.
        self.enc = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)

    def forward(self, ids):
        pos = torch.arange(ids.shape[1], device=ids.device).unsqueeze(0)
        h = self.ln(self.tok(ids) + self.pos(pos))
        return self.enc(h, src_key_padding_mask=ids == 0)


class GptBlock(nn.Module):
    """Pre-norm block: x + attn(ln(x)) with a causal mask, x + mlp(ln(x))."""

    def __init__(self, d, heads):
        super().__init__()
        self.h = heads
        self.ln1 = nn.LayerNorm(d)
        self.qkv = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)
        self.ln2 = nn.LayerNorm(d)
        self.fc = nn.Linear(d, 4 * d)
        self.out = nn.Linear(4 * d, d)

    def forward(self, x, causal):
        b, t, d = x.shape
        hd = d // self.h
        q, k, v = self.qkv(self.ln1(x)).split(d, dim=2)
        q = q.view(b, t, self.h, hd).transpose(1, 2)
        k = k.view(b, t, self.h, hd).transpose(1, 2)
        v = v.view(b, t, self.h, hd).transpose(1, 2)
        a = (q @ k.transpose(-2, -1)) * (hd ** -0.5)
        a = a.masked_fill(causal == 0, float("-inf"))
        y = (F.softmax(a, dim=-1) @ v).transpose(1, 2).reshape(b, t, d)
        x = x + self.proj(y)
        return x + self.out(F.gelu(self.fc(self.ln2(x))))


class Gpt(nn.Module):
    """GPT-2 shaped decoder: token embedding, learned positions for
    arange(T), the causal mask a slice [:T, :T] of a lower-triangular
    buffer, 4 blocks, final LayerNorm, LM head tied to the embedding.
    Exported with a symbolic sequence length, so the positions and the
    mask stay computed from the input's shape (Shape/Range/Slice)."""

    def __init__(self, d=256, heads=4, layers=4, max_len=256):
        super().__init__()
        self.tok = nn.Embedding(VOCAB, d)
        self.pos = nn.Embedding(max_len, d)
        self.blocks = nn.ModuleList(GptBlock(d, heads) for _ in range(layers))
        self.ln = nn.LayerNorm(d)
        self.head = nn.Linear(d, VOCAB, bias=False)
        self.head.weight = self.tok.weight
        self.register_buffer("mask", torch.tril(torch.ones(max_len, max_len))
                             .view(1, 1, max_len, max_len), persistent=False)

    def forward(self, ids):
        t = ids.shape[1]
        pos = torch.arange(0, t, dtype=torch.long, device=ids.device)
        x = self.tok(ids) + self.pos(pos)
        causal = self.mask[:, :, :t, :t]
        for blk in self.blocks:
            x = blk(x, causal)
        return self.head(self.ln(x))


class Recurrent(nn.Module):
    """nn.LSTM or nn.GRU (batch-first), then a linear head on the last
    step's output."""

    def __init__(self, cell, bidirectional):
        super().__init__()
        self.rnn = cell(64, 128, num_layers=2, batch_first=True, bidirectional=bidirectional)
        self.head = nn.Linear(128 * (2 if bidirectional else 1), 10)

    def forward(self, x):
        y, _ = self.rnn(x)
        return self.head(y[:, -1])


class SegOut(nn.Module):
    """torchvision's segmentation models return a dict; the export wants
    a tensor."""

    def __init__(self, m):
        super().__init__()
        self.m = m

    def forward(self, x):
        return self.m(x)["out"]


def _torchvision(name):
    import torchvision

    if name == "lraspp_mobilenet_v3_large":
        return SegOut(torchvision.models.segmentation.lraspp_mobilenet_v3_large(
            weights=None, weights_backbone=None))
    kw = {"init_weights": True} if name in ("googlenet", "inception_v3") else {}
    return getattr(torchvision.models, name)(weights=None, **kw)


BUILDERS = {
    "bert": Bert,
    "gpt": Gpt,
    "lstm": lambda: Recurrent(nn.LSTM, True),
    "gru": lambda: Recurrent(nn.GRU, False),
}


def build(name):
    """The eval-mode module for a zoo name, with its fixed-seed weights."""
    # The fused transformer fast path has no ONNX export; eager runs and
    # exports must take the same (decomposed) path.
    torch.backends.mha.set_fastpath_enabled(False)
    torch.manual_seed(SEED)
    m = BUILDERS[name]() if name in BUILDERS else _torchvision(name)
    assert name in ZOO
    m.eval()
    return m
