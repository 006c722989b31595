"""bench/report.py: turns bench.py's results dict into bench/RESULTS.md (the
table, kiln's speedups as ratios, the targets met or not) and a bar chart.
Kept apart from the measuring so the report can be redone from
results.json without measuring again: python bench/report.py results.json."""

import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import partition  # noqa: E402 - after the path set-up
import quant  # noqa: E402

# bench/survey.py's markers (that module imports torch: not imported here)
SURVEY_BEGIN = "<!-- survey:begin - written by bench/survey.py --write; bench/run keeps it -->"
SURVEY_END = "<!-- survey:end -->"
import zoo_report  # noqa: E402

# The targets of the benchmark issue: kiln (cpu) median vs ONNX Runtime's.
SPEEDUP_TARGETS = {"eltwise": 1.5, "layernorm": 1.5, "layernorm13": 1.5, "mlp": 1.2,
                   "convblock": 1.0, "attention": 1.2, "resnet18": 1.0, "mobilenet_v2": 1.0,
                   "resnet50": 1.0}
SGEMM_TARGET = 0.90        # of numpy/OpenBLAS GFLOP/s
COMPILE_TARGET_MS = 3000.0  # ResNet-50, load + compile
MAIN = "kiln-cpu"           # the column the targets judge
RUNS_WANTED = 50            # fewer (a slow backend over its time budget) is flagged


def _ms(res):
    return res.get("median_ms") if isinstance(res, dict) else None


def _cell(res):
    if not res:
        return "-"
    if "median_ms" in res:
        s = f"{res['median_ms']:.3f} ({res['min_ms']:.3f}-{res['max_ms']:.3f})"
        if res.get("runs", 0) < RUNS_WANTED:
            s += f" [{res['runs']} runs]"
        chk = res.get("check")
        if chk and not chk["ok"]:
            s += " **WRONG**"
        return s
    if "skipped" in res:
        return f"skipped (1 run: {res['probe_ms']:.0f})" if "probe_ms" in res else "skipped"
    return "error (see notes)"


def _gflops(res, flop):
    ms = _ms(res)
    return flop / (ms * 1e6) if ms else None


def columns(results):
    cols = []
    for m in results["models"].values():
        for k in m["fw"]:
            if k not in cols:
                cols.append(k)
    order = ["kiln-cpu", "kiln-opencl", "kiln-interpreter", "ort", "torch", "numpy"]
    return sorted(cols, key=lambda k: order.index(k) if k in order else 99)


NAMES = {"ort": "ONNX Runtime", "torch": "PyTorch eager", "numpy": "numpy (OpenBLAS)"}


def targets(results):
    rows = []
    ms = results["models"]
    for name, t in SPEEDUP_TARGETS.items():
        if name not in ms:
            continue
        k, o = _ms(ms[name]["fw"].get(MAIN)), _ms(ms[name]["fw"].get("ort"))
        chk = ms[name]["fw"].get(MAIN, {}).get("check", {"ok": True})
        if k and o:
            ratio = o / k
            met = ratio >= t and chk["ok"]
            got = f"{ratio:.2f}x" + ("" if chk["ok"] else " (outputs wrong)")
        else:
            met, got = False, "no kiln-cpu result"
        rows.append((f"{name}: kiln-cpu >= {t:.1f}x ORT", got, met))
    if "sgemm" in ms:
        flop = 2.0 * 1024 ** 3
        k, n = _gflops(ms["sgemm"]["fw"].get(MAIN, {}), flop), \
            _gflops(ms["sgemm"]["fw"].get("numpy", {}), flop)
        if k and n:
            rows.append(("sgemm: kiln-cpu >= 90% of OpenBLAS GFLOP/s",
                         f"{k / n * 100:.0f}% ({k:.1f} vs {n:.1f} GFLOP/s)", k / n >= SGEMM_TARGET))
        else:
            rows.append(("sgemm: kiln-cpu >= 90% of OpenBLAS GFLOP/s", "no result", False))
    if "resnet50" in ms:
        r = ms["resnet50"]["fw"].get(MAIN, {})
        if "compile_ms" in r:
            c = r["compile_ms"] + r.get("load_ms", 0.0)
            rows.append(("resnet50: kiln-cpu load + compile < 3 s", f"{c / 1e3:.2f} s",
                         c < COMPILE_TARGET_MS))
        else:
            rows.append(("resnet50: kiln-cpu load + compile < 3 s", "no result", False))
    return rows


def write(results, md_path, png_path):
    cols = columns(results)
    mi = results["machine"]
    L = []
    L.append("# kiln benchmark results\n")
    L.append("Written by `bench/run` (see bench/README.md); numbers from one run on one machine.\n")
    L.append(f"- date: {mi['date']}")
    L.append(f"- machine: {mi['cpu']}, {mi['cores']} cores; {mi['os']}")
    L.append(f"- threads per framework: {results['threads']}; {results['warmup']} warm-up runs, "
             f"then {results['runs']} timed runs each (median, min-max in ms)")
    L.append("- versions: " + "; ".join(f"{k} {mi[k]}" for k in (
        "kiln", "cc", "llvm", "python", "numpy", "onnx", "onnxruntime", "torch",
        "torchvision", "matplotlib")))
    L.append("- ONNX Runtime: CPUExecutionProvider, ORT_ENABLE_ALL, intra_op_num_threads = "
             "threads; PyTorch: eager, inference_mode, set_num_threads(threads)")
    L.append("- numpy SGEMM runs with OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE removed from its "
             "environment (env -u): this machine sets both, and they halve OpenBLAS's SGEMM")
    L.append("- peak memory: peak RSS (VmHWM) of each framework's own measuring process (Python "
             "runners include the interpreter and the framework's import)")
    la = results.get("loadavg")
    if la:
        L.append(f"- load average (1, 5, 15 min) at start {la[0][0]:.2f} {la[0][1]:.2f} "
                 f"{la[0][2]:.2f}, at end {la[1][0]:.2f} {la[1][1]:.2f} {la[1][2]:.2f}: "
                 "above ~0.1 other work shared the cores and the spreads widen")
    L.append(f"- whole run: {results.get('elapsed_s', 0):.0f} s\n")

    L.append("## Latency (ms)\n")
    L.append("| model | " + " | ".join(NAMES.get(c, c) for c in cols) + " |")
    L.append("|---" * (len(cols) + 1) + "|")
    for name, m in results["models"].items():
        L.append(f"| {name} | " + " | ".join(_cell(m["fw"].get(c)) for c in cols) + " |")

    kcols = [c for c in cols if c.startswith("kiln-")]
    timed = [c for c in kcols if any(_ms(m["fw"].get(c)) for m in results["models"].values())]
    peers = [c for c in cols if not c.startswith("kiln-")]
    L.append("\n## kiln's speedup over each peer (peer median / kiln median; > 1 = kiln "
             "faster)\n")
    if not timed:
        L.append("No kiln backend produced a time in this run (see the notes).")
    if timed:
        L.append("| model | " + " | ".join(f"{k} vs {NAMES.get(p, p)}" for k in timed
                                           for p in peers) + " |")
        L.append("|---" * (len(timed) * len(peers) + 1) + "|")
    for name, m in (results["models"] if timed else {}).items():
        cells = []
        for k in timed:
            for p in peers:
                a, b = _ms(m["fw"].get(k)), _ms(m["fw"].get(p))
                cells.append(f"{b / a:.2f}x" if a and b else "-")
        L.append(f"| {name} | " + " | ".join(cells) + " |")

    L.append("\n## Compile time and peak memory\n")
    L.append("kiln: load = ONNX import, compile = kiln_compile; ORT: session creation.\n")
    L.append("| model | " + " | ".join(
        f"{c} load+compile ms" for c in kcols) + " | ORT session ms | " + " | ".join(
        f"{NAMES.get(c, c)} peak MB" for c in cols) + " |")
    L.append("|---" * (len(kcols) + len(cols) + 2) + "|")
    for name, m in results["models"].items():
        cells = []
        for c in kcols:
            r = m["fw"].get(c, {})
            cells.append(f"{r['load_ms']:.0f} + {r['compile_ms']:.0f}" if "compile_ms" in r
                         else "-")
        o = m["fw"].get("ort", {})
        cells.append(f"{o['compile_ms']:.0f}" if "compile_ms" in o else "-")
        for c in cols:
            r = m["fw"].get(c, {})
            cells.append(f"{r['peak_rss_mb']:.0f}" if "median_ms" in r else "-")
        L.append(f"| {name} | " + " | ".join(cells) + " |")

    if "sgemm" in results["models"]:
        L.append("\n## SGEMM 1024 x 1024 x 1024 (GFLOP/s, from the median)\n")
        for c in cols:
            g = _gflops(results["models"]["sgemm"]["fw"].get(c, {}), 2.0 * 1024 ** 3)
            if g:
                L.append(f"- {NAMES.get(c, c)}: {g:.1f} GFLOP/s")

    L.append("\n## Targets\n")
    L.append("| target | got | met |")
    L.append("|---|---|---|")
    for t, got, met in targets(results):
        L.append(f"| {t} | {got} | {'met' if met else 'NOT met'} |")

    L.append("\n## Correctness\n")
    L.append("Every output is compared with ONNX Runtime's: |got - ort| <= atol * max|ort| "
             "+ rtol * |ort|, rtol 1e-3, atol 1e-4 (atol relative to the output's range: "
             "the random-weight networks' outputs span 1e-9 to 1e2).\n")
    for name, m in results["models"].items():
        for k, r in m["fw"].items():
            if "check" in r:
                c = r["check"]
                L.append(f"- {name} / {k}: " + ("agrees" if c["ok"] else "**DISAGREES**: "
                                                 + "; ".join(c["detail"]))
                         + f" (max abs err {c['max_abs']:.3g})")

    L.append("\n## Notes\n")
    for name, m in results["models"].items():
        for k, r in m["fw"].items():
            if "skipped" in r:
                L.append(f"- {name} / {k}: skipped: {r['skipped']}")
            elif "error" in r:
                msg = r.get("message", "")
                L.append(f"- {name} / {k}: {r['error']}" + (f": {msg}" if msg else ""))
    for n in results["notes"]:
        if not n.startswith("OUTPUT MISMATCH"):
            L.append(f"- {n}")
    L.append("\n## Models\n")
    for name, m in results["models"].items():
        ops = ", ".join(f"{k} x{v}" for k, v in sorted(m["ops"].items()))
        shapes = ", ".join(f"{k}{v}" for k, v in m["shapes"].items())
        L.append(f"- {name} ({m['note']}; {shapes}): {ops}")
    L.append(f"\n![latency chart]({os.path.basename(png_path)})")
    # The zoo's section comes from its own, separate run (bench/run --zoo).
    zoo = zoo_report.extract(md_path)
    if zoo:
        L += ["", zoo]
    # So does the partition section (bench/run --partition).
    part = partition.extract(md_path)
    if part:
        L += ["", part]
    # And the quantization section (bench/run --quant).
    qs = quant.extract(md_path)
    if qs:
        L += ["", qs]
    # And the survey's (bench/survey.py --write).
    sv = zoo_report.extract(md_path, SURVEY_BEGIN, SURVEY_END)
    if sv:
        L += ["", sv]
    with open(md_path, "w") as f:
        f.write("\n".join(L) + "\n")
    chart(results, cols, png_path)


def chart(results, cols, png_path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = list(results["models"])
    cols = [c for c in cols if any(_ms(results["models"][n]["fw"].get(c)) for n in names)]
    colors = {"kiln-cpu": "tab:orange", "kiln-opencl": "tab:brown",
              "kiln-interpreter": "tab:gray", "ort": "tab:blue", "torch": "tab:red",
              "numpy": "tab:purple"}
    fig, ax = plt.subplots(figsize=(max(8, 1.3 * len(names)), 5))
    w = 0.8 / max(1, len(cols))
    for i, c in enumerate(cols):
        xs, ys, lo, hi = [], [], [], []
        for j, n in enumerate(names):
            r = results["models"][n]["fw"].get(c, {})
            if _ms(r):
                xs.append(j + (i - (len(cols) - 1) / 2) * w)
                ys.append(r["median_ms"])
                lo.append(r["median_ms"] - r.get("p25_ms", r["median_ms"]))
                hi.append(r.get("p75_ms", r["median_ms"]) - r["median_ms"])
        # Whiskers: the interquartile range.
        ax.bar(xs, ys, w, yerr=[lo, hi], capsize=2, label=NAMES.get(c, c),
               color=colors.get(c))
    ax.set_yscale("log")
    ax.set_xticks(range(len(names)))
    ax.set_xticklabels(names, rotation=20)
    ax.set_ylabel("median latency, ms (log scale; lower is better)")
    ax.set_title(f"kiln vs peers - {results['machine']['cpu']}, {results['threads']} threads")
    ax.legend()
    fig.tight_layout()
    fig.savefig(png_path, dpi=110)
    plt.close(fig)


if __name__ == "__main__":
    with open(sys.argv[1]) as f:
        res = json.load(f)
    here = os.path.dirname(os.path.abspath(__file__))
    write(res, os.path.join(here, "RESULTS.md"), os.path.join(here, "results.png"))
