#!/usr/bin/env python3
"""`cmake --install` installs the Python package (CMakeLists.txt, "the Python package"): under DESTDIR and a
prefix, <prefix>/share/cuda-blockrun/python/cuda_blockrun holds the modules, and bin/, lib/ and share/ relative links
to the installed wrapper, shim, rebind library and man page; from there, with PYTHONPATH, the package imports and
its wrapper runs.

  test_install_tree.py --build-dir build --python-dir share/cuda-blockrun/python
"""
import argparse
import os
import shutil
import subprocess
import sys
import tempfile

from checks import check, failures, run


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--build-dir", required=True)
    parser.add_argument("--python-dir", required=True, help="CUDA_BLOCKRUN_PYTHON_INSTALL_DIR")
    parser.add_argument("--cmake", default="cmake")
    arguments = parser.parse_args()

    scratch = tempfile.mkdtemp(prefix="cuda_blockrun_install_")
    try:
        prefix = "/opt/cuda-blockrun-test"
        destdir = os.path.join(scratch, "dest")
        result = run([arguments.cmake, "--install", arguments.build_dir, "--prefix", prefix],
                     env=dict(os.environ, DESTDIR=destdir))
        check(result.returncode == 0, "cmake --install with DESTDIR")
        if failures:
            return 1
        python_dir = os.path.join(destdir + prefix, arguments.python_dir)
        package = os.path.join(python_dir, "cuda_blockrun")
        for link in ["bin/cuda-blockrun", "lib/libcuda_blockrun.so", "lib/libcuda_blockrun_rebind.so",
                     "share/man/man1/cuda-blockrun.1"]:
            path = os.path.join(package, link)
            target = os.readlink(path) if os.path.islink(path) else None
            check(target is not None and not os.path.isabs(target) and os.path.isfile(path),
                  f"{link} is a relative link to an installed file ({target})")
        check(os.path.isfile(os.path.join(package, "__init__.py")), "the modules are installed")

        environment = {key: value for key, value in os.environ.items()
                       if not key.startswith(("PYTHON", "CUDA_BLOCKRUN_")) and key != "LD_PRELOAD"}
        environment["PYTHONPATH"] = python_dir
        environment["PYTHONDONTWRITEBYTECODE"] = "1"
        result = run([os.path.join(package, "bin", "cuda-blockrun"), "--version"], cwd=scratch, env=environment)
        check(result.returncode == 0 and result.stdout.startswith("cuda-blockrun "),
              "the package's bin/cuda-blockrun --version")
        result = run([sys.executable, "-c", "import os, cuda_blockrun; print(os.path.realpath(cuda_blockrun.__file__))"],
                     cwd=scratch, env=environment)
        check(result.returncode == 0 and result.stdout.strip().startswith(os.path.realpath(package)),
              f"import cuda_blockrun with PYTHONPATH={python_dir}")
        result = run([sys.executable, "-m", "cuda_blockrun", "--help"], cwd=scratch, env=environment)
        check(result.returncode == 0 and "cuda-blockrun" in result.stdout, "python -m cuda_blockrun --help")
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    if failures:
        print(f"test_install_tree: {len(failures)} failed: " + "; ".join(failures))
        return 1
    print("test_install_tree: the installed package imports and runs")
    return 0


if __name__ == "__main__":
    sys.exit(main())
# SPDX-License-Identifier: MIT
