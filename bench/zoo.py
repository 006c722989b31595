"""bench/zoo.py: the model zoo of `bench/run --zoo` (see bench/README.md).

Subcommands:

  gen DIR [--models a,b] [--opsets 13,17]   export the zoo (one process per
                                            model, so one exporter crash is
                                            one model's result)
  gen-one NAME DIR --opsets 13,17           export one model (gen's worker)
  run ...                                   export, measure, compare, report

Per model and opset, `run` starts each measurement in its own process (as
bench.py does): ONNX Runtime at 2 threads and at 1 (bench.py ort), kiln-cpu
at 2 and at 1 (kiln_bench), and a one-run output check on the interpreter
and on opencl (when its plugin reports a device), on the small models unless
--check-all. Every kiln output is compared with ONNX Runtime's (2 threads).
It also times whole `kiln compile` processes, cold and with a filled compile
cache (compile_process below), against ORT's session creation; --compile-only
measures only that and ORT's session, and rewrites only the report's compile
table."""

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import warnings

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import zoo_catalog  # noqa: E402 - after the path set-up
from bench import compare, load_manifest, machine_info, run_json  # noqa: E402


def model_dir(root, name, opset):
    return os.path.join(root, f"{name}-opset{opset}")


# ---------------------------------------------------------------- generation


def _inputs(spec, rng):
    import numpy as np

    out = {}
    for k, (shape, dtype, kind) in spec.items():
        if kind == "tokens":
            out[k] = rng.integers(0, zoo_catalog.VOCAB, size=shape, dtype=np.int64)
        else:
            out[k] = rng.standard_normal(shape, dtype=np.float32)
    return out


def cmd_gen_one(args):
    import numpy as np
    import onnx
    import torch
    import zoo_models

    name = args.name
    entry = zoo_catalog.ZOO[name]
    uncached = []  # (opset, folder, manifest) of the exports still to make
    for opset in (int(o) for o in args.opsets.split(",")):
        d = model_dir(args.dir, name, opset)
        if not _cached(d):
            uncached.append((opset, d, os.path.join(d, "manifest.json")))
    if not uncached:
        return
    t0 = time.time()
    m = zoo_models.build(name)
    rng = np.random.default_rng(zoo_catalog.SEED)
    inputs = _inputs(entry["inputs"], rng)
    args_t = tuple(torch.from_numpy(v) for v in inputs.values())
    params = sum(p.numel() for p in m.parameters())
    build_s = time.time() - t0
    dynamic = entry.get("dynamic") or {}
    for opset, d, mp in uncached:
        os.makedirs(d, exist_ok=True)
        for k, v in inputs.items():
            np.save(os.path.join(d, k + ".npy"), v)
        path = os.path.join(d, "model.onnx")
        settings = {
            "exporter": f"torch.onnx.export (TorchScript), torch {torch.__version__}",
            "opset_version": opset, "do_constant_folding": True,
            "training": "TrainingMode.EVAL", "input_names": list(inputs),
            "output_names": ["y"], "dynamic_axes": dynamic or None,
            "weights": f"random (weights=None / default init), torch.manual_seed({zoo_catalog.SEED})",
            "batch": 1,
        }
        man = {"gen_version": zoo_catalog.GEN_VERSION, "name": name, "opset": opset,
               "inputs": {k: k + ".npy" for k in inputs},
               "shapes": {k: list(v.shape) for k, v in inputs.items()},
               "dtypes": {k: str(v.dtype) for k, v in inputs.items()},
               "dims": {dn: zoo_catalog.DIMS[dn] for ax in dynamic.values()
                        for dn in ax.values()},
               "params": params, "export": settings}
        t1 = time.time()

        def export():
            with torch.no_grad(), warnings.catch_warnings():
                warnings.simplefilter("ignore")
                torch.onnx.export(m, args_t, path, opset_version=opset,
                                  input_names=list(inputs), output_names=["y"],
                                  dynamic_axes=({**dynamic, "y": {}} if dynamic else None),
                                  do_constant_folding=True,
                                  training=torch.onnx.TrainingMode.EVAL)
        try:
            try:
                export()
            except torch.onnx.errors.UnsupportedOperatorError as e:
                # torch 2.5's nn.MultiheadAttention calls
                # scaled_dot_product_attention, which its exporter knows
                # from opset 14 only, so ViT and nn.TransformerEncoder do
                # not export at 13 as they stand. torch's own opset-14
                # decomposition uses opset-13 ops alone (Transpose, Mul,
                # Sqrt, MatMul, Where, Add, Softmax; Trilu only for
                # is_causal, which these models do not use), so it is
                # registered for 13 and the export retried; the checker
                # below rejects the result if an op is not in opset 13.
                if "scaled_dot_product_attention" not in str(e) or opset >= 14:
                    raise
                from torch.onnx import symbolic_opset14

                torch.onnx.register_custom_op_symbolic(
                    "aten::scaled_dot_product_attention",
                    symbolic_opset14.scaled_dot_product_attention, opset)
                settings["workaround"] = (
                    "plain export fails (aten::scaled_dot_product_attention needs opset 14 in "
                    "torch 2.5); exported with torch's opset-14 decomposition registered for "
                    "opset 13 (register_custom_op_symbolic)")
                export()
            onnx.checker.check_model(path)
            ops = {}
            for n in onnx.load(path, load_external_data=False).graph.node:
                ops[n.op_type] = ops.get(n.op_type, 0) + 1
            man["ops"] = ops
            man["size_mb"] = os.path.getsize(path) / 2 ** 20
            msg = (f"{man['size_mb']:.1f} MB, {sum(ops.values())} nodes, "
                   f"{len(ops)} kinds")
        except Exception as e:  # noqa: BLE001 - an export failure is a result
            man["export_error"] = f"{type(e).__name__}: {str(e).strip().splitlines()[0][:300]}"
            msg = "EXPORT FAILED: " + man["export_error"]
        man["export_s"] = build_s + time.time() - t1
        with open(mp, "w") as f:
            json.dump(man, f, indent=1)
        print(f"  exported {name}-opset{opset} ({man['export_s']:.1f} s): {msg}", flush=True)


def _cached(d):
    mp = os.path.join(d, "manifest.json")
    try:
        with open(mp) as f:
            return json.load(f).get("gen_version") == zoo_catalog.GEN_VERSION
    except (OSError, ValueError):
        return False


def cmd_gen(args):
    names = select(args.models)
    opsets = [int(o) for o in args.opsets.split(",")]
    for name in names:
        # Checked here too: a worker costs seconds of torch import.
        if all(_cached(model_dir(args.dir, name, o)) for o in opsets):
            continue
        p = subprocess.run([sys.executable, __file__, "gen-one", name, args.dir,
                            "--opsets", args.opsets])
        if p.returncode:
            # A crash (not an exception) of the exporter: recorded so the
            # table says so.
            for opset in opsets:
                d = model_dir(args.dir, name, opset)
                if not _cached(d):
                    os.makedirs(d, exist_ok=True)
                    with open(os.path.join(d, "manifest.json"), "w") as f:
                        json.dump({"gen_version": zoo_catalog.GEN_VERSION, "name": name,
                                   "opset": opset, "export_error":
                                   f"exporter process exited with status {p.returncode}"},
                                  f, indent=1)


def select(models):
    if not models:
        return list(zoo_catalog.ZOO)
    want = models.split(",")
    unknown = [n for n in want if n not in zoo_catalog.ZOO]
    if unknown:
        sys.exit(f"zoo: unknown model(s) {', '.join(unknown)}; known: "
                 + ", ".join(zoo_catalog.ZOO))
    return [n for n in zoo_catalog.ZOO if n in want]


# ------------------------------------------------- whole `kiln compile` processes


def matmul_flops(path, dims):
    """FLOPs of one run in Conv, ConvTranspose, Gemm and MatMul nodes (a multiply-add
    counts 2), from ONNX shape inference with the manifest's dimension values; None
    when a shape stays unknown. Elementwise work is not counted: this is the work
    the FMA peak bounds."""
    import numpy as np
    import onnx
    from onnx import shape_inference

    m = onnx.load(path, load_external_data=False)
    for i in m.graph.input:
        for d in i.type.tensor_type.shape.dim:
            if d.dim_param and d.dim_param in dims:
                d.dim_value = int(dims[d.dim_param])
    m = shape_inference.infer_shapes(m)
    shapes = {}
    for vi in list(m.graph.value_info) + list(m.graph.input) + list(m.graph.output):
        dd = [d.dim_value if d.HasField("dim_value") else None
              for d in vi.type.tensor_type.shape.dim]
        shapes[vi.name] = dd
    for t in m.graph.initializer:
        shapes[t.name] = list(t.dims)
    total = 0
    for n in m.graph.node:
        if n.op_type not in ("Conv", "ConvTranspose", "Gemm", "MatMul"):
            continue
        ins = [shapes.get(x) for x in n.input[:2]]
        out = shapes.get(n.output[0])
        if any(s is None or None in s for s in ins + [out]):
            return None
        if n.op_type == "Conv":
            total += 2 * int(np.prod(out)) * int(np.prod(ins[1][1:]))
        elif n.op_type == "ConvTranspose":
            total += 2 * int(np.prod(ins[0])) * int(np.prod(ins[1][1:]))
        elif n.op_type == "Gemm":
            ta = next((a.i for a in n.attribute if a.name == "transA"), 0)
            total += 2 * int(np.prod(out)) * int(ins[0][0 if ta else 1])
        else:
            total += 2 * int(np.prod(out)) * int(ins[0][-1])
    return total


def peak_gflops(peak, threads):
    """The FMA peak probe's GFLOP/s per thread count 1..threads, or {} without it."""
    if not peak or not os.access(peak, os.X_OK):
        return {}
    try:
        out = subprocess.run([peak, "--threads", str(threads), "--json"], capture_output=True,
                             text=True, timeout=120, check=True).stdout
        return {int(k): v for k, v in json.loads(out)["gflops"].items()}
    except (subprocess.SubprocessError, ValueError, KeyError) as e:
        print(f"zoo: peak probe failed: {e}", flush=True)
        return {}


def kiln_tool(build_dir):
    return os.path.join(build_dir, "tools", "kiln")


def has_no_cache(kiln):
    """Whether this build's `kiln compile` takes --no-cache: before the cpu
    compile cache lands it refuses the option as unknown, and cold is then a
    compile into a fresh, empty KILN_CACHE_DIR."""
    try:
        p = subprocess.run([kiln, "compile", "--help"], capture_output=True, text=True,
                           timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return "--no-cache" in p.stdout + p.stderr


def _compile_once(cmd, cache_dir, timeout):
    """(whole-process ms, kiln's own compile ms or None, error or None)."""
    env = dict(os.environ, KILN_CACHE_DIR=cache_dir)
    t0 = time.perf_counter()
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=timeout)
    except subprocess.TimeoutExpired:
        return None, None, f"timed out after {timeout:.0f} s"
    except OSError as e:
        return None, None, f"{type(e).__name__}: {e}"
    ms = (time.perf_counter() - t0) * 1e3
    if p.returncode:
        # The last line says why; a usage error's is a pointer to --help.
        tail = [ln for ln in (p.stderr or p.stdout).strip().splitlines()
                if ln.strip() and not ln.startswith("see ")]
        return None, None, f"exit {p.returncode}: " + (tail[-1] if tail else "(no output)")
    # "compiled FILE for cpu in 974.086 ms": the compile alone, load excluded.
    m = re.search(r" for \S+ in ([0-9.]+) ms", p.stdout)
    return ms, (float(m.group(1)) if m else None), None


def _tree_size(d):
    n = size = 0
    for root, _, files in os.walk(d):
        for f in files:
            n += 1
            try:
                size += os.path.getsize(os.path.join(root, f))
            except OSError:
                pass
    return n, size


def compile_process(kiln, onnx_path, dims, threads, no_cache, repeats, timeout):
    """Times the whole `kiln compile MODEL --backend cpu` process, as issue
    13's targets count it (start-up, plugin discovery, ONNX load, compile,
    exit): cold (--no-cache where the build has it, each run in a fresh,
    empty KILN_CACHE_DIR), then cached (one compile fills a fresh folder,
    then `repeats` timed hits on it). Medians; the temp folders are removed."""
    base = [kiln, "compile", onnx_path, "--backend", "cpu", "--threads", str(threads)]
    for dn, dv in dims.items():
        base += ["--dim", f"{dn}={dv}"]
    res = {"repeats": repeats, "no_cache_option": no_cache,
           "cold_cmd": " ".join(["KILN_CACHE_DIR=<fresh empty folder>"] + base
                                + (["--no-cache"] if no_cache else [])),
           "cold_runs": [], "cold_kiln_compile_ms": [], "cached_runs": [],
           "cached_kiln_compile_ms": []}
    tmps = []

    def fresh():
        tmps.append(tempfile.mkdtemp(prefix="kiln-zoo-cache-"))
        return tmps[-1]

    try:
        for _ in range(repeats):
            ms, own, err = _compile_once(base + (["--no-cache"] if no_cache else []),
                                         fresh(), timeout)
            if err:
                res["cold_error"] = err
                break
            res["cold_runs"].append(ms)
            res["cold_kiln_compile_ms"].append(own)
        if "cold_error" in res:
            res["cached_error"] = "not measured: the cold compile failed"
        else:
            cache = fresh()
            ms, own, err = _compile_once(base, cache, timeout)
            if err:
                res["cached_error"] = "filling the cache: " + err
            else:
                res["fill_ms"] = ms
                res["cache_files"], res["cache_bytes"] = _tree_size(cache)
                for _ in range(repeats):
                    ms, own, err = _compile_once(base, cache, timeout)
                    if err:
                        res["cached_error"] = err
                        break
                    res["cached_runs"].append(ms)
                    res["cached_kiln_compile_ms"].append(own)
    finally:
        for d in tmps:
            shutil.rmtree(d, ignore_errors=True)
    for k in ("cold", "cached"):
        if res[k + "_runs"] and k + "_error" not in res:
            res[k + "_ms"] = statistics.median(res[k + "_runs"])
    return res


def _print_compile_process(cp, ort_ms):
    def one(k):
        if k + "_ms" in cp:
            return f"{k} {cp[k + '_ms']:.0f} ms"
        return f"{k} {cp.get(k + '_error', 'not measured')}"[:200]
    ort = f"{ort_ms:.0f} ms" if ort_ms else "-"
    print(f"  kiln compile process {one('cold')}, {one('cached')} (median of "
          f"{cp['repeats']}; cache {cp.get('cache_files', 0)} files); ORT session {ort}",
          flush=True)


# ------------------------------------------------------------------ measuring


def cmd_run(args):
    import zoo_report

    t_start = time.time()
    load_start = os.getloadavg()
    names = select(args.models)
    opsets = [int(o) for o in args.opsets.split(",")]
    zoo_dir = os.path.join(args.models_dir, "zoo")
    print(f"zoo: exporting into {zoo_dir} (cached)", flush=True)
    subprocess.run([sys.executable, __file__, "gen", zoo_dir, "--models", ",".join(names),
                    "--opsets", args.opsets], check=True)

    notes = []
    found, checks = {}, []
    if not args.compile_only:
        info = run_json([args.kiln_bench, "--list"])
        found = {b["name"]: b for b in info.get("backends", [])}
        if "error" in info:
            notes.append(f"kiln_bench --list failed: {info['error']} {info.get('message', '')}")
        for r in info.get("refused", []):
            notes.append(f"kiln plugin refused: {r['path']}: {r['reason']}")
        for b in ("interpreter", "opencl"):
            if b not in found:
                notes.append(f"kiln backend `{b}`: no plugin found; its check column is empty")
            elif b == "opencl" and not found[b].get("devices"):
                notes.append("kiln backend `opencl`: plugin found but no OpenCL device; "
                             "not checked")
            else:
                checks.append(b)
        if "cpu" not in found:
            notes.append("kiln backend `cpu`: no plugin found; no kiln timings")
    kiln = kiln_tool(args.build_dir)
    no_cache = False
    if os.access(kiln, os.X_OK):
        no_cache = has_no_cache(kiln)
        if not no_cache:
            notes.append("`kiln compile` of this build has no --no-cache option (no cpu "
                         "compile cache yet): cold is a compile with KILN_CACHE_DIR at a "
                         "fresh, empty folder")
    else:
        notes.append(f"{kiln} missing: no whole-process compile times")
        kiln = None
    for n in notes:
        print("zoo: " + n, flush=True)

    hi = args.threads
    peak_start = {} if args.compile_only else peak_gflops(args.peak, hi)
    results = {"machine": machine_info(args.build_dir), "threads": [hi, 1],
               "warmup": args.warmup, "runs": args.runs, "budget_s": args.budget,
               "rounds": args.rounds,
               "interp_budget_s": args.interp_budget, "opencl_budget_s": args.opencl_budget,
               "rtol": args.rtol, "atol": args.atol, "opsets": opsets, "checks": checks,
               "compile_repeats": args.compile_repeats, "no_cache_option": no_cache,
               "models": {}, "notes": notes}
    timed = []  # (key, [(column, command)]) of the models timed on both sides
    if args.compile_only:
        # Only what the compile table needs; zoo_report keeps every other
        # part of the zoo section as the last full run left it.
        results = {"compile_only": True, **{k: results[k] for k in (
            "machine", "threads", "opsets", "compile_repeats", "no_cache_option",
            "models", "notes")}}
    py = sys.executable
    bench_py = os.path.join(HERE, "bench.py")
    for name in names:
        entry = zoo_catalog.ZOO[name]
        for opset in opsets:
            key = f"{name}-opset{opset}"
            t_model = time.time()
            mdir = model_dir(zoo_dir, name, opset)
            man = load_manifest(mdir)
            r = {"name": name, "opset": opset, "note": entry["note"],
                 "source": entry["source"], "small": entry["small"], "manifest": man,
                 "fw": {}}
            results["models"][key] = r
            print(f"zoo: {key}", flush=True)
            if "export_error" in man:
                print(f"  export failed: {man['export_error']}", flush=True)
                continue
            if not args.compile_only:
                try:
                    r["flops"] = matmul_flops(os.path.join(mdir, "model.onnx"),
                                              man.get("dims", {}))
                except Exception as e:  # noqa: BLE001 - a count is optional
                    print(f"  FLOP count failed: {e}", flush=True)
            # Apart from the full run's outputs, which a compile-only run
            # leaves as they are.
            out_root = os.path.join(args.out_dir, "zoo-compile" if args.compile_only
                                    else "zoo", key)

            def measure(col, cmd, timeout):
                od = os.path.join(out_root, col)
                os.makedirs(od, exist_ok=True)
                for f in os.listdir(od):
                    os.remove(os.path.join(od, f))
                res = run_json(cmd(od), timeout=timeout)
                res["out"] = od
                r["fw"][col] = res
                if "median_ms" in res:
                    print(f"  {col:18s} median {res['median_ms']:9.3f} ms "
                          f"({res['runs']} runs)  rss {res['peak_rss_mb']:.0f} MB", flush=True)
                elif "probe_ms" in res:
                    print(f"  {col:18s} one run {res['probe_ms']:.1f} ms", flush=True)
                else:
                    print(f"  {col:18s} {res.get('skipped') or res.get('error')} "
                          f"{res.get('message', '')}"[:300], flush=True)
                return res

            kin = []
            for k, v in man["inputs"].items():
                kin += ["--input", f"{k}={os.path.join(mdir, v)}"]
            for dn, dv in man.get("dims", {}).items():
                kin += ["--dim", f"{dn}={dv}"]
            onnx_path = os.path.join(mdir, "model.onnx")
            protocol = ["--warmup", str(args.warmup), "--runs", str(args.runs)]

            def measure_compile():
                if kiln is None:
                    return
                cp = compile_process(kiln, onnx_path, man.get("dims", {}), hi, no_cache,
                                     args.compile_repeats, args.compile_timeout)
                r["compile_process"] = cp
                _print_compile_process(cp, r["fw"].get(f"ort-{hi}t", {}).get("compile_ms"))

            if args.compile_only:
                # One ORT process for its session creation (the runs it
                # makes after it are one warm-up and one timed run).
                measure(f"ort-{hi}t", lambda od: [
                    py, bench_py, "ort", mdir, od, "--threads", str(hi),
                    "--budget", str(args.budget), "--warmup", "0", "--runs", "1"],
                    args.timeout)
                measure_compile()
                r["elapsed_s"] = time.time() - t_model
                continue
            # The first of the rounds (ORT then kiln, at each thread count);
            # the others are whole passes over the zoo after this loop.
            for t in (hi, 1):
                # (the commands bind this model's paths: later rounds call them
                # after the loop has moved on)
                jobs = [(f"ort-{t}t", lambda od, t=t, mdir=mdir: [
                    py, bench_py, "ort", mdir, od, "--threads", str(t),
                    "--budget", str(args.budget)] + protocol)]
                if "cpu" in found:
                    jobs.append((f"kiln-cpu-{t}t", lambda od, t=t, onnx_path=onnx_path, kin=kin: [
                        args.kiln_bench, onnx_path, "--backend", "cpu", "--output-dir", od,
                        "--threads", str(t), "--budget-s", str(args.budget),
                        "--over-budget", "reduce"] + protocol + kin))
                for col, cmd in jobs:
                    res = measure(col, cmd, args.timeout)
                    res["round_medians_ms"] = [res["median_ms"]] if "median_ms" in res else []
                if all("median_ms" in r["fw"][col] for col, _ in jobs):
                    timed.append((key, jobs))
            measure_compile()
            for b in checks:
                col = f"kiln-{b}"
                if not entry["small"] and not args.check_all:
                    why = ("one interpreter run of the others takes 25 s (ResNet-18, "
                           "measured on 2 busy cores) to minutes"
                           if b == "interpreter" else
                           "PoCL's first build of a model's kernels takes 15-45 s even on "
                           "the small ones")
                    r["fw"][col] = {"skipped": f"not a small model ({why}; "
                                               "--zoo-check-all checks it)"}
                    continue
                budget = args.interp_budget if b == "interpreter" else args.opencl_budget
                res = measure(col, lambda od, b=b: [
                    args.kiln_bench, onnx_path, "--backend", b, "--output-dir", od,
                    "--threads", str(hi), "--check-only"] + kin, budget)
                if res.get("error", "").startswith("timed out"):
                    res["skipped"] = (f"load + compile + one run over the {budget:.0f} s "
                                      "budget")
                    del res["error"]
            ref = r["fw"].get(f"ort-{hi}t", {})
            for col, res in r["fw"].items():
                if col == f"ort-{hi}t" or "out" not in res or "error" in ref:
                    continue
                if not any(f.endswith(".npy") for f in os.listdir(res["out"])):
                    continue
                res["check"] = compare(res["out"], ref["out"], args.rtol, args.atol)
                if not res["check"]["ok"]:
                    msg = (f"OUTPUT MISMATCH {key} {col} vs ORT: "
                           + "; ".join(res["check"]["detail"]))
                    print("  !!! " + msg, flush=True)
                    notes.append(msg)
            r["elapsed_s"] = time.time() - t_model
    # Rounds 2.. as whole passes over the zoo, so that a cell's rounds lie
    # minutes apart: on a shared VM slow spells of a minute or so come and
    # go, slowing both runtimes alike while they last; two rounds back to
    # back fell into the same spell. Each column keeps its lowest median
    # (its output files and check are the first round's).
    for rnd in range(2, args.rounds + 1):
        print(f"zoo: round {rnd} of {args.rounds}", flush=True)
        for key, jobs in timed:
            fw = results["models"][key]["fw"]
            for col, cmd in jobs:
                with tempfile.TemporaryDirectory(prefix="kiln-zoo-") as od:
                    res = run_json(cmd(od), timeout=args.timeout)
                if "median_ms" not in res:
                    print(f"  {key} {col}: {res.get('error', 'no median')}"[:300], flush=True)
                    continue
                old = fw[col]
                old["round_medians_ms"].append(res["median_ms"])
                print(f"  {key:32s} {col:14s} median {res['median_ms']:9.3f} ms "
                      f"(best {min(old['round_medians_ms']):.3f})", flush=True)
                if res["median_ms"] < old["median_ms"]:
                    for k, v in res.items():
                        if k not in ("out", "check"):
                            old[k] = v
    results["elapsed_s"] = time.time() - t_start
    results["loadavg"] = [load_start, os.getloadavg()]
    if not args.compile_only:
        results["peak"] = {"start": peak_start, "end": peak_gflops(args.peak, hi)}
    os.makedirs(args.out_dir, exist_ok=True)
    if args.compile_only:
        # Its own file: zoo-results.json stays the last full run's, which
        # `python bench/zoo_report.py` can still redo the whole section from.
        rj = os.path.join(args.out_dir, "zoo-compile-results.json")
        with open(rj, "w") as f:
            json.dump(results, f, indent=1)
        print(zoo_report.write_compile(results, args.report))
        print(f"zoo: wrote the compile table of {args.report}'s zoo section and {rj} "
              f"in {results['elapsed_s']:.0f} s")
        return
    rj = os.path.join(args.out_dir, "zoo-results.json")
    with open(rj, "w") as f:
        json.dump(results, f, indent=1)
    text = zoo_report.write(results, args.report, args.chart)
    print(text)
    print(f"zoo: wrote the zoo section of {args.report}, {args.chart} and {rj} "
          f"in {results['elapsed_s']:.0f} s")
    bad = [n for n in notes if n.startswith("OUTPUT MISMATCH")]
    if bad:
        print(f"zoo: {len(bad)} OUTPUT MISMATCH(ES) - see above", file=sys.stderr)
        sys.exit(3)


def main():
    p = argparse.ArgumentParser(prog="zoo.py")
    sub = p.add_subparsers(dest="cmd", required=True)
    g = sub.add_parser("gen")
    g.add_argument("dir")
    g.add_argument("--models", default="")
    g.add_argument("--opsets", default=",".join(str(o) for o in zoo_catalog.OPSETS))
    g1 = sub.add_parser("gen-one")
    g1.add_argument("name")
    g1.add_argument("dir")
    g1.add_argument("--opsets", default=",".join(str(o) for o in zoo_catalog.OPSETS))
    a = sub.add_parser("run")
    a.add_argument("--build-dir", required=True)
    a.add_argument("--kiln-bench", required=True)
    a.add_argument("--models-dir", required=True)
    a.add_argument("--out-dir", required=True)
    a.add_argument("--report", required=True)
    a.add_argument("--chart", required=True)
    a.add_argument("--models", default="")
    a.add_argument("--opsets", default=",".join(str(o) for o in zoo_catalog.OPSETS))
    a.add_argument("--threads", type=int, default=2)
    a.add_argument("--warmup", type=int, default=3)
    a.add_argument("--runs", type=int, default=15)
    a.add_argument("--budget", type=float, default=15.0)
    a.add_argument("--rounds", type=int, default=2,
                   help="passes of ORT then kiln timings over the zoo; each cell keeps its "
                   "lowest median")
    a.add_argument("--interp-budget", type=float, default=60.0)
    a.add_argument("--opencl-budget", type=float, default=300.0)
    a.add_argument("--timeout", type=float, default=600.0)
    a.add_argument("--compile-only", action="store_true",
                   help="only whole `kiln compile` processes and ORT session creation; "
                        "rewrites only the report's compile table")
    a.add_argument("--compile-repeats", type=int, default=3,
                   help="cold and cached `kiln compile` processes per model (median)")
    a.add_argument("--compile-timeout", type=float, default=300.0)
    a.add_argument("--check-all", action="store_true",
                   help="interpreter and opencl checks on every model, not the small ones")
    a.add_argument("--peak", default="",
                   help="the FMA peak probe (bench/peak.c), run at the start and the end")
    a.add_argument("--rtol", type=float, default=1e-3)
    a.add_argument("--atol", type=float, default=1e-4)
    args = p.parse_args()
    {"gen": cmd_gen, "gen-one": cmd_gen_one, "run": cmd_run}[args.cmd](args)


if __name__ == "__main__":
    main()
