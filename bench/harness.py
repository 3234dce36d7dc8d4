#!/usr/bin/env python3
"""The benchmark harness: every workload under every configuration, on a GPU machine.

    bench/harness.py run --build BUILD --out DIR [--repetitions 5] [--workloads a,b] [--configs a,b]
    bench/harness.py render RESULTS.json [RESULTS.json...] --out DIR

`run` runs each workload (bench/WORKLOADS below) under each configuration (CONFIGS below), repeating
the whole set; within a repetition the configurations of a workload run one after the other, in an
order rotated each repetition, so drift (clocks, thermals, other tenants) hits all of them alike. Every
workload times itself after its own warm-up and synchronizes the GPU before it stops the clock, with
the same inputs in every configuration; the harness only collects the "BENCH <metric> <value> <unit>"
lines they print. compute-sanitizer, being 10-100x slower, runs a shortened version of each workload
(fewer timed iterations, same warm-up), fewer times. Results are written to DIR/results.json after
every run, so an interrupted run keeps what it measured; `render` is then run on it (also at the end
of `run`).

`render` merges result files and writes DIR/performance-table.md (medians, ratios to native, the
added cost per launch of the empty-kernel loop, and the targets of the benchmark issue checked) and
DIR/performance.png (the ratios; needs matplotlib, skipped with a message where it is missing).
Standard library only, apart from matplotlib.
"""

import argparse
import datetime
import json
import os
import platform
import random
import re
import shutil
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SCHEMA = "cuda-blockrun-bench/1"


# ---- the workloads: what runs, the one name "block one" blocks, and the shortened run for the sanitizer ----
# The one name is what a user would name to pin a fault in that workload: the kernel itself in the launch
# loop, a kernel launched once a step in the training loop (the loss), the cuBLAS call (as one unit) in the
# GEMM workloads. (A glob like *gemm* would also name the cuBLAS call, and block each call twice.)
# argv: {build} is the build tree, {bench} this directory, {scale} the iteration scale (1 or sanitizer_scale).
WORKLOADS = {
    "launch_loop": {
        "title": "empty-kernel launch loop (C++, -cudart shared), 200,000 launches",
        "argv": ["{build}/bench/launch_loop", "{launches}"],
        "launches": 200000,
        "block_one": "empty_kernel",
        "sanitizer_scale": 0.05,
    },
    "launch_loop_static": {
        "title": "the same loop with nvcc's default static runtime",
        "argv": ["{build}/bench/launch_loop_static", "{launches}"],
        "launches": 200000,
        "block_one": "empty_kernel",
        "sanitizer_scale": 0.05,
        "metric_suffix": "_static",
    },
    "matmul": {
        "title": "torch.matmul, float32, 1024/2048/4096 (5 x 800/200/30 products)",
        "argv": ["python3", "{bench}/torch_matmul.py", "--scale", "{scale}"],
        "needs_torch": True,
        "block_one": "cublasSgemm_v2",
        "sanitizer_scale": 0.05,
    },
    "train": {
        "title": "PyTorch training loop: MLP with LayerNorm, AdamW, batch 64, 10 x 100 steps",
        "argv": ["python3", "{bench}/torch_train.py", "--scale", "{scale}"],
        "needs_torch": True,
        "block_one": "*nll_loss_forward*",
        "sanitizer_scale": 0.05,
    },
    # An unmodified public loop (PyTorch's nn.Transformer language-modeling tutorial; bench/torch_transformer.py
    # says what it keeps and what differs). Its loss is nn.CrossEntropyLoss, log_softmax then nll_loss: one
    # nll_loss forward kernel a step, the one a user would block to pin a fault in the step, as in `train`.
    "transformer": {
        "title": "PyTorch's nn.Transformer tutorial loop: 2-layer TransformerEncoder LM, SGD, 35 x 20 tokens, "
                 "10 x 100 steps",
        "argv": ["python3", "{bench}/torch_transformer.py", "--scale", "{scale}"],
        "needs_torch": True,
        "block_one": "*nll_loss_forward*",
        "sanitizer_scale": 0.05,
    },
    "cublas": {
        "title": "cublasSgemm loop (C++), 512x512x512, 4000 calls",
        "argv": ["{build}/bench/cublas_loop", "512", "{calls}"],
        "calls": 4000,
        "block_one": "cublasSgemm_v2",
        "sanitizer_scale": 0.05,
    },
}
DEFAULT_WORKLOADS = ["launch_loop", "matmul", "train", "transformer", "cublas"]

# ---- the configurations, in the order the tables show them ----
CONFIGS = {
    "native": {"title": "native"},
    "clb": {"title": "CUDA_LAUNCH_BLOCKING=1", "env": {"CUDA_LAUNCH_BLOCKING": "1"}},
    # The wrapper's run with no mode flag has breadcrumbs (issue 38): "default" is that run, "shim" the bare
    # shim (--breadcrumbs=0), as a bare LD_PRELOAD gives it.
    "default": {"title": "cuda-blockrun, no mode flag (breadcrumbs)", "wrapper": []},
    "shim": {"title": "shim, nothing blocked", "wrapper": ["--breadcrumbs=0"]},
    "breadcrumbs": {"title": "shim, breadcrumbs (nothing blocked)", "wrapper": ["--breadcrumbs"]},
    "breadcrumbs_every_8": {"title": "shim, breadcrumbs, one write per 8 launches",
                            "wrapper": ["--breadcrumbs", "--breadcrumb-every", "8"]},
    "log": {"title": "shim, every launch logged to a file", "wrapper": ["--log-launches", "--log", "{scratch}/launches.%p.log"]},
    "trace": {"title": "shim, --trace (nothing blocked)", "wrapper": ["--trace", "{scratch}/trace.%p.json"]},
    "block_one": {"title": "shim, one name blocked", "wrapper": ["--block", "{block_one}"]},
    "block_one_timed": {"title": "shim, one name blocked, --gpu-time",
                        "wrapper": ["--block", "{block_one}", "--gpu-time"]},
    "block_all": {"title": "shim, --block all", "wrapper": ["--block", "all"]},
    "sanitizer": {"title": "compute-sanitizer memcheck (shortened run)", "sanitizer": True},
    # The benchmark shim, switched off and on inside one process (bench/bench_switch.py): the workloads print
    # what it costs against itself switched off, which the process-to-process spread does not blur.
    "shim_switched": {"title": "shim, nothing blocked, switched off and on in one process", "switched": {}},
    "breadcrumbs_switched": {"title": "shim, breadcrumbs, switched off and on in one process",
                             "switched": {"CUDA_BLOCKRUN_BREADCRUMBS": "1"}},
    "breadcrumbs_every_8_switched": {"title": "shim, one write per 8 launches, switched off and on in one process",
                                     "switched": {"CUDA_BLOCKRUN_BREADCRUMBS": "1",
                                                  "CUDA_BLOCKRUN_BREADCRUMB_EVERY": "8"}},
}
BENCH_SHIM = "libcuda_blockrun_bench.so"  # in the build's lib/ (CMakeLists.txt, CUDA_BLOCKRUN_BENCH_SHIM)

SUMMARY = re.compile(r"summary: (\d+) launch(?:es)?, (\d+) blocked")


def now_iso():
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")


def command_output(argv):
    try:
        return subprocess.run(argv, capture_output=True, text=True, timeout=60).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return ""


def find_sanitizer():
    found = shutil.which("compute-sanitizer")
    if found:
        return found
    for root in (os.environ.get("CUDA_HOME", ""), "/usr/local/cuda"):
        candidate = os.path.join(root, "bin", "compute-sanitizer") if root else ""
        if candidate and os.access(candidate, os.X_OK):
            return candidate
    return None


def machine_facts(build):
    facts = {
        "date": now_iso(),
        "host_cpu": "",
        "cpus": os.cpu_count(),
        "kernel": platform.release(),
        "python": platform.python_version(),
        "gpu": command_output(["nvidia-smi", "--query-gpu=name,driver_version,memory.total", "--format=csv,noheader"]),
        "torch": command_output(
            ["python3", "-c", "import torch, triton; print(torch.__version__, 'CUDA', torch.version.cuda, 'triton', triton.__version__)"]
        ),
        "sanitizer": "",
        "commit": "",
    }
    try:
        with open("/proc/cpuinfo") as cpuinfo:
            for line in cpuinfo:
                if line.startswith("model name"):
                    facts["host_cpu"] = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    version = command_output([os.path.join(build, "bin", "cuda-blockrun"), "--version"])
    facts["cuda_blockrun"] = " ".join(version.split())
    sanitizer = find_sanitizer()
    if sanitizer:
        lines = command_output([sanitizer, "--version"]).splitlines()
        facts["sanitizer"] = next((line for line in lines if "Version" in line), lines[-1] if lines else "")
    # The build tree's record of its source (a tree carried to the GPU machine may travel without .git).
    try:
        with open(os.path.join(build, "source-commit")) as source:
            facts["commit"] = source.read().strip()
    except OSError:
        facts["commit"] = command_output(["git", "-C", HERE, "rev-parse", "--short", "HEAD"])
    return facts


def missing_for(workload, build):
    """Why a workload cannot run on this machine, or None."""
    argv = workload_argv(workload, build, 1.0)
    if argv[0] != "python3" and not os.access(argv[0], os.X_OK):
        return f"{argv[0]} is not built (it needs nvcc at build time)"
    if WORKLOADS[workload].get("needs_torch"):
        probe = subprocess.run(["python3", "-c", "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 3)"],
                               capture_output=True, text=True)
        if probe.returncode != 0:
            return "PyTorch with CUDA is not available to python3"
    return None


def workload_argv(workload, build, scale):
    spec = WORKLOADS[workload]
    values = {
        "build": build,
        "bench": HERE,
        "scale": f"{scale:g}",
        "launches": str(max(1000, int(spec.get("launches", 0) * scale))),
        "calls": str(max(100, int(spec.get("calls", 0) * scale))),
    }
    return [part.format(**values) for part in spec["argv"]]


def config_argv(config, workload, build, scratch, sanitizer, scale, cpus=None):
    """The command line and environment of one run, or None where the configuration cannot run here."""
    spec = CONFIGS[config]
    if spec.get("sanitizer"):
        scale *= WORKLOADS[workload]["sanitizer_scale"]
    argv = workload_argv(workload, build, scale)
    env = dict(os.environ)
    env.update(spec.get("env", {}))
    if "wrapper" in spec:
        values = {"scratch": scratch, "block_one": WORKLOADS[workload]["block_one"]}
        options = [part.format(**values) for part in spec["wrapper"]]
        argv = [os.path.join(build, "bin", "cuda-blockrun"), *options, "--", *argv]
    elif spec.get("sanitizer"):
        if not sanitizer:
            return None
        argv = [sanitizer, "--tool", "memcheck", "--print-limit", "20", *argv]
    elif "switched" in spec:  # preloaded directly: the wrapper preloads the shim users get
        shim = os.path.join(build, "lib", BENCH_SHIM)
        if not os.path.exists(shim):
            return None
        env["LD_PRELOAD"] = ":".join(filter(None, [shim, env.get("LD_PRELOAD")]))
        env.update(spec["switched"])
    if cpus:
        argv = ["taskset", "-c", cpus, *argv]
    return argv, env


def run_once(argv, env, timeout):
    start = time.perf_counter()
    try:
        completed = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=timeout)
        status, stdout, stderr = completed.returncode, completed.stdout, completed.stderr
    except OSError as error:  # a workload not built (no nvcc), an interpreter missing
        status, stdout, stderr = "not runnable", "", str(error)
    except subprocess.TimeoutExpired as expired:
        status = "timeout"
        stdout = expired.stdout.decode() if isinstance(expired.stdout, bytes) else (expired.stdout or "")
        stderr = expired.stderr.decode() if isinstance(expired.stderr, bytes) else (expired.stderr or "")
    wall = time.perf_counter() - start
    metrics = {}
    for line in stdout.splitlines():
        parts = line.split()
        if len(parts) == 4 and parts[0] == "BENCH":
            metrics[parts[1]] = {"value": float(parts[2]), "unit": parts[3]}
    summary = SUMMARY.findall(stderr)
    record = {"status": status, "wall_s": round(wall, 3), "metrics": metrics}
    if summary:
        record["launches"], record["blocked"] = int(summary[-1][0]), int(summary[-1][1])
    if "breadcrumbs unavailable" in stderr:  # the shim ran without them: the row would measure nothing
        record["breadcrumbs_unavailable"] = True
    if status != 0 or not metrics:
        record["stderr_tail"] = stderr[-2000:]
        record["stdout_tail"] = stdout[-1000:]
    return record


def command_run(args):
    build = os.path.abspath(args.build)
    out = os.path.abspath(args.out)
    scratch = os.path.join(out, "scratch")
    os.makedirs(scratch, exist_ok=True)
    workloads = args.workloads.split(",")
    configs = args.configs.split(",")
    for name, table in (("workload", (workloads, WORKLOADS)), ("configuration", (configs, CONFIGS))):
        unknown = [item for item in table[0] if item not in table[1]]
        if unknown:
            sys.exit(f"harness: unknown {name} {', '.join(unknown)}; known: {', '.join(table[1])}")
    # Programs built with -cudart shared find libcudart.so.13 where the toolkit is not registered with ldconfig.
    if "libcudart.so.13" not in command_output(["/sbin/ldconfig", "-p"]):
        library_path = os.environ.get("LD_LIBRARY_PATH")
        os.environ["LD_LIBRARY_PATH"] = "/usr/local/cuda/lib64" + (":" + library_path if library_path else "")
    for workload in list(workloads):
        missing = missing_for(workload, build)
        if missing:
            print(f"harness: skipping workload {workload}: {missing}", flush=True)
            workloads.remove(workload)
    if not workloads:
        sys.exit("harness: no workload can run here")
    if args.cpus and not shutil.which("taskset"):
        sys.exit("harness: --cpus needs taskset (util-linux), which is not installed")
    sanitizer = find_sanitizer()
    if "sanitizer" in configs and not sanitizer:
        print("harness: compute-sanitizer not found: its rows are left out", flush=True)
    switched = [config for config in configs if "switched" in CONFIGS[config]]
    if switched and not os.path.exists(os.path.join(build, "lib", BENCH_SHIM)):
        print(f"harness: {BENCH_SHIM} not built (-DCUDA_BLOCKRUN_BENCH_SHIM=OFF): the rows of "
              f"{', '.join(switched)} are left out", flush=True)
    results = {
        "cpus": args.cpus,
        "schema": SCHEMA,
        "command": " ".join(sys.argv),
        "machine": machine_facts(build),
        "workloads": {name: WORKLOADS[name]["title"] for name in workloads},
        "configs": {name: CONFIGS[name]["title"] for name in configs},
        "block_one": {name: WORKLOADS[name]["block_one"] for name in workloads},
        "runs": [],
    }
    print(json.dumps(results["machine"], indent=1), flush=True)
    path = os.path.join(out, args.results)
    began = time.perf_counter()
    for repetition in range(args.first_repetition, args.first_repetition + args.repetitions):
        for workload in workloads:
            order = configs[repetition % len(configs):] + configs[:repetition % len(configs)]
            for config in order:
                if config == "sanitizer" and repetition - args.first_repetition >= args.sanitizer_repetitions:
                    continue
                spent = time.perf_counter() - began
                if args.time_limit and spent > args.time_limit:
                    print(f"harness: time limit of {args.time_limit} s reached after {spent:.0f} s; stopping",
                          flush=True)
                    return finish(results, path, out)
                prepared = config_argv(config, workload, build, scratch, sanitizer, args.scale, args.cpus)
                if prepared is None:
                    continue
                argv, env = prepared
                record = run_once(argv, env, args.timeout)
                record.update({"workload": workload, "config": config, "repetition": repetition})
                results["runs"].append(record)
                shown = " ".join(f"{k}={v['value']:g}{v['unit']}" for k, v in record["metrics"].items())
                extra = f" launches={record.get('launches')} blocked={record.get('blocked')}" if "launches" in record else ""
                print(f"[{time.perf_counter() - began:6.0f}s] rep {repetition} {workload:12s} {config:10s} "
                      f"exit={record['status']} wall={record['wall_s']:.1f}s {shown}{extra}", flush=True)
                if "stderr_tail" in record:
                    print(record["stderr_tail"][-800:], flush=True)
                for name in os.listdir(scratch):  # per-launch logs are large; their cost is what counts
                    os.unlink(os.path.join(scratch, name))
                with open(path + ".tmp", "w") as file:
                    json.dump(results, file, indent=1)
                os.replace(path + ".tmp", path)
    return finish(results, path, out)


def finish(results, path, out):
    with open(path, "w") as file:
        json.dump(results, file, indent=1)
    render([results], out)
    return 0


# ---- rendering ----
def collect(result_sets):
    """Merges result sets: {metric: {config: [values]}}, units, workload of each metric, and run facts."""
    samples, units, metric_workload, facts = {}, {}, {}, {}
    for results in result_sets:
        for run in results["runs"]:
            if run["status"] != 0:
                continue
            suffix = WORKLOADS.get(run["workload"], {}).get("metric_suffix", "")
            for metric, value in run["metrics"].items():
                metric = metric + suffix
                samples.setdefault(metric, {}).setdefault(run["config"], []).append(value["value"])
                units[metric] = value["unit"]
                metric_workload[metric] = run["workload"]
            key = (run["workload"], run["config"])
            if "blocked" in run:
                facts.setdefault(key, set()).add((run["launches"], run["blocked"]))
    return samples, units, metric_workload, facts


def paired_with_native(result_sets, combine):
    """{metric: {config: [combine(value, native value)]}}: each run against the native run of the same repetition
    of the same result set. On a machine whose speed moves from one process to the next (the H200 machine: +-25%
    on the training loops), a pair taken minutes apart shares the drift that medians over the whole run mix in."""
    paired = {}
    for results in result_sets:
        by_repetition = {}
        for run in results["runs"]:
            if run["status"] != 0:
                continue
            suffix = WORKLOADS.get(run["workload"], {}).get("metric_suffix", "")
            for metric, value in run["metrics"].items():
                by_repetition.setdefault((metric + suffix, run["repetition"]), {})[run["config"]] = value["value"]
        for (metric, _), values in sorted(by_repetition.items()):
            native = values.get("native")
            if not native:
                continue
            for config, value in values.items():
                if config != "native":
                    paired.setdefault(metric, {}).setdefault(config, []).append(combine(value, native))
    return paired


def paired_ratios(result_sets):
    return paired_with_native(result_sets, lambda value, native: value / native)


def paired_differences(result_sets):
    return paired_with_native(result_sets, lambda value, native: value - native)


def median_interval(values, resamples=2000, seed=0):
    """A 95% bootstrap interval of the median (percentile method, seeded: the same figures give the same
    interval)."""
    draw = random.Random(seed)
    medians = sorted(statistics.median(draw.choices(values, k=len(values))) for _ in range(resamples))
    return medians[int(0.025 * resamples)], medians[int(0.975 * resamples) - 1]


def paired_column(values, bound=None, added=False):
    """One paired cell and whether it settles `bound`: "median [low-high] n=N" for ratios, "+median us [+low,
    +high] n=N" for added microseconds (`added`); `settled` is "yes" when the whole 95% interval lies on one side
    of `bound`, "no" when it holds it, "-" without a bound."""
    low, high = median_interval(values)
    middle = statistics.median(values)
    if added:
        text = f"{middle:+.3f} us [{low:+.3f}, {high:+.3f}] n={len(values)}"
    else:
        text = f"{fmt(middle)} [{fmt(low)}-{fmt(high)}] n={len(values)}"
    settled = "-" if bound is None else "yes" if high <= bound or low > bound else "no"
    return text, settled


def ordered_configs(result_sets):
    present = set()
    for results in result_sets:
        present.update(results["configs"])
    return [name for name in CONFIGS if name in present]


def fmt(value, digits=3):
    return f"{value:.{digits}f}"


def render(result_sets, out):
    samples, units, metric_workload, facts = collect(result_sets)
    configs = ordered_configs(result_sets)
    metrics = sorted(samples, key=lambda m: (list(WORKLOADS).index(metric_workload[m]), m))
    ratios = {}
    for metric in metrics:
        native = samples[metric].get("native")
        if not native:
            continue
        base = statistics.median(native)
        ratios[metric] = {c: statistics.median(v) / base for c, v in samples[metric].items()}

    lines = []
    machine = result_sets[0]["machine"]
    if not machine.get("gpu"):
        lines.append("**No GPU: these runs used the simulated CUDA stack (tests/sim); the figures say nothing about "
                     "performance on a GPU.**")
        lines.append("")
    lines.append(f"Machine: {machine.get('gpu')}; host CPU {machine.get('host_cpu')} ({machine.get('cpus')} CPUs); "
                 f"Linux {machine.get('kernel')}; Python {machine.get('python')}; torch {machine.get('torch')}; "
                 f"{machine.get('sanitizer') or 'no compute-sanitizer'}; {machine.get('cuda_blockrun')} "
                 f"(commit {machine.get('commit') or 'unknown'}); {machine.get('date')}.")
    lines.append("")
    for results in result_sets:
        lines.append(f"Command: `{results['command']}`")
    lines.append("")
    titles = [CONFIGS[c]["title"] for c in configs]
    lines.append("Ratio to native (median of the runs; lower is better):")
    lines.append("")
    lines.append("| workload | " + " | ".join(titles) + " |")
    lines.append("|---" * (len(configs) + 1) + "|")
    for metric in ratios:
        row = [metric]
        for config in configs:
            ratio = ratios.get(metric, {}).get(config)
            row.append(fmt(ratio) if ratio is not None else "-")
        lines.append("| " + " | ".join(row) + " |")
    lines.append("")
    paired = paired_ratios(result_sets)
    if paired:
        lines.append("Paired ratios to native: each run over the native run of its repetition; the median over the "
                     "repetitions, its 95% bootstrap interval, and the number of pairs. Where the interval holds a "
                     "target's bound, the runs cannot say on which side of it the configuration lies:")
        lines.append("")
        lines.append("| workload | " + " | ".join(titles[1:]) + " |")
        lines.append("|---" * len(configs) + "|")
        for metric in ratios:
            row = [metric]
            for config in configs[1:]:
                values = paired.get(metric, {}).get(config)
                if not values:
                    row.append("-")
                    continue
                row.append(paired_column(values)[0])
            lines.append("| " + " | ".join(row) + " |")
        lines.append("")
    lines.append("Medians, with the fastest and slowest run and the number of runs:")
    lines.append("")
    lines.append("| workload | unit | " + " | ".join(titles) + " |")
    lines.append("|---" * (len(configs) + 2) + "|")
    for metric in metrics:
        row = [metric, units[metric] + (" per launch" if metric.startswith("empty_launch") else "")]
        for config in configs:
            values = samples[metric].get(config)
            if not values:
                row.append("-")
                continue
            row.append(f"{fmt(statistics.median(values))} [{fmt(min(values))}-{fmt(max(values))}] n={len(values)}")
        lines.append("| " + " | ".join(row) + " |")
    lines.append("")
    launch_metrics = [m for m in metrics if m.startswith("empty_launch") and "native" in samples[m]]
    if launch_metrics:
        lines.append("Empty-kernel loop, cost added per launch to native (us, medians):")
        lines.append("")
        lines.append("| loop | " + " | ".join(titles[1:]) + " |")
        lines.append("|---" * len(configs) + "|")
        for metric in launch_metrics:
            base = statistics.median(samples[metric]["native"])
            row = [metric]
            for config in configs[1:]:
                values = samples[metric].get(config)
                row.append(f"{statistics.median(values) - base:+.3f}" if values else "-")
            lines.append("| " + " | ".join(row) + " |")
        lines.append("")
    switched = [m for m in metrics if is_switched_metric(m)]
    if switched:
        lines.append("In one process, the shim against itself switched off (bench/bench_switch.py): each run's figure "
                     "is the median over its pairs of neighbouring chunks or bursts, one with the shim on and one "
                     "off; here the median over the runs, its 95% bootstrap interval, and the number of runs:")
        lines.append("")
        lines.append("| measure | configuration | unit | median [95%] n |")
        lines.append("|---|---|---|---|")
        for metric in switched:
            for config, values in samples[metric].items():
                added = "_added" in metric
                lines.append(f"| {metric} | {CONFIGS[config]['title']} | {'us a launch' if added else 'on / off'} | "
                             f"{paired_column(values, added=added)[0]} |")
        lines.append("")
    lines.append("Launches seen and blocked by the shim in each run (from its summary line):")
    lines.append("")
    block_one = {}
    for results in result_sets:
        block_one.update(results.get("block_one", {}))
    for (workload, config), seen in sorted(facts.items()):
        pairs = ", ".join(f"{launches} launches, {blocked} blocked" for launches, blocked in sorted(seen))
        name = f" (`--block '{block_one.get(workload)}'`)" if config == "block_one" else ""
        lines.append(f"- {workload}, {CONFIGS[config]['title']}{name}: {pairs}")
    lines.append("")
    lines.extend(targets(ratios, samples, paired, paired_differences(result_sets)))
    failed = [run for results in result_sets for run in results["runs"] if run["status"] != 0]
    if failed:
        lines.append("")
        lines.append("Runs that failed (left out of the tables):")
        for run in failed:
            lines.append(f"- {run['workload']} / {run['config']} / repetition {run['repetition']}: exit {run['status']}")
    text = "\n".join(lines) + "\n"
    with open(os.path.join(out, "performance-table.md"), "w") as file:
        file.write(text)
    print(text, flush=True)
    plot(ratios, metrics, configs, machine, os.path.join(out, "performance.png"))


def is_switched_metric(metric):
    """A figure of the shim against itself switched off, in one process (`launch_call_added`,
    `train_step_switched_ratio`, with a workload's suffix)."""
    return "_added" in metric or "_switched_ratio" in metric


def targets(ratios, samples, paired, differences):
    """The targets of the benchmark and breadcrumbs issues, each checked against the medians, with the paired
    ratios' (or differences') interval beside it: `settled` when the whole interval lies on one side of the
    bound."""
    rows = []

    def check(label, metric, config, limit, against=None):
        ratio = ratios.get(metric, {}).get(config)
        if ratio is None:
            return
        bound = ratios.get(metric, {}).get(against) if against else limit
        if bound is None:
            return
        verdict = "met" if ratio <= bound else f"missed by {100 * (ratio / bound - 1):.2f}%"
        target = f"<= {CONFIGS[against]['title']} ({fmt(bound)})" if against else f"<= {fmt(bound)}"
        pairs, settled = "-", "-"
        if not against and paired.get(metric, {}).get(config):
            pairs, settled = paired_column(paired[metric][config], bound)
        rows.append(f"| {label} | {metric} | {fmt(ratio)} | {target} | {verdict} | {pairs} | {settled} |")

    def check_added(label, metric, config, limit):
        values, native = samples[metric].get(config), samples[metric].get("native")
        if not values or not native:
            return
        added = statistics.median(values) - statistics.median(native)
        verdict = "met" if added <= limit else f"missed by {added - limit:.3f} us"
        pairs, settled = "-", "-"
        if differences.get(metric, {}).get(config):
            pairs, settled = paired_column(differences[metric][config], limit, added=True)
        rows.append(f"| {label} | {metric} | {added:+.3f} us | <= {limit:g} us | {verdict} | {pairs} | {settled} |")

    for metric in sorted(ratios):
        if metric.startswith("matmul_"):
            check("nothing blocked, matmuls", metric, "shim", 1.01)
    training_loops = ("train_step", "transformer_step")  # the MLP loop, and the public nn.Transformer one
    for metric in training_loops:
        check("nothing blocked, training loop", metric, "shim", 1.02)
    for metric in training_loops:
        check("one kernel name blocked, training loop", metric, "block_one", 1.03)
    for metric in sorted(ratios):
        check("--block all vs CUDA_LAUNCH_BLOCKING=1", metric, "block_all", None, against="clb")
    for metric in training_loops:
        check("breadcrumbs, training loop", metric, "breadcrumbs", 1.05)
    for metric in sorted(samples):
        if metric.startswith(("empty_launch", "launch_call")) and not is_switched_metric(metric):
            # the whole loop, and its bursts (the host alone)
            check_added("nothing blocked, us added per launch", metric, "shim", 0.15)
            check_added("breadcrumbs, us added per launch", metric, "breadcrumbs", 1.0)

    def check_switched(label, metric, config, limit):
        values = samples[metric].get(config)
        if not values:
            return
        added = "_added" in metric
        measured = statistics.median(values)
        if added:
            verdict = "met" if measured <= limit else f"missed by {measured - limit:.3f} us"
            shown, bound = f"{measured:+.3f} us", f"<= {limit:g} us"
        else:
            verdict = "met" if measured <= limit else f"missed by {100 * (measured / limit - 1):.2f}%"
            shown, bound = fmt(measured), f"<= {fmt(limit)}"
        pairs, settled = paired_column(values, limit, added=added)
        rows.append(f"| {label}, in one process | {metric} | {shown} | {bound} | {verdict} | {pairs} | {settled} |")

    for metric in sorted(samples):
        if "_added" in metric:
            check_switched("nothing blocked, us added per launch", metric, "shim_switched", 0.15)
            check_switched("breadcrumbs, us added per launch", metric, "breadcrumbs_switched", 1.0)
        elif "_switched_ratio" in metric and metric.startswith(training_loops):
            check_switched("nothing blocked, training loop", metric, "shim_switched", 1.02)
            check_switched("breadcrumbs, training loop", metric, "breadcrumbs_switched", 1.05)
            check_switched("breadcrumbs every 8, training loop", metric, "breadcrumbs_every_8_switched", 1.05)
    if not rows:
        return []
    return ["Targets (ratios to native, medians; paired: as in the table above, or for added microseconds each "
            "run minus its repetition's native run; in one process: each run's own figure against the shim "
            "switched off, the median over the runs and its interval):", "",
            "| target | workload | measured | bound | verdict | paired [95%] | settled |",
            "|---|---|---|---|---|---|---|", *rows]


def plot(ratios, metrics, configs, machine, path):
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("harness: matplotlib is not installed: no plot (the table has the same figures)", flush=True)
        return
    shown = [m for m in metrics if m in ratios]
    others = [c for c in configs if c != "native"]
    if not shown or not others:
        return
    figure, axes = plt.subplots(figsize=(max(8, 1.6 * len(shown)), 5.2))
    width = 0.8 / len(others)
    for index, config in enumerate(others):
        xs = [i + (index - (len(others) - 1) / 2) * width for i in range(len(shown))]
        ys = [ratios[m].get(config, float("nan")) for m in shown]
        bars = axes.bar(xs, ys, width, label=CONFIGS[config]["title"])
        for x, y in zip(xs, ys):
            if y == y:
                axes.text(x, y * 1.03, f"{y:.2f}", ha="center", va="bottom", fontsize=6, rotation=90)
        del bars
    axes.axhline(1.0, color="black", linewidth=0.8)
    axes.set_yscale("log")
    axes.set_ylabel("time / native time (median, log scale)")
    axes.set_xticks(range(len(shown)))
    axes.set_xticklabels(shown, rotation=15)
    axes.set_title(f"cuda-blockrun: cost against native, {machine.get('gpu', '').split(',')[0]}")
    axes.legend(fontsize=7, loc="upper left")
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    print(f"harness: wrote {path}", flush=True)


def command_render(args):
    result_sets = []
    for path in args.results:
        with open(path) as file:
            results = json.load(file)
        if results.get("schema") != SCHEMA:
            sys.exit(f"harness: {path} is not a result file of this harness (schema {results.get('schema')!r})")
        result_sets.append(results)
    os.makedirs(args.out, exist_ok=True)
    render(result_sets, args.out)
    return 0


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    run = commands.add_parser("run", help="run the workloads under the configurations")
    run.add_argument("--build", required=True, help="the build tree (with bin/cuda-blockrun and bench/)")
    run.add_argument("--out", required=True, help="where results.json, the table and the plot go")
    run.add_argument("--results", default="results.json", help="the result file's name in --out")
    run.add_argument("--repetitions", type=int, default=5)
    run.add_argument("--sanitizer-repetitions", type=int, default=3)
    run.add_argument("--first-repetition", type=int, default=0,
                     help="number the repetitions from here (a run continued in a second call: its rotation goes on)")
    run.add_argument("--workloads", default=",".join(DEFAULT_WORKLOADS), help=f"of {', '.join(WORKLOADS)}")
    run.add_argument("--configs", default=",".join(CONFIGS), help=f"of {', '.join(CONFIGS)}")
    run.add_argument("--scale", type=float, default=1.0,
                     help="multiplies every workload's timed iterations, in every configuration (a quick run: 0.1)")
    run.add_argument("--cpus", help="run every process pinned to these CPUs (taskset -c LIST, e.g. 2-5): less "
                     "run-to-run spread on a shared machine")
    run.add_argument("--timeout", type=float, default=300, help="seconds one run may take")
    run.add_argument("--time-limit", type=float, default=0, help="start no run after this many seconds (0: none)")
    render_parser = commands.add_parser("render", help="merge result files into the table and the plot")
    render_parser.add_argument("results", nargs="+")
    render_parser.add_argument("--out", required=True)
    args = parser.parse_args()
    return command_run(args) if args.command == "run" else command_render(args)


if __name__ == "__main__":
    sys.exit(main())
# SPDX-License-Identifier: MIT
