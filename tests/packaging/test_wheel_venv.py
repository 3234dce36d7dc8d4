#!/usr/bin/env python3
"""The wheel in a fresh virtual environment (issue 39, item 4): built from the staged package, checked, installed
with `pip install --no-index` into a new venv, and run from outside the source tree: `cuda-blockrun --version`
(the console script on the venv's PATH) and `python -m cuda_blockrun --help`; then, on the simulated stack, a
demo through `python -m cuda_blockrun`, through `import cuda_blockrun` and the C++ demo through the console script.

  test_wheel_venv.py --config build/python/wheel.json --wheel-tool tools/wheel.py --source-dir . \
      [--sim-libdir build/sim/lib] [--demo build/bin/demo-stencil] [--launch-lib build/lib/libpython_launch_lib.so]
"""
import argparse
import glob
import json
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile

from checks import check, failures, run


def clean_environment(venv):
    """The venv's bin first on PATH; nothing of the build tree or a shim from the caller."""
    environment = {key: value for key, value in os.environ.items()
                   if not key.startswith(("PYTHON", "PIP_", "CUDA_BLOCKRUN_", "VIRTUAL_ENV")) and key != "LD_PRELOAD"}
    environment["PATH"] = os.path.join(venv, "bin") + os.pathsep + environment.get("PATH", "/usr/bin:/bin")
    environment["VIRTUAL_ENV"] = venv
    environment["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    return environment


# A Python program with a known fault, for the simulated stack: tests/python/launch_lib.cpp's launches, the
# stencil faulting (CUDA_SIM_FAULT=stencil:1) and surfacing at the next launch, never at its own line.
DEMO = """\
import ctypes, sys
{first_line}
lib = ctypes.CDLL(sys.argv[1])
lib.launch_fill()
lib.launch_stencil()  # the culprit
lib.launch_fill()
if lib.synchronize():
    raise RuntimeError("CUDA error: an illegal memory access was encountered")
"""


def demo_through_the_package(venv, environment, workdir, arguments):
    """Issue 39, item 5: from the installed wheel, on the simulated stack, the demo through `python -m cuda_blockrun`
    and through `import cuda_blockrun`, and the C++ demo through the venv's `cuda-blockrun`: each names the
    culprit exactly, after the traceback for the Python ones."""
    if not arguments.sim_libdir or not arguments.launch_lib:
        check(False, "the demo needs --sim-libdir and --launch-lib")
        return
    python = os.path.join(venv, "bin", "python")
    simulated = dict(environment, LD_LIBRARY_PATH=arguments.sim_libdir, CUDA_SIM_FAULT="stencil:1")
    line = DEMO.splitlines().index("lib.launch_stencil()  # the culprit") + 1
    for door, first_line, command in (
            ("python -m cuda_blockrun", "", [python, "-m", "cuda_blockrun"]),
            ("import cuda_blockrun", "import cuda_blockrun", [python])):
        script = os.path.join(workdir, "demo_%s.py" % ("import" if first_line else "dash_m"))
        with open(script, "w") as file:
            file.write(DEMO.format(first_line=first_line))
        result = run(command + [script, arguments.launch_lib], cwd=workdir, env=simulated)
        note = result.stderr[result.stderr.rfind("RuntimeError: CUDA error"):]
        check(result.returncode == 1 and "[cuda-blockrun] culprit (exact, by breadcrumbs): stencil(" in note
              and "Python: %s:%d" % (script, line) in note,
              "the demo through %s names the stencil launch and its line after the traceback" % door)
    if arguments.demo and os.path.exists(arguments.demo):
        result = run(["cuda-blockrun", "--block", "all", "--", arguments.demo], cwd=workdir,
                     env=dict(simulated, CUDA_SIM_FAULT="stencil:13"))
        check("launch #38 (stencil#13)" in result.stderr and "blocking synchronize after the launch" in result.stderr,
              "the C++ demo through the venv's cuda-blockrun names stencil#13")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--config", required=True)
    parser.add_argument("--wheel-tool", required=True)
    parser.add_argument("--source-dir", required=True)
    parser.add_argument("--sim-libdir")
    parser.add_argument("--demo")
    parser.add_argument("--launch-lib")
    parser.add_argument("--keep", action="store_true", help="keep the scratch directory")
    arguments = parser.parse_args()

    scratch = tempfile.mkdtemp(prefix="cuda_blockrun_wheel_")
    try:
        # The wheel, as `cmake --build build --target wheel` makes it (into the scratch directory).
        dist = os.path.join(scratch, "dist")
        result = run([sys.executable, arguments.wheel_tool, "build", "--config", arguments.config, "--out-dir", dist])
        check(result.returncode == 0, "the wheel is built")
        wheels = glob.glob(os.path.join(dist, "*.whl"))
        check(len(wheels) == 1, f"one wheel: {wheels}")
        if failures:
            return 1
        wheel = wheels[0]
        result = run([sys.executable, arguments.wheel_tool, "verify", wheel])
        check(result.returncode == 0, "its RECORD, tag, modes and entry points")
        with zipfile.ZipFile(wheel) as archive:
            names = archive.namelist()
        print("\n".join("  " + name for name in names))
        for name in ["cuda_blockrun/__init__.py", "cuda_blockrun/__main__.py", "cuda_blockrun/bin/cuda-blockrun",
                     "cuda_blockrun/lib/libcuda_blockrun.so", "cuda_blockrun/lib/libcuda_blockrun_rebind.so",
                     "cuda_blockrun/share/man/man1/cuda-blockrun.1"]:
            check(name in names, f"the wheel holds {name}")

        # A fresh venv, with only the wheel installed; everything below runs outside the source tree.
        venv = os.path.join(scratch, "venv")
        result = run([sys.executable, "-m", "venv", venv])
        check(result.returncode == 0, "python3 -m venv")
        if failures:
            return 1
        environment = clean_environment(venv)
        python = os.path.join(venv, "bin", "python")
        result = run([python, "-m", "pip", "install", "--no-index", "--no-cache-dir", wheel], cwd=scratch,
                     env=environment)
        check(result.returncode == 0, "pip install --no-index the wheel")
        if failures:
            return 1

        console_script = shutil.which("cuda-blockrun", path=environment["PATH"])
        check(console_script == os.path.join(venv, "bin", "cuda-blockrun"),
              f"cuda-blockrun on PATH is the venv's console script ({console_script})")
        result = run(["cuda-blockrun", "--version"], cwd=scratch, env=environment)
        version = result.stdout.strip()
        with open(arguments.config) as file:
            expected = "cuda-blockrun " + json.load(file)["version"]
        check(result.returncode == 0 and version.startswith(expected),
              f"cuda-blockrun --version prints {expected!r} ({version!r})")

        result = run([python, "-m", "cuda_blockrun", "--help"], cwd=scratch, env=environment)
        check(result.returncode == 0 and "cuda-blockrun" in result.stdout,
              "python -m cuda_blockrun --help")

        # The package is the installed one, outside the source tree, with the binaries executable.
        result = run([python, "-c", "import os, cuda_blockrun; print(os.path.dirname(cuda_blockrun.__file__))"],
                     cwd=scratch, env=environment)
        package = result.stdout.strip()
        source = os.path.realpath(arguments.source_dir)
        check(result.returncode == 0 and package.startswith(venv) and not package.startswith(source + os.sep),
              f"import cuda_blockrun finds the venv's package ({package})")
        for binary in ["bin/cuda-blockrun", "lib/libcuda_blockrun.so", "lib/libcuda_blockrun_rebind.so"]:
            path = os.path.join(package, binary)
            check(os.path.isfile(path) and not os.path.islink(path) and os.access(path, os.X_OK),
                  f"{binary} is an executable file in the installed package")

        demo_through_the_package(venv, environment, scratch, arguments)
    finally:
        if arguments.keep:
            print(f"kept {scratch}")
        else:
            shutil.rmtree(scratch, ignore_errors=True)
    if failures:
        print(f"test_wheel_venv: {len(failures)} failed: " + "; ".join(failures))
        return 1
    print("test_wheel_venv: the wheel installs into a fresh venv and runs")
    return 0


if __name__ == "__main__":
    sys.exit(main())
# SPDX-License-Identifier: MIT
