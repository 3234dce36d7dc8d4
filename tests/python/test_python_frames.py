#!/usr/bin/env python3
"""Tests of the shim's Python frame capture (shim/python/, python_frames.h), run by ctest (label `python`).

The probe library (tests/python/pyframes_probe.cpp, path in BLOCKRUN_PYFRAMES_PROBE) calls capture_python
from inside this interpreter. Loaded with ctypes.PyDLL the call keeps the GIL (the public C API path);
with ctypes.CDLL it releases it, as PyTorch does around every launch (the frames are read in place).
Every scenario runs in both modes, and both must give the same frames. Lines are found by their
`# MARK:` comment, never by number.

Through read_python_site (a launch's line as breadcrumbs keep it: looked up by the words of its frames,
read in full the first time) the line must be the one the full read chooses, from the cache the second time
(3.8+).

    test_python_frames.py              the tests
    test_python_frames.py --benchmark  ns per capture, GIL held and released (prints, asserts nothing)
"""
import ctypes
import json
import os
import sys
import threading
import time
import unittest

PROBE_PATH = os.environ.get("BLOCKRUN_PYFRAMES_PROBE", "")
if not PROBE_PATH:
    sys.exit("BLOCKRUN_PYFRAMES_PROBE must name the probe library")
HELD = ctypes.PyDLL(PROBE_PATH)  # the GIL stays held during the call
RELEASED = ctypes.CDLL(PROBE_PATH)  # the GIL is released during the call
for library in (HELD, RELEASED):
    for name in ("blockrun_probe_capture", "blockrun_probe_capture_in_native_thread",
                 "blockrun_probe_capture_with_error_pending", "blockrun_probe_site"):
        getattr(library, name).argtypes = [ctypes.c_char_p, ctypes.c_size_t]
        getattr(library, name).restype = ctypes.c_int
    for name in ("blockrun_probe_benchmark", "blockrun_probe_site_benchmark"):
        getattr(library, name).argtypes = [ctypes.c_int]
        getattr(library, name).restype = ctypes.c_double
    library.blockrun_probe_keyed_by_instruction_pointers.restype = ctypes.c_int

MODES = {"held": HELD, "released": RELEASED}
# capture(mode) reads the frames (read_python_stack); capture(SITE + mode) the line through read_python_site, then
# the frames, from the same call: {"site": ..., "stack": ...}.
SITE = "site "
# Whether read_python_site remembers lines: on every version the shim reads without the GIL (3.8+), by
# co_version from 3.12, by what a line is made of before (shim/python/line_keys.cpp, frame_words).
REMEMBERS_LINES = sys.version_info >= (3, 8)
# Whether it looks lines up by the frames' instruction pointers alone, once the code watcher it asks for at its
# first full read is registered (3.12+; shim/python/line_keys.cpp, "lines keyed by instruction pointers").
KEYS_BY_INSTRUCTION_POINTERS = sys.version_info >= (3, 12)
PROBES = {**{mode: library.blockrun_probe_capture for mode, library in MODES.items()},
          **{SITE + mode: library.blockrun_probe_site for mode, library in MODES.items()}}
THIS_FILE = (lambda: None).__code__.co_filename
MAX_FRAMES = 8  # kMaxPythonFrames
INNERMOST_KEPT = 4  # kPythonInnermostKept
MAX_SCANNED = 64  # kMaxPythonFramesScanned
FILE_BYTES = 192  # kPythonFileBytes, NUL included
FUNCTION_BYTES = 64  # kPythonFunctionBytes, NUL included


def marker_line(marker):
    """The line of this file that ends with `# MARK: marker`."""
    with open(THIS_FILE, encoding="utf-8") as source:
        for number, text in enumerate(source, start=1):
            if text.rstrip().endswith("# MARK: " + marker):
                return number
    raise LookupError(marker)


def function_name(function):
    """What the capture reports: co_qualname on 3.11+, co_name before."""
    code = function.__code__
    return getattr(code, "co_qualname", code.co_name)


def decode(buffer, length):
    if length < 0:
        raise AssertionError("the probe's JSON did not fit its buffer")
    return json.loads(buffer.raw[:length].decode("utf-8"))


def capture(mode):
    buffer = ctypes.create_string_buffer(1 << 16)
    length = PROBES[mode](buffer, len(buffer))  # MARK: capture
    return decode(buffer, length)


def inner(mode):
    return capture(mode)  # MARK: inner


def outer(mode):
    return inner(mode)  # MARK: outer


def in_python_thread(mode):
    result = {}

    def body():
        result["stack"] = capture(mode)  # MARK: thread body

    thread = threading.Thread(target=body)
    thread.start()
    thread.join()
    return result["stack"], body


def recurse(depth, mode):
    if depth == 0:
        return capture(mode)
    return recurse(depth - 1, mode)  # MARK: recurse


def recurse_without_capture(depth):
    return depth if depth == 0 else recurse_without_capture(depth - 1)


def keyed_place(mode):
    return capture(mode)  # MARK: keyed place


def größe(mode):
    return capture(mode)  # MARK: größe


def 大きさ(mode):
    return capture(mode)  # MARK: 大きさ


def generator(mode):
    yield capture(mode)  # MARK: generator


def with_cell(mode):
    value = mode

    def reader():
        return value

    return capture(reader())  # MARK: with cell


class Model:
    def forward(self, mode):
        return capture(mode)  # MARK: method


def long_function_name_that_goes_on_and_on_well_past_the_sixty_three_bytes_of_the_buffer(mode):
    return capture(mode)  # MARK: long name


def compiled(filename, function_source, function):
    """A function compiled from `function_source` as if it came from `filename` (co_filename is any str)."""
    namespace = {"capture": capture}
    exec(compile(function_source, filename, "exec"), namespace)
    return namespace[function]


# torch.compile's shape, deeper than MAX_FRAMES: the program calls a compiled function, and Dynamo's frame,
# AOTAutograd's wrappers, Inductor's generated module (in its cache, /tmp/torchinductor_<user>/) and Triton's
# launcher (exec'd from a string) lie between that call and the launch. Outermost first; pure Python, files
# named like theirs.
TORCH = "/opt/conda/lib/python3.11/site-packages/torch/"
COMPILED_LEVELS = [
    (TORCH + "_dynamo/eval_frame.py", "_fn"),
    (TORCH + "_functorch/aot_autograd.py", "forward"),
    (TORCH + "_functorch/_aot_autograd/runtime_wrappers.py", "runtime_wrapper"),
    (TORCH + "_functorch/_aot_autograd/utils.py", "call_func_at_runtime_with_args"),
    (TORCH + "_functorch/_aot_autograd/runtime_wrappers.py", "inner_fn"),
    (TORCH + "_inductor/output_code.py", "__call__"),
    (TORCH + "_inductor/utils.py", "run"),
    ("/tmp/torchinductor_root/ab/cab.py", "call"),
    (TORCH + "_inductor/runtime/triton_heuristics.py", "run"),
    (TORCH + "_inductor/runtime/triton_heuristics.py", "_run"),
    ("/opt/conda/lib/python3.11/site-packages/triton/backends/nvidia/driver.py", "__call__"),
]
# The innermost frame: a launcher exec'd from a string, calling the probe itself (no frame of this file's
# between it and the capture).
CAPTURE_LAUNCHER = ("def launcher(mode):\n"
                    "    buffer = ctypes.create_string_buffer(1 << 16)\n"
                    "    return decode(buffer, PROBES[mode](buffer, len(buffer)))\n")
BENCHMARK_LAUNCHER = "def launcher(mode):\n    return BENCHMARK[mode](ITERATIONS)\n"
LAUNCHER_LINE = 3  # of CAPTURE_LAUNCHER, the capture's


def framework_chain(levels, launcher=CAPTURE_LAUNCHER, **names):
    """Functions compiled as if from `levels` ([(file, function)], outermost first), each calling the next, the
    innermost `launcher` (from "<string>"). Returns the outermost."""
    namespace = {"ctypes": ctypes, "decode": decode, "MODES": MODES, "PROBES": PROBES, **names}
    exec(compile(launcher, "<string>", "exec"), namespace)
    callee = namespace["launcher"]
    for filename, name in reversed(levels):
        scope = {"callee": callee}
        exec(compile(f"def {name}(mode):\n    return callee(mode)\n", filename, "exec"), scope)
        callee = scope[name]
    return callee


def run_compiled(mode, compiled_function):
    return compiled_function(mode)  # MARK: program calls compiled


def utf8_size(text):
    return len(text.encode("utf-8"))


def three_times(call, mode):
    """`call(mode)` three times from one line: the same frames each time, down from here."""
    results = []
    for _ in range(3):
        results.append(call(mode))  # MARK: three times
    return results


def two_lines(mode, launcher):
    """Two launches from one function, through generated code: the function's line is each launch's."""
    first = launcher(mode)  # MARK: first line
    second = launcher(mode)  # MARK: second line
    return first, second


def in_thread(call, mode):
    result = {}
    thread = threading.Thread(target=lambda: result.setdefault("value", call(mode)))
    thread.start()
    thread.join()
    return result["value"]


def beside_busy_threads(worker, busy):
    """Runs worker(mode) in four threads for each mode, while two more threads call busy() over and over until the
    workers are done."""
    stop = threading.Event()

    def churn():
        while not stop.is_set():
            busy()

    busy_threads = [threading.Thread(target=churn) for _ in range(2)]
    workers = [threading.Thread(target=worker, args=(mode,)) for mode in MODES for _ in range(4)]
    for thread in busy_threads + workers:
        thread.start()
    for thread in workers:
        thread.join()
    stop.set()
    for thread in busy_threads:
        thread.join()


class PythonFramesTest(unittest.TestCase):
    def assert_captured(self, stack, mode):
        self.assertEqual(stack["status"], "Captured", stack)
        self.assertEqual(stack["gil_held"], mode == "held", stack)
        self.assertIsNone(stack["reason"], stack)
        if mode == "held" and sys.version_info >= (3, 9):
            self.assertEqual(stack["method"], "public C API, GIL held")
        elif mode == "released":
            self.assertIn("without the GIL", stack["method"])

    def assert_frame(self, frame, function, marker, file=THIS_FILE):
        self.assertEqual(frame, {"file": file, "line": marker_line(marker), "function": function_name(function)})

    def both_modes(self, call):
        """Runs `call(mode)` in both modes; checks that the frames agree; returns the held mode's stack."""
        stacks = {mode: call(mode) for mode in MODES}
        for mode, stack in stacks.items():
            self.assert_captured(stack, mode)
        for key in ("frames", "truncated", "skipped", "skipped_at", "call_site"):
            self.assertEqual(stacks["held"][key], stacks["released"][key], key)
        return stacks["held"]

    def test_innermost_frames_with_and_without_the_gil(self):
        for mode in MODES:
            with self.subTest(mode=mode):
                stack = outer(mode)
                self.assert_captured(stack, mode)
                self.assert_frame(stack["frames"][0], capture, "capture")
                self.assert_frame(stack["frames"][1], inner, "inner")
                self.assert_frame(stack["frames"][2], outer, "outer")
                self.assertEqual((stack["skipped"], stack["call_site"]), (0, 0), stack)
        self.both_modes(outer)

    def test_python_thread(self):
        for mode in MODES:
            with self.subTest(mode=mode):
                stack, body = in_python_thread(mode)
                self.assert_captured(stack, mode)
                self.assert_frame(stack["frames"][0], capture, "capture")
                self.assert_frame(stack["frames"][1], body, "thread body")
                self.assertTrue(stack["frames"][2]["file"].endswith("threading.py"), stack)
                self.assertTrue(stack["frames"][2]["function"].endswith("run"), stack)

    def test_many_threads_at_once(self):
        # Each thread reads only its own frames, while the others push and pop theirs.
        errors = []

        def busy():
            recurse_without_capture(20)

        def worker(mode):
            for _ in range(200):
                stack = outer(mode)
                if stack["status"] != "Captured" or stack["gil_held"] != (mode == "held") or \
                        [frame["function"] for frame in stack["frames"][:3]] != \
                        [function_name(capture), function_name(inner), function_name(outer)]:
                    errors.append(stack)
                    return

        beside_busy_threads(worker, busy)
        self.assertEqual(errors, [])

    def test_native_thread_has_no_thread_state(self):
        for mode, library in MODES.items():
            with self.subTest(mode=mode):
                buffer = ctypes.create_string_buffer(1 << 16)
                stack = decode(buffer, library.blockrun_probe_capture_in_native_thread(buffer, len(buffer)))
                self.assertEqual(stack["status"], "NoThreadState", stack)
                self.assertEqual(stack["frames"], [])

    def test_deep_recursion_is_truncated(self):
        stack = self.both_modes(lambda mode: recurse(30, mode))
        self.assertTrue(stack["truncated"])
        self.assertEqual(len(stack["frames"]), MAX_FRAMES)
        self.assert_frame(stack["frames"][0], capture, "capture")
        for frame in stack["frames"][2:]:
            self.assert_frame(frame, recurse, "recurse")

    def test_exactly_the_maximum_is_not_truncated(self):
        # In a thread the stack starts at threading.py's _bootstrap, _bootstrap_inner and run: with body,
        # recurse (depth + 1 times) and capture, that is depth + 6 frames.
        def run(mode):
            result = {}
            depth = MAX_FRAMES - 6

            def body():
                result["stack"] = recurse(depth, mode)

            thread = threading.Thread(target=body)
            thread.start()
            thread.join()
            return result["stack"]

        stack = self.both_modes(run)
        self.assertEqual(len(stack["frames"]), MAX_FRAMES, stack)
        self.assertFalse(stack["truncated"], stack)

    def test_program_frame_under_deep_framework_frames(self):
        # More than MAX_FRAMES frames of library and generated code over the program's call of a compiled function:
        # the innermost kept as they are, the rest passed over up to the program's frame, then its callers.
        levels = COMPILED_LEVELS
        stack = self.both_modes(lambda mode: run_compiled(mode, framework_chain(levels)))
        frames = stack["frames"]
        self.assertGreater(len(levels) + 1, MAX_FRAMES)
        self.assertEqual(frames[0], {"file": "<string>", "line": LAUNCHER_LINE, "function": "launcher"})
        innermost = [{"file": file, "line": 2, "function": name} for file, name in reversed(levels)]
        self.assertEqual(frames[1:INNERMOST_KEPT], innermost[:INNERMOST_KEPT - 1])
        self.assertEqual(stack["skipped"], len(levels) + 1 - INNERMOST_KEPT)
        self.assertEqual(stack["skipped_at"], INNERMOST_KEPT)
        self.assert_frame(frames[INNERMOST_KEPT], run_compiled, "program calls compiled")
        self.assertEqual(stack["call_site"], INNERMOST_KEPT, stack)  # the report's Python line
        # Then the program's callers, all of them, as many as fit.
        self.assertEqual(len(frames), MAX_FRAMES)
        self.assertTrue(stack["truncated"])
        self.assertEqual(frames[INNERMOST_KEPT + 1]["file"], THIS_FILE)

    def test_program_frame_after_as_many_framework_frames_as_are_read(self):
        # The walk reads at most MAX_SCANNED frames: the program's frame is found as the last of them, not after.
        library = [("/usr/lib/python3/dist-packages/framework/layer.py", "layer")]
        found = self.both_modes(lambda mode: run_compiled(mode, framework_chain(library * (MAX_SCANNED - 2))))
        self.assertEqual((found["skipped"], found["skipped_at"]), (MAX_SCANNED - 1 - INNERMOST_KEPT, INNERMOST_KEPT))
        self.assert_frame(found["frames"][INNERMOST_KEPT], run_compiled, "program calls compiled")
        self.assertEqual(found["call_site"], INNERMOST_KEPT)
        beyond = self.both_modes(lambda mode: run_compiled(mode, framework_chain(library * (MAX_SCANNED - 1))))
        self.assertEqual(len(beyond["frames"]), INNERMOST_KEPT, beyond)
        self.assertEqual((beyond["skipped"], beyond["skipped_at"]), (MAX_SCANNED - INNERMOST_KEPT, INNERMOST_KEPT))
        self.assertTrue(beyond["truncated"])
        self.assertEqual(beyond["call_site"], 0)  # none of the program's: the innermost

    def test_no_program_frame_leaves_the_gap_at_the_end(self):
        # A thread that runs the compiled function itself: threading.py's frames and the framework's, nothing of
        # the program's. The innermost are kept, the rest counted; the stack was read to its end.
        def run(mode):
            result = {}
            chain = framework_chain(COMPILED_LEVELS)
            thread = threading.Thread(target=lambda: result.setdefault("stack", chain(mode)))
            thread.start()
            thread.join()
            return result["stack"]

        # The lambda is this file's, a frame of the program's own: found after the gap.
        stack = self.both_modes(run)
        self.assertEqual(stack["call_site"], INNERMOST_KEPT)
        self.assertEqual(stack["frames"][INNERMOST_KEPT]["file"], THIS_FILE)

        def run_bare(mode):
            result = {}
            # The thread's target, generated too, keeps the result (STORE runs after the capture).
            target = framework_chain([], launcher="def launcher(mode):\n    return STORE(CHAIN(mode))\n",
                                     STORE=lambda stack: result.setdefault("stack", stack),
                                     CHAIN=framework_chain(COMPILED_LEVELS))
            thread = threading.Thread(target=target, args=(mode,))
            thread.start()
            thread.join()
            return result["stack"]

        stack = self.both_modes(run_bare)
        # launcher, __call__, _run, run kept; the other levels, the target and threading.py's 3 frames passed over.
        self.assertEqual(len(stack["frames"]), INNERMOST_KEPT)
        self.assertEqual(stack["skipped"], len(COMPILED_LEVELS) + 1 + 3 + 1 - INNERMOST_KEPT, stack)
        self.assertEqual(stack["skipped_at"], INNERMOST_KEPT)
        self.assertFalse(stack["truncated"])
        self.assertEqual(stack["call_site"], 0)

    def test_non_ascii_function_names(self):
        for function, marker in ((größe, "größe"), (大きさ, "大きさ")):
            with self.subTest(function=marker):
                stack = self.both_modes(function)
                self.assert_frame(stack["frames"][1], function, marker)

    def test_generator_and_closure_and_method(self):
        stack = self.both_modes(lambda mode: next(generator(mode)))
        self.assert_frame(stack["frames"][1], generator, "generator")
        stack = self.both_modes(with_cell)
        self.assert_frame(stack["frames"][1], with_cell, "with cell")
        stack = self.both_modes(Model().forward)
        self.assert_frame(stack["frames"][1], Model.forward, "method")
        if sys.version_info >= (3, 11):
            self.assertEqual(stack["frames"][1]["function"], "Model.forward")

    def test_comprehension(self):
        # A frame of its own before 3.12, inlined from 3.12 on: either way both modes agree.
        stack = self.both_modes(lambda mode: [capture(mode) for _ in range(1)][0])
        self.assert_frame(stack["frames"][0], capture, "capture")

    def test_long_function_name_keeps_its_head(self):
        function = long_function_name_that_goes_on_and_on_well_past_the_sixty_three_bytes_of_the_buffer
        stack = self.both_modes(function)
        name = stack["frames"][1]["function"]
        self.assertEqual(utf8_size(name), FUNCTION_BYTES - 1)
        self.assertTrue(name.endswith("..."))
        self.assertTrue(function_name(function).startswith(name[:-3]))
        # Two-byte characters: the cut falls between characters (the JSON would not decode otherwise).
        function = compiled("<ö>", "def " + "ö" * 40 + "(mode):\n    return capture(mode)\n", "ö" * 40)
        stack = self.both_modes(function)
        self.assertEqual(stack["frames"][1]["function"], "ö" * 30 + "...")
        self.assertEqual(stack["frames"][1]["file"], "<ö>")

    def test_long_file_path_keeps_its_tail(self):
        source = "def far_away(mode):\n    return capture(mode)\n"
        for tail in ("/ascii/tail_of_the_path.py", "/größe/tail.py", "/大きさ/tail.py", "/😀/tail.py"):
            with self.subTest(tail=tail):
                filename = "/" + "directory/" * 40 + tail
                stack = self.both_modes(compiled(filename, source, "far_away"))
                frame = stack["frames"][1]
                self.assertEqual(frame["line"], 2)
                self.assertTrue(frame["file"].startswith("..."), frame)
                self.assertTrue(filename.endswith(frame["file"][3:]), frame)
                self.assertLessEqual(utf8_size(frame["file"]), FILE_BYTES - 1)
                self.assertGreaterEqual(utf8_size(frame["file"]), FILE_BYTES - 4)
        short = "/😀/größe/short.py"  # four-, two- and one-byte characters that fit
        stack = self.both_modes(compiled(short, source, "far_away"))
        self.assertEqual(stack["frames"][1]["file"], short)

    def assert_site_is_the_full_reads_choice(self, call, new_place=True):
        """Runs `call(SITE + mode)` three times from one line in both modes: read_python_site gives the frames the
        full read chooses (and the innermost), and from the second time on from the cache. The cache
        remembers places, not modes: both modes launch from the same place, so only the first mode's first
        launch is read in full, and only if no launch came from that place before (`new_place`; the cache is
        the process's, shared by every test)."""
        for index, mode in enumerate(MODES):
            with self.subTest(mode=mode):
                for attempt, result in enumerate(three_times(call, SITE + mode)):
                    site, stack = result["site"], result["stack"]
                    self.assert_captured(stack, mode)
                    self.assertEqual(site["status"], "Captured", site)
                    chosen = stack["call_site"]
                    self.assertEqual(site["site"], stack["frames"][chosen], (site, stack))
                    self.assertEqual(site["innermost"], stack["frames"][0] if chosen > 0 else None, (site, stack))
                    # Remembered (3.8+): the first launch from a place is read in full, the next from the cache.
                    seen = attempt > 0 or index > 0
                    if seen or new_place or not REMEMBERS_LINES:
                        self.assertEqual(site["cached"], seen and REMEMBERS_LINES, (call, mode, attempt, site))
        return site

    def test_site_is_the_full_reads_choice_then_comes_from_the_cache(self):
        # outer's walk is test_site_from_many_threads_at_once's (which runs first): remembered already.
        site = self.assert_site_is_the_full_reads_choice(outer, new_place=False)
        self.assert_frame(site["site"], capture, "capture")
        self.assert_site_is_the_full_reads_choice(lambda mode: recurse(30, mode))
        self.assert_site_is_the_full_reads_choice(lambda mode: next(generator(mode)))
        self.assert_site_is_the_full_reads_choice(with_cell)
        self.assert_site_is_the_full_reads_choice(Model().forward)
        self.assert_site_is_the_full_reads_choice(größe)
        self.assert_site_is_the_full_reads_choice(lambda mode: [capture(mode) for _ in range(1)][0])
        self.assert_site_is_the_full_reads_choice(lambda mode: in_thread(capture, mode))

    def test_site_under_framework_frames(self):
        chain = framework_chain(COMPILED_LEVELS)
        site = self.assert_site_is_the_full_reads_choice(lambda mode: run_compiled(mode, chain))
        self.assert_frame(site["site"], run_compiled, "program calls compiled")
        self.assertEqual(site["innermost"], {"file": "<string>", "line": LAUNCHER_LINE, "function": "launcher"})
        # None of the program's (a thread that runs generated code only): the innermost, decided by every frame up
        # to the end of the stack.
        results = []
        target = framework_chain([], launcher="def launcher(mode):\n    return STORE(CHAIN(mode))\n",
                                 STORE=results.append, CHAIN=chain)

        def run_bare(mode):
            thread = threading.Thread(target=target, args=(mode,))
            thread.start()
            thread.join()
            return results.pop()

        site = self.assert_site_is_the_full_reads_choice(run_bare)
        self.assertEqual(site["innermost"], None)
        self.assertEqual(site["site"]["file"], "<string>")
        # The program's frame as the last frame the walk reads (64th): remembered too.
        library = [("/usr/lib/python3/dist-packages/framework/layer.py", "layer")]
        deep = framework_chain(library * (MAX_SCANNED - 2))
        site = self.assert_site_is_the_full_reads_choice(lambda mode: run_compiled(mode, deep))
        self.assert_frame(site["site"], run_compiled, "program calls compiled")

    def test_site_from_many_threads_at_once(self):
        # Threads remembering and finding the same walks while others churn their frames and free code objects
        # (each busy round compiles one).
        errors = []
        expected = {"file": THIS_FILE, "line": marker_line("capture"), "function": function_name(capture)}

        def busy():
            recurse_without_capture(20)
            compile("x = 1", "<busy>", "exec")

        def worker(mode):
            for _ in range(200):
                result = outer(SITE + mode)
                if result["site"]["site"] != expected or result["stack"]["gil_held"] != (mode == "held"):
                    errors.append(result)
                    return

        beside_busy_threads(worker, busy)
        self.assertEqual(errors, [])

    def test_site_of_two_lines_of_one_function(self):
        launcher = framework_chain([])  # generated code: the line is its caller's
        for mode in MODES:
            with self.subTest(mode=mode):
                for _ in range(3):
                    first, second = two_lines(SITE + mode, launcher)
                    self.assertEqual(first["site"]["site"]["line"], marker_line("first line"))
                    self.assertEqual(second["site"]["site"]["line"], marker_line("second line"))

    def keyed_by_instruction_pointers(self):
        """Whether the shim keys lines by instruction pointers, after it has asked for its code watcher (a line
        read in full) and the main thread has had time to register it (running Python, it does at its next check
        of pending calls)."""
        outer(SITE + "released")
        deadline = time.monotonic() + (10 if KEYS_BY_INSTRUCTION_POINTERS else 0.1)
        while not HELD.blockrun_probe_keyed_by_instruction_pointers() and time.monotonic() < deadline:
            recurse_without_capture(10)
        return bool(HELD.blockrun_probe_keyed_by_instruction_pointers())

    def test_site_is_keyed_by_instruction_pointers_from_3_12(self):
        self.assertEqual(self.keyed_by_instruction_pointers(), KEYS_BY_INSTRUCTION_POINTERS)
        self.assert_site_is_the_full_reads_choice(keyed_place)
        self.assertEqual(self.keyed_by_instruction_pointers(), KEYS_BY_INSTRUCTION_POINTERS)

    def test_site_of_a_code_object_made_where_another_was(self):
        # Without the GIL nothing keeps a code object alive between launches: one freed and another made at its
        # address must not be taken for it. Three versions of one function, compiled again and again: the same
        # bytecode and name, from one file name (the same str object) the launch on line 2 or, after a blank line,
        # 3; and from another file name, line 2. From 3.12 the lines are keyed by instruction pointers, the same
        # for the three versions at one address: each death of a remembered code object must retire them (and
        # does not make the shim give that up in the 300 deaths here).
        keyed = self.keyed_by_instruction_pointers()
        filename = "/home/me/reloaded.py"
        other_filename = "/home/me/renamed.py"
        sources = ("def launch(probe, buffer):\n    return probe(buffer, len(buffer))\n",
                   "def launch(probe, buffer):\n\n    return probe(buffer, len(buffer))\n")
        versions = ((filename, sources[0], 2), (filename, sources[1], 3), (other_filename, sources[0], 2))
        reused = 0
        for mode in MODES:
            addresses = {}
            for attempt in range(150):
                version = attempt % len(versions)
                file, source, line = versions[version]
                scope = {}
                exec(compile(source, file, "exec"), scope)
                launch = scope.pop("launch")
                buffer = ctypes.create_string_buffer(1 << 16)
                result = decode(buffer, launch(PROBES[SITE + mode], buffer))
                self.assertEqual(result["site"]["site"], {"file": file, "line": line, "function": "launch"})
                address = id(launch.__code__)
                reused += addresses.get(address, version) != version
                addresses[address] = version
                del launch, scope
        self.assertEqual(self.keyed_by_instruction_pointers(), keyed)
        if not reused:
            self.skipTest("no code object was made where one of the other version had been")

    def test_pending_exception_is_kept(self):
        buffer = ctypes.create_string_buffer(1 << 16)
        with self.assertRaisesRegex(RuntimeError, "set before the capture"):
            HELD.blockrun_probe_capture_with_error_pending(buffer, len(buffer))
        stack = json.loads(buffer.value.decode("utf-8"))
        self.assert_captured(stack, "held")
        self.assertEqual(stack["frames"][0]["file"], THIS_FILE)


BENCHMARK = {**{mode: library.blockrun_probe_benchmark for mode, library in MODES.items()},
             **{SITE + mode: library.blockrun_probe_site_benchmark for mode, library in MODES.items()}}


def benchmark():
    """ns per capture in both modes, called 10 Python frames deep (8 reported, truncated); ns per launch's line
    through read_python_site, from its cache."""
    iterations = 100000

    def nested(depth, library):
        if depth == 0:
            return library.blockrun_probe_benchmark(iterations)
        return nested(depth - 1, library)

    results = {mode: nested(10, library) for mode, library in MODES.items()}
    version = ".".join(map(str, sys.version_info[:3]))
    remembered = "from its cache" if REMEMBERS_LINES else "read in full: no cache before 3.8"
    print(f"python frame capture, Python {version}, {iterations} captures of 8 frames each: "
          f"GIL held {results['held']:.0f} ns, GIL released {results['released']:.0f} ns per capture")

    def nested_site(depth, library):
        if depth == 0:
            return library.blockrun_probe_site_benchmark(iterations)
        return nested_site(depth - 1, library)

    results = {mode: nested_site(10, library) for mode, library in MODES.items()}
    print(f"python line (read_python_site, {remembered}), Python {version}, 10 frames deep: "
          f"GIL held {results['held']:.0f} ns, GIL released {results['released']:.0f} ns per launch")
    # The program's call under torch.compile's frames: 12 frames of library and generated code, 8 passed over.
    deep = framework_chain(COMPILED_LEVELS, BENCHMARK_LAUNCHER, ITERATIONS=iterations, BENCHMARK=BENCHMARK)
    results = {mode: run_compiled(mode, deep) for mode in MODES}
    print(f"python frame capture, Python {version}, under {len(COMPILED_LEVELS) + 1} frames of library and "
          f"generated code: GIL held {results['held']:.0f} ns, GIL released {results['released']:.0f} ns per capture")
    results = {mode: run_compiled(SITE + mode, deep) for mode in MODES}
    print(f"python line (read_python_site, {remembered}), Python {version}, under {len(COMPILED_LEVELS) + 1} "
          f"frames of library and generated code: GIL held {results['held']:.0f} ns, "
          f"GIL released {results['released']:.0f} ns per launch")
    # The bound: MAX_SCANNED frames read, none of the program's.
    worst = framework_chain([("/usr/lib/python3/dist-packages/framework/layer.py", "layer")] * MAX_SCANNED,
                            BENCHMARK_LAUNCHER, ITERATIONS=iterations, BENCHMARK=BENCHMARK)
    results = {mode: run_compiled(mode, worst) for mode in MODES}
    print(f"python frame capture, Python {version}, {MAX_SCANNED} frames read, none of the program's: "
          f"GIL held {results['held']:.0f} ns, GIL released {results['released']:.0f} ns per capture")


if __name__ == "__main__":
    if "--benchmark" in sys.argv:
        benchmark()
    else:
        unittest.main(verbosity=2)
# SPDX-License-Identifier: MIT
