"""bench/bench.py: the Python half of bench/run.

Subcommands (bench/run calls `all`; the others are the per-framework
runners, each started in its own process so that ru_maxrss is that
framework's alone and no framework's threads disturb another's timing):

  gen DIR                 export the models as ONNX + fixed-seed inputs
  all ...                 generate, measure everything, compare, report
  ort MODEL_DIR OUT ...   ONNX Runtime runner (imports no torch)
  torch NAME MODEL_DIR OUT ...   PyTorch eager runner
  numpy-sgemm MODEL_DIR ...      numpy (OpenBLAS) matmul runner
"""

import argparse
import datetime
import json
import os
import platform
import resource
import subprocess
import sys
import time
import warnings

HERE = os.path.dirname(os.path.abspath(__file__))
GEN_VERSION = "1"  # bump when models.py changes what it exports


def peak_rss_mb():
    """This process's peak resident set. VmHWM rather than ru_maxrss: on
    Linux ru_maxrss survives fork + exec, so a child reports at least its
    parent's size at the fork."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024.0
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def summarize(times_ms, **extra):
    import numpy as np

    t = np.sort(np.asarray(times_ms))
    d = {
        "runs": len(t),
        "median_ms": float(np.median(t)),
        "min_ms": float(t[0]),
        "max_ms": float(t[-1]),
        "p25_ms": float(np.percentile(t, 25)),
        "p75_ms": float(np.percentile(t, 75)),
        "peak_rss_mb": peak_rss_mb(),
    }
    d.update(extra)
    return d


def time_loop(fn, warmup, runs, budget_s=0.0):
    """Times runs calls after warmup; like kiln_bench, a framework whose
    first call says the protocol would exceed budget_s gets fewer runs
    (the report flags the count) so that one slow peer on a loaded machine
    cannot stretch the whole benchmark."""
    t0 = time.perf_counter()
    fn()
    probe = time.perf_counter() - t0
    if budget_s > 0 and probe * (warmup + runs) > budget_s:
        warmup = min(warmup, 2)
        runs = max(5, min(runs, int(budget_s / max(probe, 1e-9)) - warmup))
    for _ in range(warmup):
        fn()
    out = []
    for _ in range(runs):
        t0 = time.perf_counter()
        fn()
        out.append((time.perf_counter() - t0) * 1e3)
    return out


def load_manifest(model_dir):
    with open(os.path.join(model_dir, "manifest.json")) as f:
        return json.load(f)


def load_inputs(model_dir):
    import numpy as np

    man = load_manifest(model_dir)
    return {k: np.load(os.path.join(model_dir, v)) for k, v in man["inputs"].items()}


# ---------------------------------------------------------------- generation


def cmd_gen(args):
    sys.path.insert(0, HERE)
    import numpy as np
    import onnx
    import torch
    import catalog
    import models

    os.makedirs(args.dir, exist_ok=True)
    for name, (shapes, _, _) in catalog.MODELS.items():
        d = os.path.join(args.dir, name)
        man_path = os.path.join(d, "manifest.json")
        if os.path.exists(man_path):
            with open(man_path) as f:
                if json.load(f).get("gen_version") == GEN_VERSION:
                    continue
        os.makedirs(d, exist_ok=True)
        t0 = time.time()
        m = models.build(name)
        opset = models.OPSETS.get(name, models.OPSET)
        rng = np.random.default_rng(models.SEED)
        inputs = {k: rng.standard_normal(s, dtype=np.float32) for k, s in shapes.items()}
        for k, v in inputs.items():
            np.save(os.path.join(d, k + ".npy"), v)
        args_t = tuple(torch.from_numpy(v) for v in inputs.values())
        path = os.path.join(d, "model.onnx")
        # PRESERVE keeps the conv block's BatchNormalization nodes (the EVAL
        # default folds them into the convs, leaving kiln nothing to fold);
        # the torchvision networks are exported as ONNX users get them.
        mode = (torch.onnx.TrainingMode.PRESERVE if name == "convblock"
                else torch.onnx.TrainingMode.EVAL)
        with torch.no_grad(), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            torch.onnx.export(m, args_t, path, opset_version=opset,
                              input_names=list(inputs), output_names=["y"],
                              do_constant_folding=True, training=mode)
        onnx.checker.check_model(path)
        ops = {}
        for n in onnx.load(path, load_external_data=False).graph.node:
            ops[n.op_type] = ops.get(n.op_type, 0) + 1
        man = {"gen_version": GEN_VERSION, "name": name, "opset": opset,
               "inputs": {k: k + ".npy" for k in inputs},
               "shapes": {k: list(s) for k, s in shapes.items()}, "ops": ops}
        with open(man_path, "w") as f:
            json.dump(man, f, indent=1)
        print(f"  generated {name:13s} ({time.time() - t0:4.1f} s): "
              + ", ".join(f"{k} x{v}" for k, v in sorted(ops.items())), flush=True)


# ------------------------------------------------------------------ runners


def cmd_ort(args):
    import numpy as np
    import onnxruntime as ort

    feeds = load_inputs(args.model_dir)
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    so.intra_op_num_threads = args.threads
    so.inter_op_num_threads = 1
    # The interpreter, numpy and onnxruntime's import, before any model:
    # the zoo report shows how much of ORT's peak RSS that is.
    rss_import = peak_rss_mb()
    t0 = time.perf_counter()
    sess = ort.InferenceSession(args.model or os.path.join(args.model_dir, "model.onnx"), so,
                                providers=["CPUExecutionProvider"])
    compile_ms = (time.perf_counter() - t0) * 1e3
    outs = sess.run(None, feeds)
    for o, v in zip(sess.get_outputs(), outs):
        np.save(os.path.join(args.out, o.name + ".npy"), v)
    times = time_loop(lambda: sess.run(None, feeds), args.warmup, args.runs, args.budget)
    print(json.dumps(summarize(times, compile_ms=compile_ms, rss_import_mb=rss_import,
                               threads=args.threads)))


def cmd_torch(args):
    sys.path.insert(0, HERE)
    import numpy as np
    import torch
    import models

    torch.set_num_threads(args.threads)
    m = models.build(args.name)
    ins = tuple(torch.from_numpy(v) for v in load_inputs(args.model_dir).values())
    with torch.inference_mode():
        y = m(*ins)
        np.save(os.path.join(args.out, "y.npy"), y.numpy())
        times = time_loop(lambda: m(*ins), args.warmup, args.runs, args.budget)
    print(json.dumps(summarize(times, threads=torch.get_num_threads())))


def cmd_numpy_sgemm(args):
    import numpy as np

    ins = load_inputs(args.model_dir)
    a, b = ins["a"], ins["b"]
    c = np.empty((a.shape[0], b.shape[1]), dtype=np.float32)
    np.matmul(a, b, out=c)
    np.save(os.path.join(args.out, "y.npy"), c)
    times = time_loop(lambda: np.matmul(a, b, out=c), args.warmup, args.runs, args.budget)
    env = {k: os.environ.get(k, "(unset)") for k in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")}
    print(json.dumps(summarize(times, env=env)))


# ------------------------------------------------------------- orchestration


def run_json(cmd, env=None, timeout=900):
    """Runs one measurement process; its last stdout line is its JSON."""
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"error": f"timed out after {timeout} s"}
    lines = [ln for ln in p.stdout.splitlines() if ln.startswith("{")]
    if lines:
        try:
            return json.loads(lines[-1])
        except json.JSONDecodeError:
            pass
    tail = (p.stderr or p.stdout).strip().splitlines()[-3:]
    return {"error": f"exit {p.returncode}: " + " | ".join(tail)}


def compare(got_dir, ref_dir, rtol, atol):
    """Every output of ref_dir against got_dir. atol scales with the
    reference's largest magnitude: random-weight networks put out values
    from ~1e-9 (mobilenet_v2) to the hundreds (resnet50, sgemm), and a
    fixed atol would be meaningless for the first and too strict for the
    last."""
    import numpy as np

    res = {"ok": True, "max_abs": 0.0, "max_rel": 0.0, "detail": []}
    for f in sorted(os.listdir(ref_dir)):
        if not f.endswith(".npy"):
            continue
        ref = np.load(os.path.join(ref_dir, f)).astype(np.float64)
        gp = os.path.join(got_dir, f)
        if not os.path.exists(gp):
            res["ok"] = False
            res["detail"].append(f"{f}: missing")
            continue
        got = np.load(gp).astype(np.float64)
        if got.shape != ref.shape:
            res["ok"] = False
            res["detail"].append(f"{f}: shape {got.shape} vs {ref.shape}")
            continue
        scale = float(np.max(np.abs(ref))) if ref.size else 0.0
        scale = scale if scale > 0 else 1.0
        err = np.abs(got - ref)
        bad = err > atol * scale + rtol * np.abs(ref)
        nbad = int(np.count_nonzero(bad)) + int(np.count_nonzero(~np.isfinite(got)))
        res["max_abs"] = max(res["max_abs"], float(np.max(err)) if err.size else 0.0)
        # Relative to the output's range, as the tolerance's absolute part.
        res["max_rel"] = max(res["max_rel"], float(np.max(err)) / scale if err.size else 0.0)
        if nbad:
            res["ok"] = False
            res["detail"].append(f"{f}: {nbad} of {ref.size} values off, max abs err "
                                 f"{float(np.nanmax(err)):.3g} (|ref| max {scale:.3g})")
    return res


def sh(cmd):
    try:
        return subprocess.run(cmd, shell=True, capture_output=True, text=True,
                              timeout=30).stdout.strip()
    except Exception:  # noqa: BLE001 - versions are best effort
        return ""


def machine_info(build_dir):
    from importlib.metadata import version

    import numpy as np

    model = sh("lscpu | sed -n 's/^Model name: *//p' | head -1")
    blas = "?"
    try:
        cfg = np.show_config(mode="dicts")
        bl = cfg["Build Dependencies"]["blas"]
        blas = f"{bl.get('name')} {bl.get('version')}"
    except Exception:  # noqa: BLE001
        pass
    # The LLVM the cpu plugin really loads, not whichever llvm-config is first.
    llvm = sh(f"ldd {build_dir}/plugins/cpu/kiln-cpu.so 2>/dev/null | grep -o 'libLLVM[^ ]*' "
              "| head -1") or "no cpu plugin"
    return {
        "date": datetime.datetime.now().astimezone().strftime("%Y-%m-%d %H:%M %Z"),
        "cpu": model or platform.processor(),
        "cores": os.cpu_count(),
        "os": platform.platform(),
        "kiln": (sh(f"git -C {HERE}/.. describe --always --dirty") or "?")
        + f" ({build_dir}, {buildtype(build_dir)})",
        "cc": sh("cc --version | head -1"),
        "llvm": llvm or "?",
        "python": platform.python_version(),
        "numpy": np.__version__ + f" ({blas})",
        "onnx": version("onnx"),
        "onnxruntime": version("onnxruntime"),
        "torch": version("torch"),
        "torchvision": version("torchvision"),
        "matplotlib": version("matplotlib"),
    }


def buildtype(build_dir):
    try:
        with open(os.path.join(build_dir, "meson-info", "intro-buildoptions.json")) as f:
            for o in json.load(f):
                if o.get("name") == "buildtype":
                    return "buildtype " + str(o.get("value"))
    except Exception:  # noqa: BLE001
        pass
    return "buildtype ?"


def cmd_all(args):
    sys.path.insert(0, HERE)
    import catalog
    import report

    t_start = time.time()
    load_start = os.getloadavg()
    cores = os.cpu_count() or 1
    threads = args.threads or cores
    print(f"bench: generating models into {args.models_dir}", flush=True)
    gen = subprocess.run([sys.executable, __file__, "gen", args.models_dir])
    if gen.returncode:
        sys.exit("bench: model generation failed")

    backends_info = run_json([args.kiln_bench, "--list"])
    found = {b["name"]: b for b in backends_info.get("backends", [])}
    notes = []
    if "error" in backends_info:
        notes.append(f"kiln_bench --list failed: {backends_info['error']} "
                     f"{backends_info.get('message', '')}")
    for r in backends_info.get("refused", []):
        notes.append(f"kiln plugin refused: {r['path']}: {r['reason']}")
    wanted = args.backends.split(",")
    columns = []  # kiln backends measured
    for b in wanted:
        if b not in found:
            notes.append(f"kiln backend `{b}`: not built here (no plugin found); column empty")
        elif b == "opencl" and not found[b].get("devices"):
            notes.append("kiln backend `opencl`: plugin found but no OpenCL device; not run")
        else:
            columns.append(b)
    for n in notes:
        print("bench: " + n, flush=True)
    print("bench: kiln backends: " + (", ".join(columns) or "none"), flush=True)

    names = [n for n in catalog.MODELS if not args.models or n in args.models.split(",")]
    unknown = set(args.models.split(",")) - set(catalog.MODELS) if args.models else set()
    if unknown:
        sys.exit(f"bench: unknown model(s) {', '.join(sorted(unknown))}; known: "
                 + ", ".join(catalog.MODELS))
    results = {"machine": machine_info(args.build_dir), "threads": threads,
               "warmup": args.warmup, "runs": args.runs, "backends": wanted,
               "models": {}, "notes": notes}
    py = sys.executable
    common = ["--threads", str(threads), "--warmup", str(args.warmup), "--runs", str(args.runs)]
    peer = common + ["--budget", str(args.budget)]
    for name in names:
        mdir = os.path.join(args.models_dir, name)
        man = load_manifest(mdir)
        small = catalog.MODELS[name][1]
        out_root = os.path.join(args.out_dir, name)
        r = {"note": catalog.MODELS[name][2], "shapes": man["shapes"], "ops": man["ops"],
             "fw": {}}
        results["models"][name] = r
        print(f"bench: {name}", flush=True)

        def measure(key, cmd, env=None):
            od = os.path.join(out_root, key)
            os.makedirs(od, exist_ok=True)
            for f in os.listdir(od):
                os.remove(os.path.join(od, f))
            res = run_json(cmd(od), env=env)
            res["out"] = od
            r["fw"][key] = res
            if "median_ms" in res:
                print(f"  {key:18s} median {res['median_ms']:9.3f} ms  "
                      f"[{res['min_ms']:.3f} .. {res['max_ms']:.3f}]  "
                      f"rss {res['peak_rss_mb']:.0f} MB", flush=True)
            else:
                print(f"  {key:18s} {res.get('skipped') or res.get('error')} "
                      f"{res.get('message', '')}", flush=True)
            return res

        measure("ort", lambda od: [py, __file__, "ort", mdir, od] + peer)
        for b in columns:
            if b == "interpreter" and not small:
                r["fw"]["kiln-" + b] = {"skipped": "too slow on the interpreter: not run"}
                print(f"  kiln-{b:13s} skipped (too slow for the interpreter)", flush=True)
                continue
            # The interpreter is skipped where too slow; a compiled backend
            # gets fewer runs instead (the report says how many).
            budget = args.interp_budget if b == "interpreter" else args.budget
            over = "skip" if b == "interpreter" else "reduce"
            ins = []
            for k, v in man["inputs"].items():
                ins += ["--input", f"{k}={os.path.join(mdir, v)}"]
            measure("kiln-" + b, lambda od, b=b, ins=ins, budget=budget, over=over: [
                args.kiln_bench, os.path.join(mdir, "model.onnx"), "--backend", b,
                "--output-dir", od, "--budget-s", str(budget), "--over-budget", over]
                + ins + common)
        if not args.no_torch:
            measure("torch", lambda od: [py, __file__, "torch", name, mdir, od] + peer)
        if name == "sgemm":
            env = {k: v for k, v in os.environ.items()
                   if k not in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")}
            measure("numpy", lambda od: [py, __file__, "numpy-sgemm", mdir, od] + peer,
                    env=env)
        ref = r["fw"]["ort"].get("out")
        for key, res in r["fw"].items():
            if key == "ort" or "out" not in res or "error" in r["fw"]["ort"]:
                continue
            if not any(f.endswith(".npy") for f in os.listdir(res["out"])):
                continue
            res["check"] = compare(res["out"], ref, args.rtol, args.atol)
            if not res["check"]["ok"]:
                msg = f"OUTPUT MISMATCH {name} {key} vs ORT: " + "; ".join(res["check"]["detail"])
                print("  !!! " + msg, flush=True)
                notes.append(msg)
    results["elapsed_s"] = time.time() - t_start
    results["loadavg"] = [load_start, os.getloadavg()]
    with open(os.path.join(args.out_dir, "results.json"), "w") as f:
        json.dump(results, f, indent=1)
    report.write(results, args.report, args.chart)
    print(open(args.report).read())
    print(f"bench: wrote {args.report}, {args.chart} and "
          f"{os.path.join(args.out_dir, 'results.json')} in {results['elapsed_s']:.0f} s")
    bad = [n for n in notes if n.startswith("OUTPUT MISMATCH")]
    if bad:
        print(f"bench: {len(bad)} OUTPUT MISMATCH(ES) - see above", file=sys.stderr)
        sys.exit(3)


def main():
    p = argparse.ArgumentParser(prog="bench.py")
    sub = p.add_subparsers(dest="cmd", required=True)
    g = sub.add_parser("gen")
    g.add_argument("dir")

    def runner(name, with_name=False):
        q = sub.add_parser(name)
        if with_name:
            q.add_argument("name")
        q.add_argument("model_dir")
        q.add_argument("out")
        q.add_argument("--threads", type=int, default=os.cpu_count())
        q.add_argument("--warmup", type=int, default=10)
        q.add_argument("--runs", type=int, default=50)
        q.add_argument("--budget", type=float, default=0.0)
        # another model file on model_dir's inputs (a quantized one)
        q.add_argument("--model", default=None)
        return q

    runner("ort")
    runner("torch", with_name=True)
    runner("numpy-sgemm")
    a = sub.add_parser("all")
    a.add_argument("--build-dir", required=True)
    a.add_argument("--kiln-bench", required=True)
    a.add_argument("--models-dir", required=True)
    a.add_argument("--out-dir", required=True)
    a.add_argument("--report", required=True)
    a.add_argument("--chart", required=True)
    a.add_argument("--backends", default="cpu,opencl,interpreter")
    a.add_argument("--models", default="")
    a.add_argument("--threads", type=int, default=0)
    a.add_argument("--warmup", type=int, default=10)
    a.add_argument("--runs", type=int, default=50)
    a.add_argument("--budget", type=float, default=60.0)
    a.add_argument("--interp-budget", type=float, default=40.0)
    a.add_argument("--rtol", type=float, default=1e-3)
    a.add_argument("--atol", type=float, default=1e-4)
    a.add_argument("--no-torch", action="store_true")
    args = p.parse_args()
    {"gen": cmd_gen, "ort": cmd_ort, "torch": cmd_torch, "numpy-sgemm": cmd_numpy_sgemm,
     "all": cmd_all}[args.cmd](args)


if __name__ == "__main__":
    main()
