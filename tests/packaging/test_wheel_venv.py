#!/usr/bin/env python3
"""The wheel in a fresh virtual environment (issue 39, item 4): built from the staged package, checked, installed
with `pip install --no-index` into a new venv, and run from outside the source tree: `cuda-blockrun --version`
(the console script on the venv's PATH) and `python -m cuda_blockrun --help`.

  test_wheel_venv.py --config build/python/wheel.json --wheel-tool tools/wheel.py --source-dir . \
      [--sim-libdir build/sim/lib] [--demo build/bin/demo-stencil]
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


def demo_through_the_package(venv, environment, workdir, arguments):
    """Issue 39, item 5: the demo through `python -m cuda_blockrun` and through `import cuda_blockrun`, on the
    simulated stack (arguments.sim_libdir, arguments.demo when it was built), from the installed wheel.
    Added with the package's own tests; nothing here yet."""


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--config", required=True)
    parser.add_argument("--wheel-tool", required=True)
    parser.add_argument("--source-dir", required=True)
    parser.add_argument("--sim-libdir")
    parser.add_argument("--demo")
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
