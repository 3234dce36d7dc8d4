# SPDX-License-Identifier: MIT
"""`python -m cuda_blockrun [options] script.py args...` (or `-m module`, `-c code`): the wrapper's options and
semantics, --localize included, because it is the wrapper: this execs cuda-blockrun with the script run by this
interpreter. `python -m cuda_blockrun report ...` and the other commands go to the wrapper as they are.
`wrapper()` is the `cuda-blockrun` command a pip install puts on PATH."""

import os
import sys
import tempfile

from . import _native

PRIVATE_REPORT_DIR = "PYTHON_CUDA_BLOCKRUN_PRIVATE_REPORT_DIR"


def _exec_wrapper(arguments):
    if not os.access(_native.WRAPPER, os.X_OK):
        sys.exit("cuda_blockrun: the wrapper is missing at %s; is the package installed completely?" % _native.WRAPPER)
    os.execv(_native.WRAPPER, [_native.WRAPPER] + arguments)


def wrapper():
    """The `cuda-blockrun` command of a pip install."""
    _exec_wrapper(sys.argv[1:])


def main():
    arguments = sys.argv[1:]
    if arguments and arguments[0] == "report":
        _exec_wrapper(arguments)
    options = [a for a in arguments if a.startswith("--")]
    asks_report = any(a == "--report" or a.startswith("--report=") or a == "--localize" for a in options)
    runs_program = any(not a.startswith("-") for a in arguments) or "-m" in arguments or "-c" in arguments
    if runs_program and not asks_report and not os.environ.get("CUDA_BLOCKRUN_REPORT"):
        # A report that the traceback's note reads (cuda_blockrun.first_error()); the program's first Python process
        # removes it at exit (__init__.py).
        directory = tempfile.mkdtemp(prefix="cuda-blockrun-")
        os.environ["CUDA_BLOCKRUN_REPORT"] = os.path.join(directory, "report.%p.jsonl")
        os.environ[PRIVATE_REPORT_DIR] = directory
    _exec_wrapper(["--python", sys.executable] + arguments)


if __name__ == "__main__":
    main()
