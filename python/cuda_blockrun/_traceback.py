# SPDX-License-Identifier: MIT
"""Where the package hooks into the interpreter: after each extension module or ctypes library loads (to bind it
to the shim, shim/rebind.cpp), and after the traceback of an uncaught CUDA error (the verdict's note), in a plain
process through sys.excepthook and threading.excepthook, in IPython and Jupyter through the shell's own
set_custom_exc. Each hook chains to the one it found."""

import ctypes
import importlib.machinery
import sys
import threading

from . import _verdict

_installed = False
_watching = False


def watch_loads(after_load):
    """Calls `after_load()` after every extension module and ctypes library the interpreter loads from now on:
    before any of their code calls CUDA (a module's code runs after its load; a library's after the program
    asks it for a function)."""
    global _watching
    if _watching:
        return
    _watching = True
    loader = importlib.machinery.ExtensionFileLoader
    create_module = loader.create_module

    def create_module_then_bind(self, spec):
        try:
            return create_module(self, spec)
        finally:
            after_load()

    loader.create_module = create_module_then_bind
    cdll_init = ctypes.CDLL.__init__

    def cdll_init_then_bind(self, *args, **kwargs):
        try:
            cdll_init(self, *args, **kwargs)
        finally:
            after_load()

    ctypes.CDLL.__init__ = cdll_init_then_bind


def _ipython_shell():
    ipython = sys.modules.get("IPython")
    get = getattr(ipython, "get_ipython", None)
    return get() if get else None


def _write_note(exception, first_error, in_notebook, stream):
    try:
        if not _verdict.is_cuda_error(exception):
            return
        lines = _verdict.note_lines(first_error(), in_notebook)
        stream.write("\n".join(lines) + "\n")
        stream.flush()
    except Exception:  # the note must never hide the program's own error
        pass


# The files of `python -m cuda_blockrun`'s runner (_run.py and runpy), whose frames sit above the program's own at
# the top of a traceback: left out, so that the traceback reads as the program run directly would print it.
runner_files = set()


def _without_runner(traceback):
    while traceback is not None and traceback.tb_next is not None:
        if traceback.tb_frame.f_code.co_filename not in runner_files:
            break
        traceback = traceback.tb_next
    return traceback


def install(first_error):
    """Adds the verdict's note after the traceback of an uncaught CUDA error; once."""
    global _installed
    if _installed:
        return
    _installed = True
    previous_hook = sys.excepthook

    def excepthook(kind, value, traceback):
        if runner_files and traceback is not None:
            traceback = _without_runner(traceback)
            value = value.with_traceback(traceback)  # what the interpreter's own hook prints
        previous_hook(kind, value, traceback)
        _write_note(value, first_error, False, sys.stderr)

    sys.excepthook = excepthook
    previous_thread_hook = threading.excepthook

    def thread_excepthook(arguments):
        previous_thread_hook(arguments)
        _write_note(arguments.exc_value, first_error, False, sys.stderr)

    threading.excepthook = thread_excepthook
    shell = _ipython_shell()
    if shell is not None:
        _install_in_ipython(shell, first_error)


def _install_in_ipython(shell, first_error):
    # IPython shows a cell's exception itself (sys.excepthook is not called): its custom handler shows the usual
    # traceback, then the note. A handler set before ours keeps its exception types.
    previous_types = tuple(getattr(shell, "custom_exceptions", ()) or ())
    previous_handler = getattr(shell, "CustomTB", None)

    def handler(self, kind, value, traceback, tb_offset=None):
        if previous_types and previous_handler and issubclass(kind, previous_types):
            result = previous_handler(kind, value, traceback, tb_offset=tb_offset)
        else:
            result = self.showtraceback((kind, value, traceback), tb_offset=tb_offset)
        _write_note(value, first_error, True, sys.stderr)
        return result

    shell.set_custom_exc((Exception,) + previous_types, handler)
