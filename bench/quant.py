"""bench/quant.py: `bench/run --quant` (see bench/README.md). What int8
quantization buys and costs (issue 16, docs/quantization.md), in one run.

1. int8 GEMM: one QLinearMatMul (u8 x s8, 2-D, constant weights) against the
   same MatMul in f32, each in its own kiln_bench process on cpu; GOP/s
   (2·M·N·K per run).
2. Speed models (default resnet50, mobilenet_v2, bert; zoo, opset 17,
   batch 1):
   calibration inputs (floats uniform in [-1, 1), token ids uniform over
   the zoo input's range; seed 1) and held-out inputs (seed 2) are written
   as .npy. `kiln quantize` quantizes the model on
   them (every Conv / MatMul / Gemm, `--target-sqnr off`, as ONNX Runtime's
   quantizer does); ONNX Runtime's `quantize_static` (QDQ, per-channel s8
   weights, u8 activations, minmax) quantizes it on the same calibration
   inputs. Timed, each in its own process: kiln fp32, kiln on its own int8
   model, kiln on ONNX Runtime's int8 model, ONNX Runtime fp32 and int8.
   SQNR against the float model on the held-out inputs: kiln's from its
   report, ONNX Runtime's computed here against its own fp32 outputs.
3. Every zoo CNN at default settings (`kiln quantize --random-inputs 8`,
   target 30 dB with fallback): its output SQNR, the fallbacks, the share
   of MACs that run in int8 on cpu.

Writes the quant section of bench/RESULTS.md (between its markers)."""

import argparse
import json
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import zoo_report  # noqa: E402 (the markers' section helpers)

BEGIN = "<!-- quant:begin - written by bench/run --quant; bench/run keeps it -->"
END = "<!-- quant:end -->"

CNNS = ["resnet18", "resnet50", "resnext50_32x4d", "densenet121", "googlenet",
        "inception_v3", "mobilenet_v2", "mobilenet_v3_small", "mobilenet_v3_large",
        "mnasnet1_0", "efficientnet_b0", "regnet_y_400mf", "shufflenet_v2_x1_0",
        "squeezenet1_1", "convnext_tiny", "lraspp_mobilenet_v3_large"]


def extract(md_path):
    return zoo_report.extract(md_path, BEGIN, END)


def splice(md_path, block):
    zoo_report.splice(md_path, block, BEGIN, END)


def sqnr(ref, got):
    import numpy as np
    ref = ref.astype(np.float64).ravel()
    err = ref - got.astype(np.float64).ravel()
    ne = float((err * err).sum())
    return float("inf") if ne == 0 else 10 * np.log10(float((ref * ref).sum()) / ne)


def gemm_models(d, m, n, k):
    """QLinearMatMul and MatMul models of one [m,k] x [k,n] product."""
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper
    rng = np.random.default_rng(3)
    w = rng.integers(-127, 128, size=(k, n), dtype=np.int8)
    inits = [numpy_helper.from_array(w, "w"),
             numpy_helper.from_array(np.array(0.02, np.float32), "a_s"),
             numpy_helper.from_array(np.array(128, np.uint8), "a_z"),
             numpy_helper.from_array(np.full((n,), 0.01, np.float32), "w_s"),
             numpy_helper.from_array(np.zeros((n,), np.int8), "w_z"),
             numpy_helper.from_array(np.array(4.0, np.float32), "y_s"),
             numpy_helper.from_array(np.array(128, np.uint8), "y_z")]
    node = helper.make_node("QLinearMatMul", ["a", "a_s", "a_z", "w", "w_s", "w_z", "y_s", "y_z"],
                            ["y"])
    g = helper.make_graph([node], "qgemm", [helper.make_tensor_value_info(
        "a", TensorProto.UINT8, [m, k])], [helper.make_tensor_value_info(
            "y", TensorProto.UINT8, [m, n])], inits)
    q = os.path.join(d, "qgemm.onnx")
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), q)
    wf = numpy_helper.from_array(rng.standard_normal((k, n)).astype(np.float32), "w")
    g = helper.make_graph([helper.make_node("MatMul", ["a", "w"], ["y"])], "fgemm",
                          [helper.make_tensor_value_info("a", TensorProto.FLOAT, [m, k])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [m, n])],
                          [wf])
    f = os.path.join(d, "fgemm.onnx")
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), f)
    np.save(os.path.join(d, "a_u8.npy"), rng.integers(0, 256, size=(m, k), dtype=np.uint8))
    np.save(os.path.join(d, "a_f32.npy"), rng.standard_normal((m, k)).astype(np.float32))
    return q, f


def bench_kiln(args, model, inputs, label):
    from bench import run_json
    cmd = [args.kiln_bench, model, "--backend", "cpu", "--threads", str(args.threads),
           "--warmup", str(args.warmup), "--runs", str(args.runs), "--budget-s",
           str(args.budget), "--over-budget", "reduce"]
    for k, v in inputs.items():
        cmd += ["--input", f"{k}={v}"]
    res = run_json(cmd, timeout=args.budget * 3 + 900)
    show(label, res)
    return res


def bench_ort(args, mdir, model, label):
    from bench import run_json
    od = os.path.join(args.out_dir, "quant", "ort-out")
    os.makedirs(od, exist_ok=True)
    cmd = [sys.executable, os.path.join(HERE, "bench.py"), "ort", mdir, od, "--threads",
           str(args.threads), "--warmup", str(args.warmup), "--runs", str(args.runs),
           "--budget", str(args.budget), "--model", model]
    res = run_json(cmd, timeout=args.budget * 3 + 900)
    show(label, res)
    return res


def show(label, res):
    if "median_ms" in res:
        print(f"  {label:34s} {res['median_ms']:9.3f} ms ({res['runs']} runs)", flush=True)
    else:
        print(f"  {label:34s} {res.get('error', '')}"[:300], flush=True)


def ort_quantize(src, dst, calib):
    """ONNX Runtime's own static quantizer: QDQ, per-channel s8 weights, u8
    activations, minmax over the calibration samples."""
    from onnxruntime.quantization import (CalibrationDataReader, CalibrationMethod,
                                          QuantFormat, QuantType, quantize_static)

    class Reader(CalibrationDataReader):
        def __init__(self):
            self.it = iter(calib)

        def get_next(self):
            return next(self.it, None)

    quantize_static(src, dst, Reader(), quant_format=QuantFormat.QDQ, per_channel=True,
                    activation_type=QuantType.QUInt8, weight_type=QuantType.QInt8,
                    calibrate_method=CalibrationMethod.MinMax)


def ort_sqnr(fp32, int8, held):
    import onnxruntime as ort
    so = ort.SessionOptions()
    so.intra_op_num_threads = 2
    a = ort.InferenceSession(fp32, so, providers=["CPUExecutionProvider"])
    b = ort.InferenceSession(int8, so, providers=["CPUExecutionProvider"])
    import numpy as np
    ref, got = [], []
    for feed in held:
        ref.append(a.run(None, feed)[0])
        got.append(b.run(None, feed)[0])
    return sqnr(np.concatenate(ref), np.concatenate(got))


def kiln_sqnr_of(args, model, mdir_inputs, held_files, ref_model):
    """SQNR of kiln running `model` against kiln running the float model,
    on the held-out files (kiln run, interpreter-free: cpu)."""
    import numpy as np
    vals = []
    for feed in held_files:
        outs = []
        for mm in (ref_model, model):
            od = os.path.join(args.out_dir, "quant", "kiln-run")
            os.makedirs(od, exist_ok=True)
            cmd = [args.kiln, "run", mm, "--backend", "cpu", "--output-dir", od]
            for k, v in feed.items():
                cmd += ["--input", f"{k}={v}"]
            subprocess.run(cmd, check=True, capture_output=True, timeout=900)
            name = sorted(f for f in os.listdir(od) if f.endswith(".npy"))[0]
            outs.append(np.load(os.path.join(od, name)))
        vals.append(outs)
    return sqnr(np.concatenate([v[0] for v in vals]), np.concatenate([v[1] for v in vals]))


def speed_model(args, name, zoo_dir):
    import numpy as np
    from bench import load_manifest
    mdir = os.path.join(zoo_dir, f"{name}-opset{args.opset}")
    man = load_manifest(mdir)
    src = os.path.join(mdir, "model.onnx")
    wd = os.path.join(args.out_dir, "quant", name)
    os.makedirs(wd, exist_ok=True)
    given = {k: np.load(os.path.join(mdir, v)) for k, v in man["inputs"].items()}
    # samples: float inputs uniform in [-1, 1); integer ones (token ids)
    # uniform over the values the zoo's own input uses
    calib, held, cfiles, hfiles = [], [], [], []
    for seed, feeds, files, n in ((1, calib, cfiles, args.calib), (2, held, hfiles, args.eval)):
        rng = np.random.default_rng(seed)
        for i in range(n):
            feed, paths = {}, {}
            for k, v in given.items():
                if np.issubdtype(v.dtype, np.floating):
                    x = rng.uniform(-1, 1, size=v.shape).astype(v.dtype)
                else:
                    x = rng.integers(0, int(v.max()) + 1, size=v.shape).astype(v.dtype)
                p = os.path.join(wd, f"{'calib' if seed == 1 else 'held'}{i}_{k}.npy")
                np.save(p, x)
                feed[k], paths[k] = x, p
            feeds.append(feed)
            files.append(paths)
    r = {"name": name}
    print(f"quant: {name}", flush=True)
    kq = os.path.join(wd, "kiln_int8.kir")
    rep = os.path.join(wd, "kiln_int8.json")
    cmd = [args.kiln, "quantize", src, "--backend", "cpu", "--target-sqnr", "off", "-o", kq,
           "--report", rep]
    for paths in cfiles:
        cmd += [a for k, f in paths.items() for a in ("--input", f"{k}={f}")]
    for paths in hfiles:
        cmd += [a for k, f in paths.items() for a in ("--eval-input", f"{k}={f}")]
    t0 = time.time()
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=3600)
    r["kiln_quantize_s"] = time.time() - t0
    if p.returncode != 0:
        r["kiln_quantize_error"] = (p.stderr or p.stdout).strip()[-400:]
        print("  kiln quantize failed: " + r["kiln_quantize_error"], flush=True)
    else:
        with open(rep) as f:
            rj = json.load(f)
        r["kiln_sqnr"] = rj["outputs"][0]["sqnr_db"]
        tot = sum(n["macs"] for n in rj["nodes"]) or 1
        r["kiln_int8_macs"] = sum(n["macs"] for n in rj["nodes"] if n["runs"] == "int8") / tot
        print(f"  kiln quantize: {r['kiln_quantize_s']:.1f} s, SQNR {r['kiln_sqnr']} dB, "
              f"{100 * r['kiln_int8_macs']:.0f}% of MACs int8 on cpu", flush=True)
    oq = os.path.join(wd, "ort_int8.onnx")
    t0 = time.time()
    try:
        ort_quantize(src, oq, calib)
        r["ort_quantize_s"] = time.time() - t0
        r["ort_sqnr"] = ort_sqnr(src, oq, held)
        print(f"  ORT quantize_static: {r['ort_quantize_s']:.1f} s, SQNR {r['ort_sqnr']:.1f} dB",
              flush=True)
    except Exception as e:  # noqa: BLE001 - reported, not fatal
        r["ort_quantize_error"] = str(e)[:400]
        print("  ORT quantize failed: " + r["ort_quantize_error"], flush=True)
    if os.path.exists(oq):
        try:
            r["kiln_on_ort_sqnr"] = kiln_sqnr_of(args, oq, None, hfiles, src)
        except Exception as e:  # noqa: BLE001
            r["kiln_on_ort_error"] = str(e)[:400]
    inputs = {k: os.path.join(mdir, v) for k, v in man["inputs"].items()}
    r["kiln_fp32"] = bench_kiln(args, src, inputs, "kiln cpu fp32")
    if os.path.exists(kq) and "kiln_quantize_error" not in r:
        r["kiln_int8"] = bench_kiln(args, kq, inputs, "kiln cpu int8 (kiln quantize)")
    if os.path.exists(oq):
        r["kiln_ort_int8"] = bench_kiln(args, oq, inputs, "kiln cpu int8 (ORT's QDQ model)")
    r["ort_fp32"] = bench_ort(args, mdir, src, "ORT fp32")
    if os.path.exists(oq):
        r["ort_int8"] = bench_ort(args, mdir, oq, "ORT int8 (its QDQ model)")
    return r


def sqnr_sweep(args, zoo_dir):
    rows = []
    for name in args.sqnr_models:
        mdir = os.path.join(zoo_dir, f"{name}-opset{args.opset}")
        src = os.path.join(mdir, "model.onnx")
        if not os.path.exists(src):
            rows.append({"name": name, "error": "not exported"})
            continue
        wd = os.path.join(args.out_dir, "quant", "sweep")
        os.makedirs(wd, exist_ok=True)
        rep = os.path.join(wd, f"{name}.json")
        t0 = time.time()
        p = subprocess.run([args.kiln, "quantize", src, "--backend", "cpu", "--random-inputs",
                            str(args.calib), "-o", os.path.join(wd, f"{name}.kir"), "--report",
                            rep], capture_output=True, text=True, timeout=3600)
        row = {"name": name, "s": time.time() - t0}
        if p.returncode != 0:
            row["error"] = (p.stderr or p.stdout).strip()[-300:]
        else:
            with open(rep) as f:
                rj = json.load(f)
            row["sqnr"] = rj["outputs"][0]["sqnr_db"]
            row["fallback"] = [n["name"] for n in rj["nodes"] if n["state"] == "fallback"]
            row["qdq"] = sum(1 for n in rj["nodes"] if n["state"] == "qdq")
            row["nodes"] = len(rj["nodes"])
            tot = sum(n["macs"] for n in rj["nodes"]) or 1
            row["qdq_macs"] = sum(n["macs"] for n in rj["nodes"] if n["state"] == "qdq") / tot
            row["int8_macs"] = sum(n["macs"] for n in rj["nodes"] if n["runs"] == "int8") / tot
            cum = [n["cumulative_sqnr_db"] for n in rj["nodes"]
                   if n["state"] == "qdq" and n["cumulative_sqnr_db"] is not None]
            row["min_cum"] = min(cum) if cum else None
        print(f"  sweep {name:28s} " + (f"SQNR {row['sqnr']} dB, {len(row['fallback'])} "
                                        f"fallback(s), {row['s']:.0f} s" if "sqnr" in row
                                        else row["error"][:200]), flush=True)
        rows.append(row)
    return rows


def fmt_ms(res):
    return f"{res['median_ms']:.2f}" if res and "median_ms" in res else "-"


def ratio(a, b):
    if a and b and "median_ms" in a and "median_ms" in b:
        return f"{b['median_ms'] / a['median_ms']:.2f}x"
    return "-"


def report(res, md_path):
    mi = res["machine"]
    L = [BEGIN, "", "## int8 quantization (`bench/run --quant`)", ""]
    L.append(f"One run on one machine, batch 1, {res['threads']} threads, cpu backend; each "
             f"timing its own process: {res['warmup']} warm-ups then up to {res['runs']} runs, "
             "median ms. docs/quantization.md explains the flow.\n")
    L.append(f"- date: {mi['date']}; machine: {mi['cpu']}, {mi['cores']} cores; kiln "
             f"{mi['kiln']}; {mi['llvm']}")
    la = res["loadavg"]
    L.append(f"- load average at start {la[0][0]:.2f}, at end {la[1][0]:.2f}")
    L.append(f"- whole run: {res['elapsed_s']:.0f} s\n")
    g = res["gemm"]
    L.append(f"**int8 GEMM** ({g['m']}x{g['k']} times {g['k']}x{g['n']}, weights constant): ")
    if "median_ms" in g.get("int8", {}) and "median_ms" in g.get("fp32", {}):
        ops = 2 * g["m"] * g["n"] * g["k"]
        gi = ops / g["int8"]["median_ms"] / 1e6
        gf = ops / g["fp32"]["median_ms"] / 1e6
        L.append(f"QLinearMatMul {g['int8']['median_ms']:.3f} ms = {gi:.0f} GOP/s; MatMul f32 "
                 f"{g['fp32']['median_ms']:.3f} ms = {gf:.0f} GFLOP/s: int8 at **{gi / gf:.2f}x** "
                 "the f32 throughput (target 3x).\n")
    else:
        L.append(f"not measured: int8 {g.get('int8', {}).get('error')}, f32 "
                 f"{g.get('fp32', {}).get('error')}\n")
    L.append("**Speed models** (zoo, opset 17). SQNR in dB against the float model on the "
             "held-out inputs: kiln's from `kiln quantize --report`, ONNX Runtime's against "
             "its own fp32 run, \"kiln on ORT's\" is kiln-cpu running ONNX Runtime's QDQ model "
             "against kiln-cpu fp32.\n")
    L.append("| model | kiln fp32 ms | kiln int8 ms (own model) | kiln int8 / fp32 | kiln int8 "
             "ms (ORT's model) | ORT fp32 ms | ORT int8 ms | kiln int8 vs ORT int8 | SQNR kiln | "
             "SQNR ORT | SQNR kiln on ORT's | MACs int8 on cpu |")
    L.append("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in res["models"]:
        def db(v):
            return "-" if v is None else ("exact" if v == float("inf") else f"{v:.1f}")
        L.append(f"| {r['name']} | {fmt_ms(r.get('kiln_fp32'))} | {fmt_ms(r.get('kiln_int8'))} | "
                 f"{ratio(r.get('kiln_int8'), r.get('kiln_fp32'))} | "
                 f"{fmt_ms(r.get('kiln_ort_int8'))} | {fmt_ms(r.get('ort_fp32'))} | "
                 f"{fmt_ms(r.get('ort_int8'))} | {ratio(r.get('kiln_int8'), r.get('ort_int8'))} | "
                 f"{db(r.get('kiln_sqnr'))} | {db(r.get('ort_sqnr'))} | "
                 f"{db(r.get('kiln_on_ort_sqnr'))} | "
                 f"{100 * r.get('kiln_int8_macs', 0):.0f}% |")
    L.append("")
    L.append("\"kiln int8 / fp32\" and \"vs ORT int8\" are speed-ups (>1 = kiln int8 faster).\n")
    if res["sweep"]:
        L.append(f"**Every zoo CNN at default settings** (`kiln quantize MODEL --backend cpu "
                 f"--random-inputs {res['calib']}`: minmax, per-channel s8 weights, u8 "
                 "activations, target 30 dB with fallback; 4 held-out random samples):\n")
        L.append("| model | output SQNR dB | >= 30 dB | lowest node SQNR dB (cumulative) | "
                 "nodes quantized | fallbacks | MACs quantized | MACs int8 on cpu | quantize s |")
        L.append("|---|---|---|---|---|---|---|---|---|")
        for r in res["sweep"]:
            if "error" in r:
                L.append(f"| {r['name']} | failed: {r['error'][:150]} | | | | | | | |")
                continue
            v = r["sqnr"]
            sv = "exact" if v is None else f"{v:.1f}"
            ok = "yes" if v is None or v >= 30 else "**no**"
            mc = r.get("min_cum")
            L.append(f"| {r['name']} | {sv} | {ok} | "
                     + ("-" if mc is None else f"{mc:.1f}") + f" | {r['qdq']} of {r['nodes']} | "
                     f"{len(r['fallback'])} | {100 * r['qdq_macs']:.0f}% | "
                     f"{100 * r['int8_macs']:.0f}% | {r['s']:.0f} |")
        L.append("")
    for n in res["notes"]:
        L.append(f"- {n}")
    L += ["", END]
    block = "\n".join(L)
    splice(md_path, block)
    return block


def main():
    from bench import machine_info
    a = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    a.add_argument("--build-dir", required=True)
    a.add_argument("--kiln-bench", required=True)
    a.add_argument("--models-dir", required=True)
    a.add_argument("--out-dir", required=True)
    a.add_argument("--report", required=True)
    a.add_argument("--models", default="resnet50,mobilenet_v2,bert")
    a.add_argument("--sqnr-models", default=",".join(CNNS),
                   help="zoo CNNs for the default-settings SQNR table ('' = none)")
    a.add_argument("--opset", type=int, default=17)
    a.add_argument("--threads", type=int, default=2)
    a.add_argument("--calib", type=int, default=8)
    a.add_argument("--eval", type=int, default=4)
    a.add_argument("--warmup", type=int, default=3)
    a.add_argument("--runs", type=int, default=15)
    a.add_argument("--budget", type=float, default=30.0)
    a.add_argument("--gemm", default="256,1024,1024", help="M,N,K of the int8 GEMM")
    args = a.parse_args()
    args.kiln = os.path.join(args.build_dir, "tools", "kiln")
    args.models = [m for m in args.models.split(",") if m]
    args.sqnr_models = [m for m in args.sqnr_models.split(",") if m]

    t0 = time.time()
    load0 = os.getloadavg()
    zoo_dir = os.path.join(args.models_dir, "zoo")
    need = sorted(set(args.models) | set(args.sqnr_models))
    print(f"quant: exporting {','.join(need)} into {zoo_dir} (cached)", flush=True)
    subprocess.run([sys.executable, os.path.join(HERE, "zoo.py"), "gen", zoo_dir, "--models",
                    ",".join(need), "--opsets", str(args.opset)], check=True)
    notes = ["calibration and held-out inputs are uniform random in [-1, 1) (seeds 1 and 2), "
             "not images: the SQNR figures compare quantizers on equal terms, they are not "
             "the accuracy on real data",
             "the zoo's weights are random (torchvision's initialisation): in some models the "
             "activations fade to ~1e-11 by the last block (googlenet, shufflenet_v2), so their "
             "output is the classifier's bias and the output SQNR says little; the lowest "
             "cumulative SQNR over the quantized nodes (from the report) says more there",
             "ONNX Runtime's int8 runs its QDQ model with its own graph optimizations (QDQ "
             "fusion into QLinearConv etc.); kiln runs both QDQ models through fuseqdq, which "
             "makes integer kinds only where the cpu backend declares them"]
    m, n, k = (int(v) for v in args.gemm.split(","))
    gd = os.path.join(args.out_dir, "quant", "gemm")
    os.makedirs(gd, exist_ok=True)
    qf, ff = gemm_models(gd, m, n, k)
    print("quant: int8 GEMM", flush=True)
    gemm = {"m": m, "n": n, "k": k,
            "int8": bench_kiln(args, qf, {"a": os.path.join(gd, "a_u8.npy")}, "QLinearMatMul"),
            "fp32": bench_kiln(args, ff, {"a": os.path.join(gd, "a_f32.npy")}, "MatMul f32")}
    models = [speed_model(args, name, zoo_dir) for name in args.models]
    print("quant: default settings on every CNN", flush=True)
    sweep = sqnr_sweep(args, zoo_dir)
    res = {"machine": machine_info(args.build_dir), "threads": args.threads,
           "warmup": args.warmup, "runs": args.runs, "calib": args.calib, "gemm": gemm,
           "models": models, "sweep": sweep, "notes": notes,
           "loadavg": [load0, os.getloadavg()], "elapsed_s": time.time() - t0}
    os.makedirs(args.out_dir, exist_ok=True)
    with open(os.path.join(args.out_dir, "quant-results.json"), "w") as f:
        json.dump(res, f, indent=1, default=str)
    print(report(res, args.report))


if __name__ == "__main__":
    main()
