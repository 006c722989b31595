"""bench/survey.py: architectures and export settings outside the zoo,
each once against ONNX Runtime: segmentation with dilated heads, video
(3-D convolutions), UNet and GAN upsampling (ConvTranspose), a vocoder
(1-D ConvTranspose, LeakyRelu), MaxViT (Einsum attention), recurrent
networks on batches, small and odd-width CNNs (RegNetX-1.6GF: 24
channels a group), GroupNorm and InstanceNorm blocks, a transformer
decoder with a causal mask and a memory, RMSNorm and SwiGLU written out,
a Conformer convolution module (GLU, 1-D depthwise of 31 taps),
DeepLabV3-ResNet50, an export with dynamic axes. The zoo (zoo.py) holds
the targets; this is the check for the cases a zoo tuned against would
miss. Most of them ran far behind ONNX Runtime or failed somewhere in
kiln when first tried; four (RegNetX-1.6GF to the Conformer module) came
from a breadth sweep where they did not, and stay as checks; the last two
from a later sweep where they did.

    BUILD/bench-venv/bin/python bench/survey.py --build-dir BUILD [NAME...]

Exports into BUILD/bench-models/survey/NAME/ (kept), then per model: ONNX
Runtime's median of 20 runs and kiln-cpu's (`kiln run --repeat 20`), both
on --threads threads (default 2), and the largest difference of kiln's
output from ONNX Runtime's relative to the largest output magnitude.
Prints a markdown table; with --write (the whole survey only) it also
becomes the survey section of bench/RESULTS.md, which `bench/run` keeps.
Unset OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE, as bench/run does."""

import argparse
import datetime
import os
import subprocess
import sys
import time

import numpy as np
import onnxruntime as ort
import torch
import torchvision
from torch import nn


def _blk(i, o):
    return nn.Sequential(nn.Conv2d(i, o, 3, padding=1), nn.BatchNorm2d(o), nn.ReLU(),
                         nn.Conv2d(o, o, 3, padding=1), nn.BatchNorm2d(o), nn.ReLU())


class UNet(nn.Module):
    """Three levels, 32 base channels, ConvTranspose 2x2 stride 2 up."""

    def __init__(self, c=32):
        super().__init__()
        self.d1, self.d2, self.d3, self.b = _blk(3, c), _blk(c, 2 * c), _blk(2 * c, 4 * c), _blk(4 * c, 8 * c)
        self.u3 = nn.ConvTranspose2d(8 * c, 4 * c, 2, 2)
        self.u2 = nn.ConvTranspose2d(4 * c, 2 * c, 2, 2)
        self.u1 = nn.ConvTranspose2d(2 * c, c, 2, 2)
        self.c3, self.c2, self.c1 = _blk(8 * c, 4 * c), _blk(4 * c, 2 * c), _blk(2 * c, c)
        self.o, self.p = nn.Conv2d(c, 2, 1), nn.MaxPool2d(2)

    def forward(self, x):
        a = self.d1(x)
        b = self.d2(self.p(a))
        c = self.d3(self.p(b))
        m = self.b(self.p(c))
        c = self.c3(torch.cat([self.u3(m), c], 1))
        b = self.c2(torch.cat([self.u2(c), b], 1))
        return self.o(self.c1(torch.cat([self.u1(b), a], 1)))


class DCGAN(nn.Module):
    """DCGAN's generator: a 100-d latent (1x1) up to 64x64 by ConvTranspose."""

    def __init__(self):
        super().__init__()
        layers, ch = [], [100, 512, 256, 128, 64]
        for i in range(4):
            layers += [nn.ConvTranspose2d(ch[i], ch[i + 1], 4, 1 if i == 0 else 2, 0 if i == 0 else 1,
                                          bias=False), nn.BatchNorm2d(ch[i + 1]), nn.ReLU()]
        self.n = nn.Sequential(*layers, nn.ConvTranspose2d(64, 3, 4, 2, 1, bias=False), nn.Tanh())

    def forward(self, x):
        return self.n(x)


class Vocoder(nn.Module):
    """A HiFi-GAN-like upsampler: 1-D ConvTranspose x8, x8, x2, LeakyRelu."""

    def __init__(self):
        super().__init__()
        a = lambda: nn.LeakyReLU(0.1)  # noqa: E731
        self.n = nn.Sequential(
            nn.Conv1d(80, 256, 7, padding=3), a(), nn.ConvTranspose1d(256, 128, 16, 8, 4), a(),
            nn.Conv1d(128, 128, 3, padding=1), a(), nn.ConvTranspose1d(128, 64, 16, 8, 4), a(),
            nn.Conv1d(64, 64, 3, padding=3, dilation=3), a(), nn.ConvTranspose1d(64, 32, 4, 2, 1), a(),
            nn.Conv1d(32, 1, 7, padding=3), nn.Tanh())

    def forward(self, x):
        return self.n(x)


class Style(nn.Module):
    """Johnson-style transfer net: InstanceNorm, nearest Upsample, 9x9 ends."""

    def __init__(self):
        super().__init__()

        def cl(i, o, k, s):
            return [nn.Conv2d(i, o, k, s, k // 2), nn.InstanceNorm2d(o, affine=True), nn.ReLU()]
        layers = cl(3, 32, 9, 1) + cl(32, 64, 3, 2) + cl(64, 128, 3, 2)
        for _ in range(3):
            layers += cl(128, 128, 3, 1)
        layers += [nn.Upsample(scale_factor=2, mode="nearest")] + cl(128, 64, 3, 1)
        layers += [nn.Upsample(scale_factor=2, mode="nearest")] + cl(64, 32, 3, 1)
        self.n = nn.Sequential(*layers, nn.Conv2d(32, 3, 9, 1, 4))

    def forward(self, x):
        return self.n(x)


class GNRes(nn.Module):
    """A diffusion-UNet-style residual of GroupNorm(32), SiLU, 3x3 conv, x4."""

    def __init__(self, c=128):
        super().__init__()
        self.n = nn.Sequential(*[nn.Sequential(nn.GroupNorm(32, c), nn.SiLU(), nn.Conv2d(c, c, 3, padding=1))
                                 for _ in range(4)])

    def forward(self, x):
        return x + self.n(x)


class Rnn(nn.Module):
    """nn.LSTM / nn.GRU, batch-first, every step's output."""

    def __init__(self, cell, bidirectional, layers, hidden, inp):
        super().__init__()
        self.r = getattr(nn, cell)(inp, hidden, layers, batch_first=True, bidirectional=bidirectional)

    def forward(self, x):
        return self.r(x)[0]


class TextCls(nn.Module):
    """Embedding, bidirectional LSTM, linear head on the last step."""

    def __init__(self):
        super().__init__()
        self.e, self.h = nn.Embedding(5000, 128), nn.Linear(512, 4)
        self.r = nn.LSTM(128, 256, batch_first=True, bidirectional=True)

    def forward(self, x):
        return self.h(self.r(self.e(x))[0][:, -1])


class Decoder(nn.Module):
    """nn.TransformerDecoder, 2 layers, causal mask, a learned 40-token memory."""

    def __init__(self):
        super().__init__()
        self.d = nn.TransformerDecoder(nn.TransformerDecoderLayer(256, 8, 1024, 0.0, batch_first=True), 2)
        self.mem = nn.Parameter(torch.randn(1, 40, 256))

    def forward(self, x):
        t = x.shape[1]
        mask = torch.triu(torch.full((t, t), float("-inf")), 1)
        return self.d(x, self.mem.expand(x.shape[0], -1, -1), tgt_mask=mask)


class RmsSwiGLU(nn.Module):
    """Two LLaMA-style blocks written out: RMSNorm as x * rsqrt(mean(x^2) + eps) * w,
    then a SwiGLU MLP (silu(x W1) * (x W3)) W2, residual."""

    def __init__(self, d=512):
        super().__init__()
        self.w = nn.Parameter(torch.ones(d))
        self.w1, self.w3 = nn.Linear(d, 4 * d, bias=False), nn.Linear(d, 4 * d, bias=False)
        self.w2 = nn.Linear(4 * d, d, bias=False)

    def forward(self, x):
        for _ in range(2):
            h = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * self.w
            x = x + self.w2(nn.functional.silu(self.w1(h)) * self.w3(h))
        return x


class ConformerConv(nn.Module):
    """A Conformer convolution module, 3 times: LayerNorm, pointwise Conv1d and GLU,
    depthwise Conv1d of 31 taps, BatchNorm, SiLU, pointwise Conv1d, residual."""

    def __init__(self, d=144):
        super().__init__()
        self.ln, self.pw1 = nn.LayerNorm(d), nn.Conv1d(d, 2 * d, 1)
        self.dw, self.bn = nn.Conv1d(d, d, 31, padding=15, groups=d), nn.BatchNorm1d(d)
        self.pw2 = nn.Conv1d(d, d, 1)

    def forward(self, x):
        for _ in range(3):
            h = nn.functional.glu(self.pw1(self.ln(x).transpose(1, 2)), dim=1)
            x = x + self.pw2(nn.functional.silu(self.bn(self.dw(h)))).transpose(1, 2)
        return x


class Out(nn.Module):
    """torchvision's segmentation models return a dict."""

    def __init__(self, m):
        super().__init__()
        self.m = m

    def forward(self, x):
        y = self.m(x)
        return y["out"] if isinstance(y, dict) else y


sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import zoo_report  # noqa: E402 - after the path set-up

BEGIN = "<!-- survey:begin - written by bench/survey.py --write; bench/run keeps it -->"
END = "<!-- survey:end -->"


def extract(md_path):
    """The survey section of md_path, markers included, or ''."""
    return zoo_report.extract(md_path, BEGIN, END)


tv, seg, vid = torchvision.models, torchvision.models.segmentation, torchvision.models.video
IMG = (1, 3, 224, 224)
# name -> (builder, input shape, opset, input kind)
SURVEY = {
    "deeplabv3_mobilenet_v3": (lambda: seg.deeplabv3_mobilenet_v3_large(
        weights=None, weights_backbone=None, aux_loss=False), (1, 3, 256, 256), 17, "f"),
    "fcn_resnet50": (lambda: seg.fcn_resnet50(weights=None, weights_backbone=None, aux_loss=False),
                     IMG, 17, "f"),
    "r3d_18": (lambda: vid.r3d_18(), (1, 3, 8, 112, 112), 17, "f"),
    "r2plus1d_18": (lambda: vid.r2plus1d_18(), (1, 3, 8, 112, 112), 13, "f"),
    "unet": (UNet, (1, 3, 128, 128), 17, "f"),
    "dcgan_b2": (DCGAN, (2, 100, 1, 1), 13, "f"),
    "vocoder": (Vocoder, (1, 80, 64), 17, "f"),
    "style_transfer": (Style, (1, 3, 256, 256), 17, "f"),
    "groupnorm_res13": (GNRes, (1, 128, 32, 32), 13, "f"),
    "maxvit_t": (lambda: tv.maxvit_t(), IMG, 17, "f"),
    "vit_b_32_op14": (lambda: tv.vit_b_32(), IMG, 14, "f"),
    "swin_v2_t": (lambda: tv.swin_v2_t(), (1, 3, 256, 256), 17, "f"),
    "lstm_512_b4": (lambda: Rnn("LSTM", False, 2, 512, 128), (4, 50, 128), 17, "f"),
    "gru_bi_b2": (lambda: Rnn("GRU", True, 1, 256, 80), (2, 100, 80), 13, "f"),
    "text_lstm_b2": (TextCls, (2, 60), 17, "i"),
    "shufflenet_v2_x0_5": (lambda: tv.shufflenet_v2_x0_5(), IMG, 13, "f"),
    "mnasnet0_5": (lambda: tv.mnasnet0_5(), IMG, 17, "f"),
    "mobilenet_v3_small_b2": (lambda: tv.mobilenet_v3_small(), (2, 3, 224, 224), 13, "f"),
    "efficientnet_b1": (lambda: tv.efficientnet_b1(), (1, 3, 240, 240), 17, "f"),
    "regnet_x_400mf": (lambda: tv.regnet_x_400mf(), IMG, 13, "f"),
    "resnet18_b4_160": (lambda: tv.resnet18(), (4, 3, 160, 160), 17, "f"),
    "regnet_x_1_6gf": (lambda: tv.regnet_x_1_6gf(), IMG, 17, "f"),
    "decoder_causal_b2": (Decoder, (2, 33, 256), 17, "f"),
    "rms_swiglu": (RmsSwiGLU, (1, 50, 512), 13, "f"),
    "conformer_conv": (ConformerConv, (1, 200, 144), 17, "f"),
    "deeplabv3_resnet50": (lambda: seg.deeplabv3_resnet50(
        weights=None, weights_backbone=None, aux_loss=False), IMG, 17, "f"),
    "resnet18_dynamic_b3": (lambda: tv.resnet18(), (3, 3, 112, 144), 13, "f"),
}
# Exported with these dynamic axes (symbolic dims): kiln run binds them
# from the input array it is given, as ONNX Runtime does.
DYNAMIC = {"resnet18_dynamic_b3": {0: "batch", 2: "height", 3: "width"}}


def export(name, d, x):
    build, _, opset, _ = SURVEY[name]
    path = os.path.join(d, "model.onnx")
    if not os.path.exists(path):
        torch.manual_seed(0)
        with torch.no_grad():
            dyn = {"x": DYNAMIC[name]} if name in DYNAMIC else None
            torch.onnx.export(Out(build().eval()), (x,), path, opset_version=opset,
                              input_names=["x"], output_names=["y"], dynamic_axes=dyn,
                              dynamo=False)
    return path


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build-dir", default=os.environ.get("KILN_BUILD_DIR", "build"))
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--write", action="store_true",
                    help="also write the survey section of bench/RESULTS.md")
    ap.add_argument("names", nargs="*", help="a part of the survey (default: all)")
    a = ap.parse_args()
    if a.write and a.names:
        ap.error("--write takes the whole survey")
    rows = []
    torch.backends.mha.set_fastpath_enabled(False)  # exportable attention
    kiln = os.path.join(a.build_dir, "tools", "kiln")
    names = a.names or list(SURVEY)
    def row(line):
        rows.append(line)
        print(line, flush=True)
    row("| model | opset | input | ONNX Runtime ms | kiln-cpu ms | ORT / kiln | rel. diff |")
    row("| --- | --- | --- | --- | --- | --- | --- |")
    for name in names:
        _, shape, opset, kind = SURVEY[name]
        d = os.path.join(a.build_dir, "bench-models", "survey", name)
        os.makedirs(d, exist_ok=True)
        torch.manual_seed(1)
        x = torch.randint(0, 5000, shape) if kind == "i" else torch.randn(*shape)
        try:
            path = export(name, d, x)
        except Exception as e:  # an export torch refuses is the survey's news too
            row(f"| {name} | {opset} | {list(shape)} | export failed: {str(e)[:80]} | | | |")
            continue
        np.save(os.path.join(d, "x.npy"), x.numpy())
        so = ort.SessionOptions()
        so.intra_op_num_threads, so.inter_op_num_threads = a.threads, 1
        s = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
        feed = {"x": x.numpy()}
        ref = s.run(None, feed)[0]
        for _ in range(3):
            s.run(None, feed)
        ts = []
        for _ in range(20):
            t = time.perf_counter()
            s.run(None, feed)
            ts.append(time.perf_counter() - t)
        om = float(np.median(ts)) * 1e3
        out = os.path.join(d, "out")
        r = subprocess.run([kiln, "run", path, "--backend", "cpu", "--threads", str(a.threads),
                            "--input", f"x={d}/x.npy", "--repeat", "20", "--output-dir", out],
                           capture_output=True, text=True, timeout=1200)
        km = [float(line.split("median")[1].split()[0]) for line in (r.stdout + r.stderr).splitlines()
              if "median" in line]
        if r.returncode or not km:
            msg = (r.stdout + r.stderr).strip().splitlines()[-1:] or ["no output"]
            row(f"| {name} | {opset} | {list(shape)} | {om:.2f} | failed: {msg[0][:80]} | | |")
            continue
        y = np.load(os.path.join(out, "y.npy"))
        diff = float(np.max(np.abs(y - ref)) / (np.max(np.abs(ref)) + 1e-30))
        row(f"| {name} | {opset} | {list(shape)} | {om:.2f} | {km[0]:.2f} | {om / km[0]:.2f}x | {diff:.1e} |")
    if a.write:
        rev = subprocess.run(["git", "-C", os.path.dirname(os.path.abspath(__file__)), "describe",
                              "--always", "--dirty"], capture_output=True, text=True).stdout.strip()
        when = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
        head = [BEGIN, "## Outside the zoo (`bench/survey.py`)", "",
                f"Architectures and export settings the zoo does not hold (bench/README.md), each once "
                f"on {a.threads} threads against ONNX Runtime {ort.__version__}; one run, {when}, kiln "
                f"{rev} ({a.build_dir}). \"rel. diff\": kiln's largest output difference from ONNX "
                f"Runtime's over the largest output magnitude.", ""]
        md = os.path.join(os.path.dirname(os.path.abspath(__file__)), "RESULTS.md")
        zoo_report.splice(md, "\n".join(head + rows + ["", END]), BEGIN, END)
    return 0


if __name__ == "__main__":
    sys.exit(main())
