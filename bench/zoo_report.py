"""bench/zoo_report.py: the zoo section of bench/RESULTS.md and bench/zoo.png
from zoo.py's results dict. The section sits between two marker comments,
so `bench/run --zoo` replaces only it and `bench/run` (report.py) keeps it.
Inside it, the table of whole `kiln compile` processes has markers of its
own, so `bench/run --zoo --zoo-compile-only` replaces only that table.
Redo either from the raw numbers without measuring:
python bench/zoo_report.py BUILD/bench-out/zoo-results.json (whole section)
python bench/zoo_report.py BUILD/bench-out/zoo-compile-results.json (the table)"""

import json
import math
import os
import sys

BEGIN = "<!-- zoo:begin - written by bench/run --zoo; bench/run keeps it -->"
END = "<!-- zoo:end -->"
CBEGIN = ("<!-- zoo-compile:begin - written by bench/run --zoo and by "
          "--zoo-compile-only, which keeps the rest of the zoo section -->")
CEND = "<!-- zoo-compile:end -->"

# Issue 13's targets for the whole `kiln compile MODEL --backend cpu` process
# against ORT's InferenceSession creation on the same model.
COLD_MAX_MS = 1000.0  # on every zoo model
COLD_RATIO = 3.0      # geometric mean over the zoo
CACHED_RATIO = 1.0    # geometric mean over the zoo


def extract(md_path, begin=BEGIN, end=END):
    """The section of md_path between the markers (the zoo's by default),
    markers included, or ''."""
    try:
        with open(md_path) as f:
            text = f.read()
    except OSError:
        return ""
    b, e = text.find(begin), text.find(end)
    return text[b:e + len(end)] if b >= 0 and e > b else ""


def splice(md_path, block, begin=BEGIN, end=END):
    """Puts block in place of md_path's section between the markers (the
    zoo's by default; appended if none)."""
    try:
        with open(md_path) as f:
            text = f.read()
    except OSError:
        text = ""
    b, e = text.find(begin), text.find(end)
    if b >= 0 and e > b:
        text = text[:b] + block + text[e + len(end):]
    else:
        text = text.rstrip("\n") + ("\n\n" if text else "") + block + "\n"
    with open(md_path, "w") as f:
        f.write(text)


def _read(md_path):
    try:
        with open(md_path) as f:
            return f.read()
    except OSError:
        return ""


def extract_compile(md_path):
    """The compile table of md_path's zoo section, markers included, or ''."""
    zoo = extract(md_path)
    b, e = zoo.find(CBEGIN), zoo.find(CEND)
    return zoo[b:e + len(CEND)] if b >= 0 and e > b else ""


def splice_compile(md_path, block):
    """Puts block in place of the compile table of md_path's zoo section;
    into the section (before its agreement table) if it has none, and as a
    zoo section of its own if md_path has none."""
    text = _read(md_path)
    b, e = text.find(BEGIN), text.find(END)
    if b >= 0 and e > b:
        zoo = text[b:e + len(END)]
        cb, ce = zoo.find(CBEGIN), zoo.find(CEND)
        if cb >= 0 and ce > cb:
            zoo = zoo[:cb] + block + zoo[ce + len(CEND):]
        else:
            at = zoo.find("\n### Agreement with ONNX Runtime")
            at = at if at >= 0 else zoo.find(END)
            zoo = zoo[:at] + "\n" + block + "\n" + zoo[at:]
        text = text[:b] + zoo + text[e + len(END):]
    else:
        zoo = "\n".join([BEGIN, "", "## Model zoo (`bench/run --zoo`)", "",
                         "Only the compile table so far; `bench/run --zoo` measures the rest.",
                         "", block, END])
        text = text.rstrip("\n") + ("\n\n" if text else "") + zoo + "\n"
    with open(md_path, "w") as f:
        f.write(text)


def _esc(s):
    return str(s).replace("|", "\\|").replace("\n", " ")


def _ms(res):
    return res.get("median_ms") if isinstance(res, dict) else None


def _ok(res):
    return isinstance(res, dict) and res.get("check", {"ok": True})["ok"]


def geomean(xs):
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else None


def _fmt_ms(res, runs_wanted):
    if not res:
        return "-"
    if "median_ms" in res:
        s = f"{res['median_ms']:.2f}"
        if res.get("runs", 0) < runs_wanted:
            s += f" [{res['runs']} runs]"
        if not _ok(res):
            s += " **WRONG**"
        return s
    if "skipped" in res:
        return "skipped"
    return "**" + _esc(res.get("error", "error").split(" (")[0]) + "**"


def ratios(results):
    """Per model-opset: speed_2t, speed_1t (ORT / kiln, > 1 = kiln faster),
    compile (kiln load + compile / ORT session creation) and rss (kiln peak
    / ORT peak), each None where a side has no number. Speed counts only
    where kiln's outputs agree with ORT's."""
    hi = results["threads"][0]
    out = {}
    for key, m in results["models"].items():
        fw = m["fw"]
        k2, k1 = fw.get(f"kiln-cpu-{hi}t", {}), fw.get("kiln-cpu-1t", {})
        o2, o1 = fw.get(f"ort-{hi}t", {}), fw.get("ort-1t", {})
        d = {}
        d["speed_2t"] = (_ms(o2) / _ms(k2)) if _ms(o2) and _ms(k2) and _ok(k2) else None
        d["speed_1t"] = (_ms(o1) / _ms(k1)) if _ms(o1) and _ms(k1) and _ok(k1) else None
        kc = k2.get("load_ms", 0.0) + k2["compile_ms"] if "compile_ms" in k2 else None
        d["compile"] = kc / o2["compile_ms"] if kc and o2.get("compile_ms") else None
        d["rss"] = (k2["peak_rss_mb"] / o2["peak_rss_mb"]
                    if _ms(k2) and _ms(o2) else None)
        out[key] = d
    return out


RATIOS = [
    ("speed_2t", "latency, 2 threads: ORT median / kiln-cpu median (> 1 = kiln faster)", min),
    ("speed_1t", "latency, 1 thread: ORT median / kiln-cpu median (> 1 = kiln faster)", min),
    ("compile", "kiln load + compile / ORT InferenceSession creation (> 1 = kiln slower)", max),
    ("rss", "peak RSS kiln / ORT, 2-thread processes (> 1 = kiln uses more)", max),
]


def _check_cell(res):
    if not res:
        return "-"
    if "check" in res:
        c = res["check"]
        s = ("ok" if c["ok"] else "**WRONG**") + f" {c['max_abs']:.1e} / {c.get('max_rel', 0):.1e}"
        return s
    if "skipped" in res:
        return "skipped"
    if "error" in res:
        return "**" + _esc(res["error"].split(" (")[0]) + "**"
    return "-"


def compile_rows(results):
    """Per model-opset: cold and cached whole-process `kiln compile` ms, ORT
    session creation ms, and the two ratios to it; None where missing."""
    hi = results["threads"][0]
    rows = {}
    for key, m in results["models"].items():
        cp = m.get("compile_process") or {}
        ort = m["fw"].get(f"ort-{hi}t", {}).get("compile_ms")
        cold, cached = cp.get("cold_ms"), cp.get("cached_ms")
        rows[key] = {"cold": cold, "cached": cached, "ort": ort,
                     "cold_r": cold / ort if cold and ort else None,
                     "cached_r": cached / ort if cached and ort else None}
    return rows


def _yes(ok):
    return "-" if ok is None else ("yes" if ok else "**no**")


def _met(ok):
    return "**met**" if ok else "**missed**"


def compile_block(results):
    """The compile table, between its markers (splice_compile's unit)."""
    hi = results["threads"][0]
    mi = results["machine"]
    n = results.get("compile_repeats", 3)
    rows = compile_rows(results)
    total = len(rows)
    L = [CBEGIN, "", "### kiln compile (whole process) against ORT session creation", ""]
    la = results.get("loadavg")
    L.append("Measured " + mi["date"] + (
        " by a compile-only run (`bench/run --zoo --zoo-compile-only`; the other tables of "
        "this section come from the last full run)" if results.get("compile_only")
        else " in this zoo run") + f"; kiln {mi['kiln']}; ONNX Runtime {mi['onnxruntime']}"
        + (f"; load average {la[0][0]:.2f} at start, {la[1][0]:.2f} at end (1 min)" if la
           else "") + ".\n")
    cold_how = ("with `--no-cache`, each run with a fresh, empty `DIR`"
                if results.get("no_cache_option") else
                "this build's `kiln compile` has no `--no-cache` yet, so a compile into a "
                "fresh, empty `DIR` each run (which may write the cache)")
    L.append(f"Per model: the whole `KILN_CACHE_DIR=DIR kiln compile MODEL --backend cpu "
             f"--threads {hi}` process (start-up, plugin discovery, ONNX load, compile, exit; "
             "`--dim` for a symbolic dimension), timed by the Python driver with "
             "`time.perf_counter` around `subprocess.run`. **Cold**: " + cold_how
             + "; **cached**: one compile fills a fresh `DIR`, then the same command hits "
             f"it. Median of {n} cold and {n} cached runs. **ORT session**: "
             f"`InferenceSession(...)` creation inside ORT's {hi}-thread measuring process "
             "(ORT_ENABLE_ALL; the Python and onnxruntime import not counted), one process. "
             f"Targets (issue 13): cold <= {COLD_RATIO:g}x ORT as a geometric mean over the "
             f"zoo and under {COLD_MAX_MS / 1000:g} s on every zoo model; cached <= "
             f"{CACHED_RATIO:g}x ORT as a geometric mean. The per-model ratio columns say "
             "whether that model alone is within the geometric-mean target.\n")
    L.append(f"| model | opset | cold ms | cached ms | ORT session ms | cold/ORT | cached/ORT | "
             f"cold < {COLD_MAX_MS / 1000:g} s | cold/ORT <= {COLD_RATIO:g}x | "
             f"cached/ORT <= {CACHED_RATIO:g}x |")
    L.append("|---" * 10 + "|")
    problems, empty, filled = [], [], 0
    for key, m in results["models"].items():
        d, cp = rows[key], m.get("compile_process") or {}
        if "export_error" in m["manifest"]:
            L.append(f"| {m['name']} | {m['opset']} | export failed (see notes) |"
                     + " |" * 7)
            continue
        for k in ("cold", "cached"):
            if k + "_error" in cp and not cp[k + "_error"].startswith("not measured"):
                problems.append(f"- {key}: {k} compile failed: {_esc(cp[k + '_error'])}")
        if "fill_ms" in cp:
            filled += 1
            if not cp.get("cache_files"):
                empty.append(key)

        def cell(k):
            if d[k] is not None:
                return f"{d[k]:.0f}"
            return "**failed**" if k + "_error" in cp else "-"
        failed = "cold_error" in cp
        L.append(f"| {m['name']} | {m['opset']} | " + " | ".join([
            cell("cold"), cell("cached"), f"{d['ort']:.0f}" if d["ort"] else "-",
            f"{d['cold_r']:.2f}x" if d["cold_r"] else "-",
            f"{d['cached_r']:.2f}x" if d["cached_r"] else "-",
            _yes(d["cold"] < COLD_MAX_MS if d["cold"] else (False if failed else None)),
            _yes(d["cold_r"] <= COLD_RATIO if d["cold_r"] else None),
            _yes(d["cached_r"] <= CACHED_RATIO if d["cached_r"] else None)]) + " |")

    L.append("\nGeometric means and worst model, over the model-opsets with numbers on both "
             "sides:\n")
    L.append("| ratio | opset | geomean | worst | models | target |")
    L.append("|---|---|---|---|---|---|")
    for rk, label, limit in (("cold_r", "cold kiln compile / ORT session", COLD_RATIO),
                             ("cached_r", "cached kiln compile / ORT session", CACHED_RATIO)):
        for op in results["opsets"] + ["all"]:
            vals = [(k, d[rk]) for k, d in rows.items()
                    if d[rk] and (op == "all" or results["models"][k]["opset"] == op)]
            g = geomean([v for _, v in vals])
            w = max(vals, key=lambda kv: kv[1]) if vals else None
            L.append(f"| {label} | {op} | " + (f"{g:.2f}x" if g else "-") + " | "
                     + (f"{w[0]} {w[1]:.2f}x" if w else "-") + f" | {len(vals)} | "
                     + (f"<= {limit:g}x: " + ("met" if g <= limit else "**missed**")
                        if g else "-") + " |")

    L.append("\nTargets, over all " + f"{total} model-opsets:\n")
    for rk, label, limit in (("cold_r", "cold", COLD_RATIO), ("cached_r", "cached", CACHED_RATIO)):
        vals = [(k, d[rk]) for k, d in rows.items() if d[rk]]
        g = geomean([v for _, v in vals])
        within = sum(1 for _, v in vals if v <= limit)
        w = max(vals, key=lambda kv: kv[1]) if vals else None
        L.append(f"- {label} <= {limit:g}x ORT session creation as a geometric mean: "
                 + (f"{g:.2f}x, {_met(g <= limit)}" if g else "no numbers, **missed**")
                 + f"; {within} model-opsets at or under {limit:g}x, {len(vals) - within} "
                 f"over, {total - len(vals)} without a number"
                 + (f"; worst {w[0]} {w[1]:.2f}x" if w else ""))
    colds = [(k, d["cold"]) for k, d in rows.items() if d["cold"]]
    under = sum(1 for _, v in colds if v < COLD_MAX_MS)
    w = max(colds, key=lambda kv: kv[1]) if colds else None
    L.append(f"- cold under {COLD_MAX_MS / 1000:g} s on every zoo model: "
             f"{_met(under == total)}; {under} model-opsets under, {len(colds) - under} at "
             f"or over, {total - len(colds)} without a number"
             + (f"; worst {w[0]} {w[1]:.0f} ms" if w else ""))
    if results.get("compile_only"):
        # A full run lists its notes in the section's notes.
        problems += [f"- {_esc(n)}" for n in results.get("notes", [])]
    if empty:
        problems.append("- the cache folder was still empty after the filling compile on "
                        + (f"every model-opset measured ({filled})" if len(empty) == filled
                           else f"{len(empty)} of {filled}: " + ", ".join(empty))
                        + ", so cached there is a second cold compile")
    if problems:
        L.append("")
        L += problems
    L.append("")
    L.append(CEND)
    return "\n".join(L)


def rate_block(results):
    """The achieved FLOP rate of Conv/Gemm/MatMul work against the FMA peak
    measured in the same run (bench/peak.c, best of its start and end
    probes, per thread count)."""
    hi = results["threads"][0]
    pk = results.get("peak") or {}
    best = {}
    for side in ("start", "end"):
        for t, g in (pk.get(side) or {}).items():
            best[int(t)] = max(best.get(int(t), 0), g)
    L = ["\n### FLOP rate against the machine's FMA peak\n"]
    if not best.get(hi) or not best.get(1):
        L.append("Not measured in this run (no peak probe: bench/run builds bench/peak.c).")
        return L
    L.append(f"f32 FMA peak measured by bench/peak.c at the start and the end of this run "
             f"(best of each): {best[1]:.0f} GFLOP/s on 1 thread, {best[hi]:.0f} on {hi} "
             f"(start {pk['start'].get(1, 0):.0f} / {pk['start'].get(hi, 0):.0f}, end "
             f"{pk['end'].get(1, 0):.0f} / {pk['end'].get(hi, 0):.0f}). Work: the "
             "multiply-adds of Conv, ConvTranspose, Gemm and MatMul nodes (2 FLOP each) from "
             "ONNX shape inference; elementwise work is not counted, so models dominated by "
             "it show low rates on both sides; models whose shapes inference leaves unknown "
             "(gpt's symbolic sequence) and recurrent ones are left out. Cells: GFLOP/s (% of "
             "the peak at that thread count).\n")
    L.append(f"| model | opset | GFLOP per run | kiln-cpu {hi}T | ORT {hi}T | kiln-cpu 1T | "
             "ORT 1T |")
    L.append("|---" * 7 + "|")
    for key, m in results["models"].items():
        fl, fw = m.get("flops"), m["fw"]
        if not fl or fl < 1e6:  # recurrent models: their work is not in these kinds
            continue

        def cell(col, t):
            res = fw.get(col)
            ms = _ms(res)
            if not ms or not _ok(res):
                return "-"
            g = fl / ms * 1e-6
            return f"{g:.0f} ({100 * g / best[t]:.0f}%)"
        L.append(f"| {m['name']} | {m['opset']} | {fl * 1e-9:.2f} | "
                 + " | ".join([cell(f"kiln-cpu-{hi}t", hi), cell(f"ort-{hi}t", hi),
                               cell("kiln-cpu-1t", 1), cell("ort-1t", 1)]) + " |")
    return L


def write_compile(results, md_path):
    """A compile-only run: rewrites only the compile table of the zoo section."""
    block = compile_block(results)
    splice_compile(md_path, block)
    return block


def write(results, md_path, png_path):
    hi = results["threads"][0]
    mi = results["machine"]
    rs = ratios(results)
    runs = results["runs"]
    L = [BEGIN, "", "## Model zoo (`bench/run --zoo`)", ""]
    n_arch = len({m["name"] for m in results["models"].values()})
    L.append(f"{n_arch} architectures x opsets {', '.join(map(str, results['opsets']))}, "
             "random weights, batch 1 (bench/README.md, \"The zoo\"). Numbers from one run "
             "on one machine.\n")
    L.append(f"- date: {mi['date']}; machine: {mi['cpu']}, {mi['cores']} cores")
    L.append("- versions: " + "; ".join(f"{k} {mi[k]}" for k in (
        "kiln", "llvm", "python", "numpy", "onnx", "onnxruntime", "torch", "torchvision")))
    rounds = results.get("rounds", 1)
    how = (f"; {rounds} rounds, each a pass over the whole zoo timing ORT then kiln-cpu, and "
           "each side's lowest median of its rounds is the cell (rounds of a cell minutes "
           "apart: a slow spell of the shared machine then spoils at most one; all medians are "
           "in zoo-results.json as round_medians_ms)"
           if rounds > 1 else "")
    L.append(f"- protocol: each measurement its own process; {results['warmup']} warm-up runs "
             f"then {runs} timed runs, median (fewer runs, flagged `[N runs]`, where "
             f"{results['warmup'] + runs} would exceed {results['budget_s']:.0f} s){how}; "
             f"threads {hi} and 1 for both kiln-cpu (`kiln_compile_options.threads`) and ORT "
             "(intra_op_num_threads, inter_op 1, ORT_ENABLE_ALL, CPUExecutionProvider)")
    L.append("- kiln load + compile: `kiln_onnx_load` + `kiln_compile_take` in the timing process; "
             "ORT: `InferenceSession(...)` creation. Peak RSS: VmHWM of the "
             f"{hi}-thread process (kiln: load + compile + runs; ORT: Python + numpy + "
             "onnxruntime import, session, runs; the import alone is shown in brackets)")
    la = results.get("loadavg")
    if la:
        L.append(f"- load average at start {la[0][0]:.2f} {la[0][1]:.2f} {la[0][2]:.2f}, "
                 f"at end {la[1][0]:.2f} {la[1][1]:.2f} {la[1][2]:.2f} (1, 5, 15 min; above "
                 "~0.1 other work shared the cores)")
    L.append(f"- whole zoo run: {results.get('elapsed_s', 0) / 60:.1f} min\n")

    L.append("### Summary\n")
    ms = list(results["models"].values())
    exported = [m for m in ms if "export_error" not in m["manifest"]]
    compiled = [m for m in exported if "compile_ms" in m["fw"].get(f"kiln-cpu-{hi}t", {})]
    agree = [m for m in compiled if all(
        _ok(m["fw"].get(c)) and "check" in m["fw"].get(c, {})
        for c in (f"kiln-cpu-{hi}t", "kiln-cpu-1t"))]
    L.append(f"Of {len(ms)} model-opsets: {len(exported)} exported, kiln-cpu loads and compiles "
             f"{len(compiled)}, its outputs agree with ORT's at both thread counts on "
             f"{len(agree)}.\n")
    L.append("Geometric mean and worst model of each ratio, over the models with numbers on "
             "both sides (latency: only where kiln's outputs agree with ORT's).\n")
    L.append("| ratio | opset | geomean | worst | models |")
    L.append("|---|---|---|---|---|")
    summary = {}
    for rk, label, worst_fn in RATIOS:
        for op in results["opsets"] + ["all"]:
            vals = [(k, d[rk]) for k, d in rs.items()
                    if d[rk] and (op == "all" or results["models"][k]["opset"] == op)]
            g = geomean([v for _, v in vals])
            w = worst_fn(vals, key=lambda kv: kv[1]) if vals else None
            summary[(rk, op)] = (g, w, len(vals))
            L.append(f"| {label} | {op} | " + (f"{g:.2f}x" if g else "-") + " | "
                     + (f"{w[0]} {w[1]:.2f}x" if w else "-") + f" | {len(vals)} |")
    results["summary"] = {f"{rk}/{op}": v for (rk, op), v in summary.items()}

    L.append(f"\n### Latency (ms, median) and speed ratio (ORT / kiln-cpu; > 1 = kiln faster)\n")
    L.append(f"| model | opset | kiln-cpu {hi}T | ORT {hi}T | ORT/kiln {hi}T | kiln-cpu 1T | "
             "ORT 1T | ORT/kiln 1T |")
    L.append("|---" * 8 + "|")
    for key, m in results["models"].items():
        fw, d = m["fw"], rs[key]
        if "export_error" in m["manifest"]:
            L.append(f"| {m['name']} | {m['opset']} | export failed (see notes) | | | | | |")
            continue
        L.append(f"| {m['name']} | {m['opset']} | "
                 + " | ".join([
                     _fmt_ms(fw.get(f"kiln-cpu-{hi}t"), runs), _fmt_ms(fw.get(f"ort-{hi}t"), runs),
                     f"{d['speed_2t']:.2f}x" if d["speed_2t"] else "-",
                     _fmt_ms(fw.get("kiln-cpu-1t"), runs), _fmt_ms(fw.get("ort-1t"), runs),
                     f"{d['speed_1t']:.2f}x" if d["speed_1t"] else "-"]) + " |")

    L.extend(rate_block(results))

    L.append("\n### Load + compile time and peak memory\n")
    L.append("| model | opset | ONNX MB | kiln load + compile ms | ORT session ms | kiln/ORT | "
             "kiln peak MB | ORT peak MB (import) | kiln/ORT |")
    L.append("|---" * 9 + "|")
    for key, m in results["models"].items():
        fw, d, man = m["fw"], rs[key], m["manifest"]
        if "export_error" in man:
            continue
        k2, o2 = fw.get(f"kiln-cpu-{hi}t", {}), fw.get(f"ort-{hi}t", {})
        cells = [f"{man.get('size_mb', 0):.1f}",
                 f"{k2['load_ms']:.0f} + {k2['compile_ms']:.0f}" if "compile_ms" in k2 else "-",
                 f"{o2['compile_ms']:.0f}" if "compile_ms" in o2 else "-",
                 f"{d['compile']:.1f}x" if d["compile"] else "-",
                 f"{k2['peak_rss_mb']:.0f}" if "peak_rss_mb" in k2 and _ms(k2) else "-",
                 (f"{o2['peak_rss_mb']:.0f} ({o2.get('rss_import_mb', 0):.0f})"
                  if _ms(o2) else "-"),
                 f"{d['rss']:.2f}x" if d["rss"] else "-"]
        L.append(f"| {m['name']} | {m['opset']} | " + " | ".join(cells) + " |")

    if any(m.get("compile_process") for m in results["models"].values()):
        cblock = compile_block(results)
    else:
        # Results from before the whole-process measurement: the table a
        # compile-only run left stays.
        cblock = extract_compile(md_path) or "\n".join([
            CBEGIN, "", "### kiln compile (whole process) against ORT session creation", "",
            "Not measured in this run; `bench/run --zoo --zoo-compile-only` measures it.",
            "", CEND])
    L.append("\n" + cblock)

    L.append("\n### Agreement with ONNX Runtime\n")
    L.append(f"Every kiln output against ORT's ({hi} threads): pass when |got - ort| <= "
             f"{results['atol']:g} * max|ort| + {results['rtol']:g} * |ort| elementwise (the "
             "absolute part scales with the output's range: random-weight networks put out "
             "values from ~1e-9 to ~1e2). Cells: max abs error / max abs error over max|ort|. "
             "The interpreter and opencl check the small models (bench/README.md), running "
             "each once (load + compile + one run within their budgets: "
             f"{results['interp_budget_s']:.0f} s, {results['opencl_budget_s']:.0f} s).\n")
    L.append(f"| model | opset | kiln-cpu {hi}T | kiln-cpu 1T | interpreter (first run, ms) | "
             f"opencl (first run, ms) | ORT 1T vs {hi}T |")
    L.append("|---" * 7 + "|")
    for key, m in results["models"].items():
        fw = m["fw"]
        if "export_error" in m["manifest"]:
            continue
        cells = [_check_cell(fw.get(f"kiln-cpu-{hi}t")), _check_cell(fw.get("kiln-cpu-1t"))]
        for b in ("interpreter", "opencl"):
            res = fw.get(f"kiln-{b}")
            c = _check_cell(res)
            if res and "probe_ms" in res and "check" in res:
                c += f" ({res['probe_ms']:.0f})"
            cells.append(c)
        cells.append(_check_cell(fw.get("ort-1t")))
        L.append(f"| {m['name']} | {m['opset']} | " + " | ".join(cells) + " |")

    L.append("\n### Failures, skips and notes\n")
    skips = {}  # (column, reason) -> model-opsets: one line per reason
    for key, m in results["models"].items():
        for col, r in m["fw"].items():
            if "skipped" in r:
                skips.setdefault((col, r["skipped"]), []).append(key)
    for (col, why), keys in skips.items():
        L.append(f"- {col} skipped on {', '.join(keys)}: {_esc(why)}")
    for key, m in results["models"].items():
        man = m["manifest"]
        if "export_error" in man:
            L.append(f"- {key}: export failed: {_esc(man['export_error'])}")
        for col, r in m["fw"].items():
            if "skipped" in r:
                continue
            elif "error" in r:
                msg = r.get("message", "")
                L.append(f"- {key} / {col}: {_esc(r['error'])}" + (f": {_esc(msg)}" if msg else ""))
            elif "check" in r and not r["check"]["ok"]:
                L.append(f"- {key} / {col}: outputs disagree with ORT: "
                         + _esc("; ".join(r["check"]["detail"])))
    for n in results["notes"]:
        if not n.startswith("OUTPUT MISMATCH"):
            L.append(f"- {_esc(n)}")

    L.append("\n### Models and export settings\n")
    L.append("All exported with `torch.onnx.export` (TorchScript exporter) of the pinned torch, "
             "`do_constant_folding=True`, `training=TrainingMode.EVAL` (BatchNorm folded into "
             "the convs), eval mode, batch 1, fixed seed; output named `y`. Per model: "
             "source, inputs, symbolic dims, node kinds per opset.\n")
    seen = {}
    for key, m in results["models"].items():
        seen.setdefault(m["name"], []).append(m)
    for name, ms in seen.items():
        man0 = ms[0]["manifest"]
        shapes = ", ".join(f"{k}{v} {man0.get('dtypes', {}).get(k, '')}".strip()
                           for k, v in man0.get("shapes", {}).items())
        dyn = man0.get("export", {}).get("dynamic_axes")
        line = (f"- **{name}** ({ms[0]['source']}; {ms[0]['note']}; "
                f"{man0.get('params', 0) / 1e6:.2f} M parameters; {shapes}"
                + (f"; dynamic_axes {dyn}, bound to {man0.get('dims')}" if dyn else "") + ")")
        L.append(line)
        for m in ms:
            ops = m["manifest"].get("ops")
            wk = m["manifest"].get("export", {}).get("workaround")
            if ops:
                L.append(f"  - opset {m['opset']}: {sum(ops.values())} nodes: "
                         + ", ".join(f"{k} {v}" for k, v in sorted(ops.items()))
                         + (f". Export: {wk}" if wk else ""))
            else:
                L.append(f"  - opset {m['opset']}: not exported")
    L.append(f"\n![zoo chart]({os.path.basename(png_path)})\n")
    L.append(END)
    block = "\n".join(L)
    splice(md_path, block)
    chart(results, rs, png_path)
    return block


def chart(results, rs, png_path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    names = list(dict.fromkeys(m["name"] for m in results["models"].values()))
    opsets = results["opsets"]
    fig, axes = plt.subplots(1, 4, figsize=(18, 1.5 + 0.32 * len(names) * len(opsets) / 2 + 1),
                             sharey=True)
    h = 0.8 / max(1, len(opsets))
    colors = ["tab:blue", "tab:orange", "tab:green", "tab:red"]
    for ax, (rk, label, _) in zip(axes, RATIOS):
        for i, op in enumerate(opsets):
            ys, xs = [], []
            for j, n in enumerate(names):
                v = rs.get(f"{n}-opset{op}", {}).get(rk)
                if v:
                    ys.append(j + (i - (len(opsets) - 1) / 2) * h)
                    xs.append(v)
            g = geomean(xs)
            ax.barh(ys, xs, h, color=colors[i % 4],
                    label=f"opset {op}" + (f" (geomean {g:.2f}x)" if g else ""))
            if g:
                ax.axvline(g, color=colors[i % 4], linestyle="--", linewidth=1)
        ax.axvline(1.0, color="black", linewidth=1)
        ax.set_xscale("log")
        # Plain "0.5x" labels at 1, 2, 3 and 5 of each decade; no crowded minor labels.
        ax.xaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 3.0, 5.0)))
        ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}x"))
        ax.xaxis.set_minor_formatter(NullFormatter())
        ax.tick_params(axis="x", labelsize=7)
        ax.set_title(label.replace(" (", "\n("), fontsize=9)
        ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.04))
        ax.grid(axis="x", which="both", alpha=0.3)
    axes[0].set_yticks(range(len(names)))
    axes[0].set_yticklabels(names, fontsize=8)
    axes[0].invert_yaxis()
    fig.suptitle(f"kiln-cpu vs ONNX Runtime {results['machine']['onnxruntime']} on the zoo - "
                 f"{results['machine']['cpu']}, {results['machine']['date']} (log scale; "
                 "dashed: geometric means)", fontsize=10)
    fig.tight_layout()
    fig.savefig(png_path, dpi=100, bbox_inches="tight")
    plt.close(fig)


if __name__ == "__main__":
    with open(sys.argv[1]) as f:
        res = json.load(f)
    here = os.path.dirname(os.path.abspath(__file__))
    if res.get("compile_only"):
        write_compile(res, os.path.join(here, "RESULTS.md"))
    else:
        write(res, os.path.join(here, "RESULTS.md"), os.path.join(here, "zoo.png"))
