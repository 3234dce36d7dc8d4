#!/usr/bin/env python3
"""CI test of bench/harness.py on the simulated CUDA stack: the harness runs the C++ workloads under
the configurations, alternates them, counts what the shim blocked, and writes the table; the PyTorch
workloads are skipped with their reason (no torch here), and the training loops' rows and targets are
checked by rendering made-up figures. Timing is not asserted (it means nothing on the simulated stack);
what each configuration did is.

    harness_test.py BUILD_DIR SCRATCH_DIR   (with LD_LIBRARY_PATH pointing at the simulated libraries)
"""
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def render_made_up(out, runs, configs):
    """`render` on made-up runs: the rendered table, and the failures (render failing)."""
    results = {"schema": "cuda-blockrun-bench/1", "command": "made-up figures", "machine": {},
               "workloads": {}, "configs": {config: config for config in configs}, "runs": runs}
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "made-up.json"), "w") as file:
        json.dump(results, file)
    rendered = subprocess.run([sys.executable, os.path.join(HERE, "harness.py"), "render",
                               os.path.join(out, "made-up.json"), "--out", out],
                              capture_output=True, text=True, timeout=60)
    if rendered.returncode != 0:
        return "", [f"render exited {rendered.returncode}: {rendered.stderr[-1000:]}"]
    with open(os.path.join(out, "performance-table.md")) as file:
        return file.read(), []


def check_training_loop_targets(out):
    """`render` on made-up figures of the two PyTorch training loops (no torch here to measure them): each gets
    its row of ratios to native and its training-loop targets checked. Returns the failures."""
    medians = {"native": 4.0, "shim": 4.04, "breadcrumbs": 4.3, "block_one": 4.08}
    runs = [{"workload": workload, "config": config, "repetition": 0, "status": 0, "wall_s": 1.0,
             "metrics": {metric: {"value": value, "unit": "ms"}}}
            for workload, metric in (("train", "train_step"), ("transformer", "transformer_step"))
            for config, value in medians.items()]
    # In one process (bench/bench_switch.py): each run's own ratio against the shim switched off.
    switched = {"shim_switched": [1.01, 1.00, 1.02], "breadcrumbs_switched": [1.03, 1.06, 1.02]}
    runs += [{"workload": workload, "config": config, "repetition": repetition, "status": 0, "wall_s": 1.0,
              "metrics": {f"{metric}_switched_ratio": {"value": value, "unit": "x"}}}
             for workload, metric in (("train", "train_step"), ("transformer", "transformer_step"))
             for config, values in switched.items() for repetition, value in enumerate(values)]
    table, failures = render_made_up(out, runs, {**medians, **switched})
    if failures:
        return failures
    for metric in ("train_step", "transformer_step"):
        for needle in (f"| nothing blocked, training loop, in one process | {metric}_switched_ratio | 1.010 | <= 1.020 "
                       "| met | 1.010 [1.000-1.020] n=3 | yes |",
                       f"| breadcrumbs, training loop, in one process | {metric}_switched_ratio | 1.030 | <= 1.050 | "
                       "met | 1.030 [1.020-1.060] n=3 | no |"):
            if needle not in table:
                failures.append(f"rendered table lacks {needle!r}")
    for metric in ("train_step", "transformer_step"):
        for needle in (f"| {metric} | 1.000 | 1.010 | 1.075 | 1.020 |",
                       f"| nothing blocked, training loop | {metric} | 1.010 | <= 1.020 | met | 1.010 [1.010-1.010] "
                       "n=1 | yes |",
                       f"| one kernel name blocked, training loop | {metric} | 1.020 | <= 1.030 | met |",
                       f"| breadcrumbs, training loop | {metric} | 1.075 | <= 1.050 | missed by 2.38% |"):
            if needle not in table:
                failures.append(f"rendered table lacks {needle!r}")
    return failures


def check_paired_ratios(out):
    """`render` on made-up runs of five repetitions whose native speed moves from one to the next: a
    configuration that is 1.01x its repetition's native in every pair is shown as such, and one whose pairs
    spread across the bound is not called settled. Returns the failures."""
    native = [4.0, 5.0, 6.0, 3.0, 8.0]
    factors = {"native": [1.0] * 5, "shim": [1.01] * 5, "breadcrumbs": [1.00, 1.10, 1.00, 1.10, 1.04]}
    runs = [{"workload": "train", "config": config, "repetition": repetition, "status": 0, "wall_s": 1.0,
             "metrics": {"train_step": {"value": native[repetition] * factor[repetition], "unit": "ms"}}}
            for config, factor in factors.items() for repetition in range(5)]
    table, failures = render_made_up(out, runs, factors)
    if failures:
        return failures
    for needle in ("| train_step | 1.010 [1.010-1.010] n=5 | 1.040 [1.000-1.100] n=5 |",
                   "| nothing blocked, training loop | train_step | 1.010 | <= 1.020 | met | 1.010 [1.010-1.010] n=5 "
                   "| yes |",
                   # the ratio of medians (5.5 / 5.0) says more than any pair does; the pairs do not settle it
                   "| breadcrumbs, training loop | train_step | 1.100 | <= 1.050 | missed by 4.76% | 1.040 "
                   "[1.000-1.100] n=5 | no |"):
        if needle not in table:
            failures.append(f"rendered table lacks {needle!r}")
    return failures


def main():
    build, scratch = sys.argv[1], sys.argv[2]
    out = os.path.join(scratch, "harness_test")
    completed = subprocess.run(
        [sys.executable, os.path.join(HERE, "harness.py"), "run", "--build", build, "--out", out,
         "--repetitions", "2", "--scale", "0.05", "--workloads", "launch_loop,cublas,matmul,transformer",
         "--configs", "native,clb,shim,breadcrumbs,log,block_one,block_all,sanitizer,shim_switched,"
         "breadcrumbs_switched"],
        capture_output=True, text=True, timeout=300)
    failures = []
    if completed.returncode != 0:
        failures.append(f"harness exited {completed.returncode}")
    with open(os.path.join(out, "results.json")) as file:
        results = json.load(file)
    runs = results["runs"]
    by_config = {}
    for run in runs:
        by_config.setdefault((run["workload"], run["config"]), []).append(run)
        if run["status"] != 0:
            failures.append(f"{run['workload']}/{run['config']} exited {run['status']}: {run.get('stderr_tail')}")
    # No torch here: the PyTorch workloads are skipped with their reason, not run and failed.
    for workload in ("matmul", "transformer"):
        if f"skipping workload {workload}: PyTorch with CUDA is not available" not in completed.stdout:
            failures.append(f"{workload} was not skipped with its reason")
    # Run alone without PyTorch (or without a device), the transformer loop says so and exits 0.
    alone = subprocess.run([sys.executable, os.path.join(HERE, "torch_transformer.py"), "--scale", "0.05"],
                           capture_output=True, text=True, timeout=120)
    skipped_alone = alone.returncode == 0 and alone.stdout.startswith("SKIPPED: ")
    if "skipping workload transformer" in completed.stdout and not skipped_alone:
        failures.append(f"torch_transformer.py alone: exit {alone.returncode}, {alone.stdout!r} "
                        f"{alone.stderr[-500:]!r}")
    for workload, metric in (("launch_loop", "empty_launch"), ("cublas", "cublas_sgemm_512")):
        for config in ("native", "clb", "shim", "breadcrumbs", "log", "block_one", "block_all"):
            got = by_config.get((workload, config), [])
            if len(got) != 2:
                failures.append(f"{workload}/{config}: {len(got)} runs, expected 2")
                continue
            for run in got:
                if metric not in run["metrics"]:
                    failures.append(f"{workload}/{config}: no {metric} in {run}")
                if config == "breadcrumbs" and run.get("breadcrumbs_unavailable"):
                    failures.append(f"{workload}/{config}: the shim said breadcrumbs were unavailable")
                if config in ("shim", "breadcrumbs", "block_one", "block_all"):
                    blocked = run.get("blocked")
                    expect_all = config == "block_all" or (config == "block_one" and workload == "launch_loop")
                    if run.get("launches", 0) == 0:
                        failures.append(f"{workload}/{config}: the shim's summary was not read")
                    elif expect_all and blocked != run["launches"]:
                        failures.append(f"{workload}/{config}: {blocked} of {run['launches']} blocked")
                    elif config in ("shim", "breadcrumbs") and blocked != 0:
                        failures.append(f"{workload}/{config}: {blocked} blocked")
        # The benchmark shim switched off for half the bursts: the shim saw as many launches as the shim always
        # on does (the off bursts' launches went past it), and the loop printed what it adds in one process.
        if workload == "launch_loop":
            seen = {run.get("launches") for run in by_config.get((workload, "shim"), [])}
            for config in ("shim_switched", "breadcrumbs_switched"):
                got = by_config.get((workload, config), [])
                if len(got) != 2:
                    failures.append(f"{workload}/{config}: {len(got)} runs, expected 2")
                for run in got:
                    if {run.get("launches")} != seen or run.get("blocked") != 0:
                        failures.append(f"{workload}/{config}: saw {run.get('launches')} launches "
                                        f"({run.get('blocked')} blocked), the shim always on {seen}")
                    for metric in ("launch_call_added", "launch_call_off_median", "launch_call_min"):
                        if metric not in run["metrics"]:
                            failures.append(f"{workload}/{config}: no {metric} in {run['metrics']}")
        # The simulated stack has no compute-sanitizer: its rows are left out, with a message.
        if by_config.get((workload, "sanitizer")) and "compute-sanitizer" not in completed.stdout:
            failures.append("sanitizer rows without compute-sanitizer")
    # Configurations alternate: the first repetition starts with native, the second with the next one.
    first = [run["config"] for run in runs if run["workload"] == "launch_loop" and run["repetition"] == 0]
    second = [run["config"] for run in runs if run["workload"] == "launch_loop" and run["repetition"] == 1]
    if not first or not second or first[0] != "native" or second[0] != "clb":
        failures.append(f"configurations not rotated: {first} then {second}")
    with open(os.path.join(out, "performance-table.md")) as file:
        table = file.read()
    for needle in ("simulated CUDA stack", "| empty_launch |", "| cublas_sgemm_512 |",
                   "cost added per launch", "--block all vs CUDA_LAUNCH_BLOCKING=1",
                   "| shim, breadcrumbs (nothing blocked) |", "breadcrumbs, us added per launch",
                   "nothing blocked, us added per launch", "| launch_call_min |", "Paired ratios to native",
                   "| nothing blocked, us added per launch, in one process | launch_call_added |",
                   "| launch_call_added | shim, breadcrumbs, switched off and on in one process | us a launch |"):
        if needle not in table:
            failures.append(f"table lacks {needle!r}")
    failures.extend(check_training_loop_targets(os.path.join(scratch, "harness_test_render")))
    failures.extend(check_paired_ratios(os.path.join(scratch, "harness_test_paired")))
    for failure in failures:
        print("FAIL:", failure)
    if failures:
        print(completed.stdout[-3000:], completed.stderr[-2000:])
        return 1
    print(f"harness: {len(runs)} runs checked")
    return 0


if __name__ == "__main__":
    sys.exit(main())
# SPDX-License-Identifier: MIT
