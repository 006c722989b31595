"""bench/partition.py: `bench/run --partition` (see bench/README.md). What it
costs to run one zoo model split between two backends (issue 17,
docs/partitioning.md) against the same model on one backend.

For one zoo CNN (default resnet18, opset 17) it times, each in its own
kiln_bench process: the model on cpu alone (with and without profiling),
on opencl alone when it has a device, and each split (default cpu+opencl
with the cpu's memory capped at half the model's weights, so that placement
pushes the rest onto opencl). Profiled runs (kiln_bench --regions) give each
region's own time in every run (kiln_region_info.last_run_ns); what is left
of the run's time once the regions' critical path is taken off is the
partitioned executable's own hand-over: its buffers between regions, the
threads of a level, the final copy of the outputs. A region's time includes
whatever its backend does to take in and give back host buffers (opencl
copies them to and from its device buffers inside its run), so that part of
a transfer is not in the hand-over. Split outputs are checked against the
cpu-only run's. Writes the partition section of bench/RESULTS.md (between
its markers; bench/run's other modes keep it)."""

import argparse
import json
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import zoo_report  # noqa: E402 (the markers' section helpers)

BEGIN = "<!-- partition:begin - written by bench/run --partition; bench/run keeps it -->"
END = "<!-- partition:end -->"


def extract(md_path):
    """The partition section of md_path, markers included, or ''."""
    return zoo_report.extract(md_path, BEGIN, END)


def splice(md_path, block):
    """Puts block in place of md_path's partition section (appended if none)."""
    zoo_report.splice(md_path, block, BEGIN, END)


def mib(b):
    return f"{b / 2**20:.2f} MiB" if b >= 2**20 else f"{b / 1024:.1f} KiB" if b >= 1024 \
        else f"{b} B"


def parse_split(spec):
    """'BACKENDS' or 'BACKENDS@NAME=BYTES,...' (HALF = half the model's weights)."""
    backends, _, mem = spec.partition("@")
    return backends, mem or None


def measure(args, label, backend, base, out_dir, device_memory=None, regions=True):
    from bench import run_json
    cmd = [args.kiln_bench, base["onnx"], "--backend", backend, "--threads",
           str(args.threads), "--warmup", str(args.warmup), "--runs", str(args.runs),
           "--budget-s", str(args.budget), "--over-budget", "reduce"] + base["inputs"]
    if device_memory:
        cmd += ["--device-memory", device_memory]
    if regions:
        cmd += ["--regions"]
    if out_dir:
        os.makedirs(out_dir, exist_ok=True)
        cmd += ["--output-dir", out_dir]
    res = run_json(cmd, timeout=args.budget * 3 + 600)
    res["label"], res["backend_list"], res["device_memory"] = label, backend, device_memory
    shown = ["kiln_bench"] + (cmd[1:-2] if out_dir else cmd[1:])  # without --output-dir
    res["cmd"] = " ".join(shown).replace(os.path.dirname(base["onnx"]), "MODEL_DIR")
    if "median_ms" in res:
        extra = ""
        if "regions" in res:
            extra = (f"; {len(res['regions'])} region(s), left over "
                     f"{res['left_median_ms']:.3f} ms")
        print(f"  {label:40s} {res['median_ms']:9.3f} ms ({res['runs']} runs){extra}",
              flush=True)
    else:
        print(f"  {label:40s} {res.get('error')} {res.get('message', '')}"[:300], flush=True)
    return res


def crossing(res):
    return sum(r["bytes_in"] for r in res.get("regions", []))


def agreement(row):
    chk = row.get("check")
    if not chk:
        return "reference" if row["backend"] == "cpu" else "not checked"
    if chk["ok"]:
        return f"agree (max abs err {chk['max_abs']:.3g})"
    return "DISAGREE: " + "; ".join(chk["detail"])


def report(results, md_path):
    mi = results["machine"]
    L = [BEGIN, "", "## Partitioned execution (`bench/run --partition`)", ""]
    L.append(f"{results['model']} (opset {results['opset']}, batch 1, random weights) on one "
             "backend and split between two (`--backend A+B`, docs/partitioning.md); one run on "
             "one machine. Each row is its own kiln_bench process: "
             f"{results['warmup']} warm-up runs, then {results['runs']} timed runs, median "
             f"ms; {results['threads']} thread{'s' if results['threads'] != 1 else ''} "
             "(`kiln_compile_options.threads`).\n")
    L.append(f"- date: {mi['date']}; machine: {mi['cpu']}, {mi['cores']} cores; kiln "
             f"{mi['kiln']}; {mi['llvm']}")
    la = results["loadavg"]
    L.append(f"- load average at start {la[0][0]:.2f} {la[0][1]:.2f} {la[0][2]:.2f}, at end "
             f"{la[1][0]:.2f} {la[1][1]:.2f} {la[1][2]:.2f}: the 2 cores were shared with "
             "other work (builds and tests), so the numbers are indicative, not precise")
    L.append("- opencl is PoCL on the same host CPU (no accelerator): its kernels are far slower "
             "than kiln-cpu's, so a split onto it costs mostly the opencl regions' own time")
    L.append("- profiled = compiled with KILN_COMPILE_PROFILE (kiln_bench --regions): each "
             "region's time per run is `kiln_region_info.last_run_ns`; **hand-over** = run time "
             "- the regions' critical path (per level, the slowest entry's sum), i.e. what the "
             "partitioned executable adds between regions (host buffers, a thread per entry of "
             "a level, the final output copy). A backend's own copies in and out of its device "
             "buffers are inside its region's time, not in the hand-over")
    L.append("- the hand-over is measured inside each run, against that run's own region "
             "times, so other work on the machine hardly moves it; the rows' medians (and "
             "\"vs cpu alone\") come from separate processes and move with the load")
    L.append(f"- whole run: {results['elapsed_s']:.0f} s\n")
    L.append("| run | backend list | device memory | regions | bytes crossing per run | "
             "median ms | profiled ms | sum of region medians ms | hand-over ms (median, "
             "min-max) | vs cpu alone | outputs vs cpu alone |")
    L.append("|---|---|---|---|---|---|---|---|---|---|---|")
    ref = results["rows"][0].get("median_ms")
    for row in results["rows"]:
        plain, prof = row.get("plain", {}), row["profiled"]
        if "median_ms" not in prof or "regions" not in prof:
            why = prof.get("skipped") or f"{prof.get('error')} {prof.get('message', '')}"
            L.append(f"| {row['label']} | `{row['backend']}` | {row['memory'] or '-'} | - | - | "
                     f"- | - | - | - | - | {why.strip()[:200]} |")
            continue
        regs = prof["regions"]
        rsum = sum(r["median_ms"] for r in regs)
        med = plain.get("median_ms")
        vs = f"{med / ref:.2f}x ({med - ref:+.3f} ms)" if ref and med else "-"
        runs = "" if prof["runs"] == results["runs"] else f" [{prof['runs']} runs]"
        L.append(f"| {row['label']} | `{row['backend']}` | {row['memory'] or '-'} | "
                 f"{len(regs)} | {mib(crossing(prof))} | "
                 + (f"{med:.3f}" if med else "-") + " | "
                 f"{prof['median_ms']:.3f}{runs} | {rsum:.3f} | {prof['left_median_ms']:.3f} "
                 f"({prof['left_min_ms']:.3f}-{prof['left_max_ms']:.3f}) | {vs} | "
                 f"{agreement(row)} |")
    L.append("")
    for row in results["rows"]:
        prof = row["profiled"]
        regs = prof.get("regions", [])
        if len(regs) < 2:
            continue
        L.append(f"**{row['label']}** (`{row['backend']}`"
                 + (f", `--device-memory {row['memory']}`" if row["memory"] else "")
                 + (", the cap given by hand" if row.get("by_hand") else "")
                 + f"): {len(regs)} regions, {mib(crossing(prof))} crossing per run.\n")
        L.append("| region | placement | level | nodes | weights | activations | bytes in | "
                 "bytes out | median ms (profiled) |")
        L.append("|---|---|---|---|---|---|---|---|---|")
        for i, r in enumerate(regs):
            L.append(f"| {i} | {r['placement']} | {r['level']} | {r['nodes']} | "
                     f"{mib(r['weight_bytes'])} | {mib(r['activation_bytes'])} | "
                     f"{mib(r['bytes_in'])} | {mib(r['bytes_out'])} | {r['median_ms']:.3f} |")
        L.append("")
    L.append(f"Profiled commands (MODEL_DIR: the zoo's {results['model']}-opset"
             f"{results['opset']} folder; the unprofiled runs drop --regions):\n")
    for row in results["rows"]:
        L.append(f"- `{row['profiled'].get('cmd', '')}`")
    if results["notes"]:
        L.append("")
    for n in results["notes"]:
        L.append(f"- {n}")
    L += ["", END]
    block = "\n".join(L)
    splice(md_path, block)
    return block


def main():
    # bench.py only here: report.py imports this file for extract() alone.
    from bench import compare, machine_info, run_json
    a = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    a.add_argument("--build-dir", required=True)
    a.add_argument("--kiln-bench", required=True)
    a.add_argument("--models-dir", required=True)
    a.add_argument("--out-dir", required=True)
    a.add_argument("--report", required=True)
    a.add_argument("--model", default="resnet18")
    a.add_argument("--opset", type=int, default=17)
    a.add_argument("--split", action="append", default=[],
                   help="BACKENDS[@NAME=BYTES,...] (HALF = half the model's weights); "
                        "default cpu+opencl@cpu=HALF")
    # One thread by default: on two shared cores a 2-thread run is as fast
    # as the other core happens to be free, which moves from one process to
    # the next and would blur the comparison between rows.
    a.add_argument("--threads", type=int, default=1)
    a.add_argument("--warmup", type=int, default=3)
    a.add_argument("--runs", type=int, default=15)
    a.add_argument("--budget", type=float, default=30.0)
    a.add_argument("--rtol", type=float, default=1e-3)
    a.add_argument("--atol", type=float, default=1e-4)
    args = a.parse_args()

    t0 = time.time()
    load0 = os.getloadavg()
    zoo_dir = os.path.join(args.models_dir, "zoo")
    print(f"partition: exporting {args.model} into {zoo_dir} (cached)", flush=True)
    subprocess.run([sys.executable, os.path.join(HERE, "zoo.py"), "gen", zoo_dir, "--models",
                    args.model, "--opsets", str(args.opset)], check=True)
    mdir = os.path.join(zoo_dir, f"{args.model}-opset{args.opset}")
    with open(os.path.join(mdir, "manifest.json")) as f:
        man = json.load(f)
    if "export_error" in man:
        sys.exit(f"partition: {args.model} did not export: {man['export_error']}")
    base = {"onnx": os.path.join(mdir, "model.onnx"), "inputs": []}
    for k, v in man["inputs"].items():
        base["inputs"] += ["--input", f"{k}={os.path.join(mdir, v)}"]
    for dn, dv in man.get("dims", {}).items():
        base["inputs"] += ["--dim", f"{dn}={dv}"]

    info = run_json([args.kiln_bench, "--list"])
    found = {b["name"]: b for b in info.get("backends", [])}
    notes = []
    has_opencl = found.get("opencl", {}).get("devices", 0) > 0
    splits = args.split or (["cpu+opencl@cpu=HALF"] if has_opencl else [])
    if not splits:
        notes.append("opencl has no device here and no --partition-split was given: no split "
                     "measured (try --partition-split 'cpu+interpreter@cpu=BYTES' with a cap "
                     "that leaves only the last nodes to the interpreter)")

    out = os.path.join(args.out_dir, "partition")
    rows = []
    print(f"partition: {args.model} opset {args.opset}", flush=True)
    ref_out = os.path.join(out, "cpu")
    prof = measure(args, "cpu alone (profiled)", "cpu", base, ref_out)
    plain = measure(args, "cpu alone", "cpu", base, None, regions=False)
    rows.append({"label": "cpu alone", "backend": "cpu", "memory": None, "profiled": prof,
                 "plain": plain, "median_ms": plain.get("median_ms")})
    weights = prof["regions"][0]["weight_bytes"] if prof.get("regions") else 0
    if has_opencl:
        od = os.path.join(out, "opencl")
        prof = measure(args, "opencl alone (profiled)", "opencl", base, od)
        plain = measure(args, "opencl alone", "opencl", base, None, regions=False)
        row = {"label": "opencl alone", "backend": "opencl", "memory": None,
               "profiled": prof, "plain": plain}
        if "median_ms" in prof:
            row["check"] = compare(od, ref_out, args.rtol, args.atol)
        rows.append(row)
    for i, spec in enumerate(splits):
        backends, mem = parse_split(spec)
        by_hand = bool(mem) and "HALF" not in mem
        if mem and "HALF" in mem:
            if not weights:
                notes.append(f"{spec}: no weight size from the cpu run; skipped")
                continue
            mem = mem.replace("HALF", str(weights // 2))
        label = f"split {i + 1}"
        od = os.path.join(out, f"split{i + 1}")
        prof = measure(args, f"{label}: {backends} (profiled)", backends, base, od, mem)
        plain = measure(args, f"{label}: {backends}", backends, base, None, mem, regions=False)
        row = {"label": label, "backend": backends, "memory": mem, "profiled": prof,
               "plain": plain, "by_hand": by_hand}
        if "median_ms" in prof:
            row["check"] = compare(od, ref_out, args.rtol, args.atol)
        rows.append(row)

    results = {"machine": machine_info(args.build_dir), "model": args.model,
               "opset": args.opset, "threads": args.threads, "warmup": args.warmup,
               "runs": args.runs, "rows": rows, "notes": notes,
               "loadavg": [load0, os.getloadavg()], "elapsed_s": time.time() - t0}
    os.makedirs(args.out_dir, exist_ok=True)
    with open(os.path.join(args.out_dir, "partition-results.json"), "w") as f:
        json.dump(results, f, indent=1)
    print(report(results, args.report))


if __name__ == "__main__":
    main()
