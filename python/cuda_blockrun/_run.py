# SPDX-License-Identifier: MIT
"""What `python -m cuda_blockrun [options] script.py args...` runs under the wrapper (tools/cuda-blockrun, --python):
`python -m cuda_blockrun._run script.py args...` (or `-m module args...`, `-c code args...`), with the shim already
preloaded. It adds the verdict's note to the traceback (importing the package), then runs the program as the
interpreter would have: as __main__, with its own sys.argv and sys.path[0]."""

import os
import runpy
import sys

import cuda_blockrun  # noqa: F401  (preloaded: installs the traceback's note only)
from cuda_blockrun import _traceback


def main():
    _traceback.runner_files.update({os.path.abspath(__file__), runpy.__file__, "<frozen runpy>"})
    arguments = sys.argv[1:]
    if not arguments:
        sys.exit("usage: python -m cuda_blockrun [options] (script.py | -m module | -c code) [args...]")
    if arguments[0] == "-m" and len(arguments) >= 2:
        sys.argv = [arguments[1]] + arguments[2:]
        sys.path[0] = os.getcwd()
        runpy.run_module(arguments[1], run_name="__main__", alter_sys=True)
    elif arguments[0] == "-c" and len(arguments) >= 2:
        sys.argv = ["-c"] + arguments[2:]
        sys.path[0] = ""
        main_module = sys.modules["__main__"]
        exec(compile(arguments[1], "<string>", "exec"), main_module.__dict__)
    else:
        sys.argv = arguments
        sys.path[0] = os.path.dirname(os.path.abspath(arguments[0]))
        runpy.run_path(os.path.abspath(arguments[0]), run_name="__main__")


if __name__ == "__main__":
    main()
