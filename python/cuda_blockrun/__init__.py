# SPDX-License-Identifier: MIT
"""cuda-blockrun from Python: finds which CUDA kernel broke the program, and where it was launched.

    import cuda_blockrun        # first, before torch, cupy, triton: enables it with the CUDA_BLOCKRUN_* variables
    import torch
    ...

or, to choose the settings in code (before anything initializes CUDA):

    import cuda_blockrun
    cuda_blockrun.enable(block="embedding", report="run.jsonl")

The same tool as `cuda-blockrun [options] -- program` and `python -m cuda_blockrun [options] script.py`: the settings
are checked by the wrapper's own rules (`cuda-blockrun --print-environment`), the shim (libcuda_blockrun.so) is loaded
into this process, and what LD_PRELOAD would have bound to it is bound to it (shim/rebind.cpp). When the program
raises a CUDA error, the verdict follows the traceback. docs/python.md has the whole story.
"""

import atexit
import ctypes
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import warnings

from . import _native, _traceback, _verdict

__all__ = ["enable", "first_error", "status", "ConfigError", "NotEnabledWarning"]


class ConfigError(ValueError):
    """A setting of enable() (or a CUDA_BLOCKRUN_* variable) the wrapper refuses; the message says which and why."""


class NotEnabledWarning(RuntimeWarning):
    """cuda_blockrun could not be enabled in this process (imported too late, or its files are missing)."""


VARIABLE_PREFIX = "CUDA_BLOCKRUN"
# Set by `python -m cuda_blockrun` (__main__.py) for the private report it made; not a CUDA_BLOCKRUN_* variable,
# which the shim would refuse as unknown.
PRIVATE_REPORT_DIR = "PYTHON_CUDA_BLOCKRUN_PRIVATE_REPORT_DIR"


class _Door:
    """This process's one door: the user's own CUDA_BLOCKRUN_* variables as they were at import, what enable() set
    over them, the shim once loaded, the rebinder, and the private report that first_error() reads."""

    def __init__(self):
        self.user_environment = {k: v for k, v in os.environ.items() if k.startswith(VARIABLE_PREFIX)}
        self.shim = None  # ctypes.CDLL once loaded by this package
        self.shim_path = None
        self.preloaded = False  # the shim came by LD_PRELOAD (the wrapper, python -m cuda_blockrun)
        self.rebind = None
        self.rebound = 0
        self.private_report_dir = None
        self.report_template = None
        self.problem = None  # why it is not enabled, or None
        self.late_objects = []  # CUDA objects loaded before the shim, rebound after the fact
        self.loaded_at_load = []  # the CUDA objects' stems when the shim was loaded

    # ---- settings ----
    def check(self, settings):
        """The wrapper's answer for these settings over the user's environment: {environment, shim}."""
        arguments = [_native.WRAPPER, "--print-environment"]
        for name, value in settings.items():
            values = value if isinstance(value, (list, tuple)) else [value]
            for one in values:
                if one is True:
                    one = "1"
                elif one is False:
                    one = "0"
                arguments.append("--%s=%s" % (name.replace("_", "-"), one))
        if not os.access(_native.WRAPPER, os.X_OK):
            raise FileNotFoundError(
                "cuda_blockrun: the wrapper is missing at %s; is the package installed completely "
                "(pip install cuda-blockrun, or PYTHONPATH=build/python from a build tree)?" % _native.WRAPPER
            )
        environment = {k: v for k, v in os.environ.items() if not k.startswith(VARIABLE_PREFIX)}
        environment.update(self.user_environment)
        done = subprocess.run(arguments, env=environment, capture_output=True, text=True)
        if done.returncode != 0:
            raise ConfigError(_keyword_text(done.stderr.strip() or "the wrapper refused the settings"))
        return json.loads(done.stdout)

    def apply(self, answer):
        for name in [k for k in os.environ if k.startswith(VARIABLE_PREFIX)]:
            del os.environ[name]
        os.environ.update(self.user_environment)
        os.environ.update(answer["environment"])
        if not os.environ.get(VARIABLE_PREFIX + "_REPORT"):
            # first_error() reads the report: a private one where the user asked for none, removed at exit.
            if self.private_report_dir is None:
                self.private_report_dir = tempfile.mkdtemp(prefix="cuda-blockrun-")
                creator = os.getpid()
                atexit.register(
                    lambda: os.getpid() == creator and shutil.rmtree(self.private_report_dir, ignore_errors=True)
                )
            os.environ[VARIABLE_PREFIX + "_REPORT"] = os.path.join(self.private_report_dir, "report.%p.jsonl")
        self.report_template = os.environ[VARIABLE_PREFIX + "_REPORT"]

    # ---- loading ----
    def load(self, shim_path):
        self.shim_path = shim_path
        try:
            # RTLD_GLOBAL: libraries loaded after it bind their CUDA calls to its hooks, as under LD_PRELOAD.
            self.shim = ctypes.CDLL(shim_path, mode=os.RTLD_GLOBAL | os.RTLD_NOW)
            self.rebind = ctypes.CDLL(_native.REBIND_LIBRARY, mode=os.RTLD_LOCAL | os.RTLD_NOW)
        except OSError as error:
            self.shim = None
            return "cannot load %s: %s" % (shim_path, error)
        self.rebind.cuda_blockrun_rebind.restype = ctypes.c_int
        self.rebind.cuda_blockrun_rebind.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_size_t]
        problem = self.rebind_loaded()
        if problem:
            return problem
        _traceback.watch_loads(self.rebind_loaded)
        return None

    def rebind_loaded(self):
        """Points the slots of every object loaded since the last call at the shim; the problem, or None."""
        if self.shim is None:
            return None
        buffer = ctypes.create_string_buffer(512)
        rebound = self.rebind.cuda_blockrun_rebind(self.shim._handle, buffer, len(buffer))
        if rebound < 0:
            return "cannot bind the process's CUDA calls to the shim: " + buffer.value.decode(errors="replace")
        self.rebound += rebound
        return None

    # ---- reading ----
    def report_path(self):
        template = self.report_template or os.environ.get(VARIABLE_PREFIX + "_REPORT")
        if not template:
            return None
        path = template.replace("%p", str(os.getpid()))
        if "%" not in path.replace("%%", ""):
            return path.replace("%%", "%")
        # %r or %h: the file whose start record is this process's.
        import glob

        for candidate in glob.glob(re.sub(r"%[rh]", "*", path).replace("%%", "%")):
            start = _first_record(candidate, "start")
            if start and start.get("pid") == os.getpid():
                return candidate
        return None


def _first_record(path, record_type):
    marker = '"type":"%s"' % record_type
    try:
        with open(path, "r", encoding="utf-8", errors="replace") as report:
            for line in report:
                if marker in line.replace(" ", ""):
                    try:
                        return json.loads(line)
                    except ValueError:
                        return None  # a line cut by a process still writing it
    except OSError:
        return None
    return None


def _keyword_text(message):
    """The wrapper's message in enable()'s terms: '--breadcrumb-every' -> 'breadcrumb_every'."""
    message = re.sub(r"'--([a-z0-9-]+)(=[^']*)?'", lambda m: "'%s'" % m.group(1).replace("-", "_"), message)
    message = re.sub(r"(?m)^cuda-blockrun: ", "", message)
    message = message.replace("the program was not started", "not enabled").replace(
        "see `cuda-blockrun --help`", "see `cuda-blockrun --help-all` (its options are enable()'s keywords)"
    )
    return "cuda_blockrun.enable: " + message


_door = _Door()


def _too_late():
    """Why the shim can no longer see this process's CUDA work, or None. Libraries loaded but not yet initialized
    are rebound; once the driver is initialized, the runtime holds the driver's functions for good."""
    loaded = _native.loaded_cuda_objects()
    driver = [path for path in loaded if _native.stem(path) == "libcuda"]
    if driver:
        try:
            handle = ctypes.CDLL(driver[0], mode=os.RTLD_NOLOAD | os.RTLD_LOCAL)
            context = ctypes.c_void_p()
            initialized = handle.cuCtxGetCurrent(ctypes.byref(context)) != 3  # CUDA_ERROR_NOT_INITIALIZED
        except (OSError, AttributeError):
            initialized = True
        if initialized:
            who = ", ".join(sorted({_native.stem(p) for p in loaded}))
            return (
                "CUDA was already initialized in this process (%s loaded), so the launches made from now on "
                "cannot be seen: cuda_blockrun is NOT enabled and nothing was changed. Import cuda_blockrun "
                "before anything that uses CUDA (first line of the script, or the first cell after restarting "
                "the kernel), or run the script as `python -m cuda_blockrun script.py`." % who
            )
    _door.late_objects = loaded
    return None


def _say(text):
    sys.stderr.write("[cuda-blockrun] %s\n" % text)
    sys.stderr.flush()


def enable(**settings):
    """Enables cuda-blockrun in this process with these settings (the wrapper's options as keywords:
    block="embedding", breadcrumbs=True, report="run.jsonl", log="run.log", trace="t.json", ...), over the
    CUDA_BLOCKRUN_* variables the process started with. `import cuda_blockrun` calls it with none. Raises
    ConfigError for a setting the wrapper refuses; warns (NotEnabledWarning) and returns False where it is too
    late (CUDA already initialized). Returns True when enabled."""
    if _door.preloaded:
        if settings:
            raise ConfigError(
                "cuda_blockrun.enable: this process runs under the wrapper (LD_PRELOAD), which took its settings "
                "at start; give them to the wrapper instead (cuda-blockrun --block ... -- program)"
            )
        return True
    try:
        answer = _door.check(settings)
    except OSError as error:  # an incomplete installation: said, never the program's end
        _door.problem = str(error)
        warnings.warn(_door.problem, NotEnabledWarning, stacklevel=2)
        _say("NOT enabled: " + _door.problem)
        return False
    if _door.shim is not None:
        # The shim reads the settings at its first CUDA call: they can change only until CUDA code is loaded.
        since = sorted({_native.stem(p) for p in _native.loaded_cuda_objects()} - set(_door.loaded_at_load))
        if since:
            raise ConfigError(
                "cuda_blockrun.enable: too late to change the settings: %s was loaded since `import cuda_blockrun`, "
                "and the shim may have read them already; call enable() right after the import" % ", ".join(since)
            )
        _door.apply(answer)
        return True
    problem = _too_late()
    if problem:
        _door.problem = problem
        warnings.warn(problem, NotEnabledWarning, stacklevel=2)
        _say(problem)
        return False
    _door.apply(answer)
    problem = _door.load(answer["shim"])
    # What is loaded now (the shim opens libcuda itself: shim/shim.cpp, claim_driver_library) is not "since".
    _door.loaded_at_load = [_native.stem(p) for p in _native.loaded_cuda_objects()]
    if problem:
        _door.problem = problem
        warnings.warn("cuda_blockrun is NOT enabled: " + problem, NotEnabledWarning, stacklevel=2)
        _say("NOT enabled: " + problem)
        return False
    if _door.late_objects:
        _say(
            "imported after %s was loaded (CUDA not yet initialized): its CUDA calls were bound to the shim "
            "afterwards, so nothing is missed; importing cuda_blockrun first is the safe order"
            % ", ".join(sorted({_native.stem(p) for p in _door.late_objects}))
        )
    _traceback.install(first_error)
    return True


def first_error():
    """The first CUDA error's finding, as the report's first_error record (docs/report.md) in a dict, or None
    where the shim saw none (yet)."""
    path = _door.report_path()
    return _first_record(path, "first_error") if path else None


def status():
    """What the door did: enabled or not and why, the shim, the report first_error() reads, the slots bound."""
    return {
        "enabled": _door.preloaded or (_door.shim is not None and not _door.problem),
        "how": "LD_PRELOAD" if _door.preloaded else "import",
        "problem": _door.problem,
        "shim": _door.shim_path,
        "report": _door.report_path(),
        "rebound_slots": _door.rebound,
        "loaded_before": [_native.stem(p) for p in _door.late_objects],
    }


def _front_end():
    """Whether this interpreter is `python -m cuda_blockrun ...` itself: its package is imported before __main__
    execs the wrapper, and must then change nothing (the program gets the wrapper's settings, not these)."""
    argv = getattr(sys, "orig_argv", None)
    if argv is None:
        try:
            with open("/proc/self/cmdline", "rb") as command_line:
                argv = command_line.read().decode(errors="replace").split("\0")
        except OSError:
            return False
    for index, argument in enumerate(argv[1:-1], start=1):
        if argument == "-m":
            return argv[index + 1] == __name__
        if argument == "-c" or not argument.startswith("-"):
            return False  # a script or code: the interpreter's own options end here
    return False


def _start():
    if _front_end():
        return
    preloaded = _native.loaded_shim()
    if preloaded:
        # Under the wrapper or `python -m cuda_blockrun`: the shim is already here and configured; only the note.
        _door.preloaded = True
        _door.shim_path = preloaded
        private = os.environ.pop(PRIVATE_REPORT_DIR, None)
        if private:
            # The report `python -m cuda_blockrun` made for first_error(): this process, its first reader, owns it.
            creator = os.getpid()
            atexit.register(lambda: os.getpid() == creator and shutil.rmtree(private, ignore_errors=True))
        _traceback.install(first_error)
        return
    if os.environ.get(VARIABLE_PREFIX) == "0":
        _door.problem = "switched off (CUDA_BLOCKRUN=0)"
        return
    try:
        enable()
    except ConfigError as error:
        # A bad CUDA_BLOCKRUN_* variable: the import fails, as the wrapper refuses to start the program.
        raise ConfigError(str(error).replace("cuda_blockrun.enable: ", "import cuda_blockrun: ", 1)) from None


_start()
