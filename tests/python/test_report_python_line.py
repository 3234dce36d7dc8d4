#!/usr/bin/env python3
"""The report names the Python line that launched the culprit, whether the launching thread held the GIL
(ctypes.PyDLL, as C extensions that keep it) or released it (ctypes.CDLL, as PyTorch does around its ops);
generated code between the program and the launch (torch.compile's shape) is passed over for the program's
call; and with breadcrumbs, for a fault that surfaces long after its launch, `--localize` names that line in
one run.

Usage: test_report_python_line.py WRAPPER LAUNCH_LIB SIM_LIBDIR
Runs this file again as the program under test (--program MODE LIB), through the wrapper with a report, on
the simulated CUDA stack with the first `fill` launch faulting and `fill` blocked; then checks the
first_error record: innermost Python frame = the marked line in launch(), the next = its caller.
"""
import ctypes
import json
import os
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.abspath(__file__)
# Where the "installed package" of the package mode lives: a directory named site-packages.
PACKAGE_DIR = os.environ.get("BLOCKRUN_TEST_PACKAGE_DIR", "")
# The generated mode's module, in a stand-in for torch.compile's cache directory.
GENERATED_MODULE = os.environ.get("BLOCKRUN_TEST_GENERATED_MODULE", "")
# What Inductor writes there, in miniature: a module whose `call` runs a launcher exec'd from a string.
GENERATED_SOURCE = """\
LAUNCHER = "def launcher(library):\\n    return library.launch_fill()\\n"
scope = {}
exec(compile(LAUNCHER, "<string>", "exec"), scope)


def call(library):
    return scope["launcher"](library)
"""


# torch.compile's whole depth in miniature: more frames than the capture keeps lie between the launch and the
# program's call of a compiled function (Dynamo's frame, AOTAutograd's wrappers, Inductor's generated module in
# its cache, Triton's launcher exec'd from a string). Outermost first, pure Python, files named like theirs.
TORCH = "/opt/conda/lib/python3.11/site-packages/torch/"
COMPILED_LEVELS = [
    (TORCH + "_dynamo/eval_frame.py", "_fn"),
    (TORCH + "_functorch/aot_autograd.py", "forward"),
    (TORCH + "_functorch/_aot_autograd/runtime_wrappers.py", "runtime_wrapper"),
    (TORCH + "_functorch/_aot_autograd/utils.py", "call_func_at_runtime_with_args"),
    (TORCH + "_functorch/_aot_autograd/runtime_wrappers.py", "inner_fn"),
    (TORCH + "_inductor/output_code.py", "__call__"),
    ("/tmp/torchinductor_root/ab/cab.py", "call"),
    (TORCH + "_inductor/runtime/triton_heuristics.py", "run"),
    ("/opt/conda/lib/python3.11/site-packages/triton/backends/nvidia/driver.py", "__call__"),
]
DEEP_LAUNCHER = "def launcher(library):\n    return library.launch_fill()\n"


def compiled_function():
    """The chain of COMPILED_LEVELS down to DEEP_LAUNCHER (from "<string>"): its outermost function."""
    scope = {}
    exec(compile(DEEP_LAUNCHER, "<string>", "exec"), scope)
    callee = scope["launcher"]
    for filename, name in reversed(COMPILED_LEVELS):
        scope = {"callee": callee}
        exec(compile(f"def {name}(library):\n    return callee(library)\n", filename, "exec"), scope)
        callee = scope[name]
    return callee


def simulated_environment(sim_libdir, fault):
    """This process's environment without anything of the shim's or the simulation's, on the simulated stack
    with CUDA_SIM_FAULT=`fault`."""
    environment = {key: value for key, value in os.environ.items()
                   if not key.startswith(("CUDA_BLOCKRUN", "CUDA_SIM", "LD_PRELOAD"))}
    environment.update(LD_LIBRARY_PATH=sim_libdir, CUDA_SIM_FAULT=fault)
    return environment


def line_of(marker):
    with open(HERE) as source:
        for number, text in enumerate(source, 1):
            if text.rstrip().endswith("# " + marker):
                return number
    raise AssertionError(f"no marker {marker}")


def launch(library):
    return library.launch_fill()  # LAUNCH_LINE


def step(library):
    return launch(library)  # CALLER_LINE


def through_package(library):
    # An installed package launches for the program (as torch.nn.functional or Triton do): the report's Python
    # line is the program's call, with the package's frame innermost.
    sys.path.insert(0, PACKAGE_DIR)
    import fakepkg
    return fakepkg.launch(library)  # PACKAGE_CALL_LINE


def through_generated(library):
    # torch.compile's shape: the program calls a compiled function, whose module Inductor generated in its
    # cache directory; that runs a launcher exec'd from a string, which launches. The line is the program's call.
    import importlib.util
    spec = importlib.util.spec_from_file_location("cabc", GENERATED_MODULE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.call(library)  # GENERATED_CALL_LINE


def through_compiled(library):
    compiled = compiled_function()
    return compiled(library)  # COMPILED_CALL_LINE


def forward(library):
    library.launch_fill()
    return library.launch_stencil()  # FORWARD_STENCIL_LINE


def train(library):
    # 30 steps of fill, stencil, fill; the fault (CUDA_SIM_FAULT) surfaces only at the final synchronize.
    for _ in range(30):
        forward(library)  # TRAIN_FORWARD_LINE
        library.launch_fill()
    return library.synchronize()


def capture_model(library):
    library.capture_fill()
    library.capture_stencil()  # CAPTURED_STENCIL_LINE


def make_graph(library):
    library.begin_capture()  # BEGIN_CAPTURE_LINE
    capture_model(library)
    return library.end_capture()


def program(mode, path):
    library = (ctypes.PyDLL if mode in ("gil", "package", "late-gil", "compiled-gil") else ctypes.CDLL)(path)
    if mode == "graph":
        print("end_capture returned", make_graph(library))
        for _ in range(3):
            print("replay returned", library.replay())
        return
    if mode.startswith("late"):
        print("synchronize returned", train(library))
        return
    if mode == "generated":
        print("launch returned", through_generated(library))
        return
    if mode.startswith("compiled"):
        print("launch returned", through_compiled(library))
        return
    result = through_package(library) if mode == "package" else step(library)
    print("launch returned", result)


class ReportNamesThePythonLine(unittest.TestCase):
    def run_mode(self, mode):
        wrapper, launch_lib, sim_libdir = ARGS
        with tempfile.TemporaryDirectory() as directory:
            report = os.path.join(directory, "report.jsonl")
            environment = simulated_environment(sim_libdir, "fill:1")
            package_dir = os.path.join(directory, "lib", "site-packages")
            os.makedirs(package_dir)
            with open(os.path.join(package_dir, "fakepkg.py"), "w") as module:
                module.write("def launch(library):\n    return library.launch_fill()\n")
            environment["BLOCKRUN_TEST_PACKAGE_DIR"] = package_dir
            done = subprocess.run([wrapper, "--block", "fill", "--report", report, "--", sys.executable, HERE,
                                   "--program", mode, launch_lib],
                                  env=environment, capture_output=True, text=True, timeout=120)
            self.assertEqual(done.returncode, 0, done.stderr)
            self.assertIn("launch returned 700", done.stdout)
            with open(report) as lines:
                records = [json.loads(line) for line in lines]
            package_file = os.path.join(package_dir, "fakepkg.py")
        first = [r for r in records if r["type"] == "first_error"]
        self.assertEqual(len(first), 1, records)
        launch_record = first[0]["launch"]
        self.assertEqual(launch_record["kernel"], "fill(float*, int, float)")
        expected_status = "captured, GIL released" if mode == "nogil" else "captured, GIL held"
        self.assertEqual(launch_record["python_status"], expected_status)
        frames = launch_record["python"]
        if mode == "package":
            self.assertEqual(frames[0], {"file": package_file, "line": 2, "function": "launch"})
            call = {"file": HERE, "line": line_of("PACKAGE_CALL_LINE"), "function": "through_package"}
            self.assertEqual(frames[1], call)
            self.assertEqual(launch_record["python_callsite"], call)
            self.assertIn(f"[cuda-blockrun]   python: {HERE}:{line_of('PACKAGE_CALL_LINE')} in through_package "
                          f"(innermost: {package_file}:2 in launch)\n", done.stderr)
            return
        self.assertEqual(launch_record["python_callsite"], frames[0])
        self.assertEqual(frames[0], {"file": HERE, "line": line_of("LAUNCH_LINE"), "function": "launch"})
        self.assertEqual(frames[1], {"file": HERE, "line": line_of("CALLER_LINE"), "function": "step"})
        self.assertEqual(frames[2]["function"], "program")
        # The human log says it too.
        self.assertIn(f"[cuda-blockrun]   python: {HERE}:{line_of('LAUNCH_LINE')} in launch\n", done.stderr)

    def test_gil_held(self):
        self.run_mode("gil")

    def generated_code_is_not_the_line(self, cache_dir):
        """`cache_dir`: TORCHINDUCTOR_CACHE_DIR's value, relative to a temporary directory; None: unset, the
        generated module then lives where Inductor's default puts it, in a directory torchinductor_<user>."""
        wrapper, launch_lib, sim_libdir = ARGS
        with tempfile.TemporaryDirectory() as directory:
            report = os.path.join(directory, "report.jsonl")
            environment = simulated_environment(sim_libdir, "fill:1")
            environment.pop("TORCHINDUCTOR_CACHE_DIR", None)
            cache = os.path.join(directory, cache_dir or "torchinductor_blockrun")
            if cache_dir:
                environment["TORCHINDUCTOR_CACHE_DIR"] = cache
            generated = os.path.join(cache, "ab", "cabcdefgh.py")
            os.makedirs(os.path.dirname(generated))
            with open(generated, "w") as module:
                module.write(GENERATED_SOURCE)
            environment["BLOCKRUN_TEST_GENERATED_MODULE"] = generated
            done = subprocess.run([wrapper, "--block", "fill", "--report", report, "--", sys.executable, HERE,
                                   "--program", "generated", launch_lib],
                                  env=environment, capture_output=True, text=True, timeout=120)
            self.assertEqual(done.returncode, 0, done.stderr)
            self.assertIn("launch returned 700", done.stdout)
            with open(report) as lines:
                records = [json.loads(line) for line in lines]
        first = [r for r in records if r["type"] == "first_error"]
        self.assertEqual(len(first), 1, records)
        launch_record = first[0]["launch"]
        self.assertEqual(launch_record["python_status"], "captured, GIL released")
        frames = launch_record["python"]
        # Every frame stays in the report's stack.
        self.assertEqual(frames[0], {"file": "<string>", "line": 2, "function": "launcher"})
        self.assertEqual(frames[1], {"file": generated, "line": 7, "function": "call"})
        call = {"file": HERE, "line": line_of("GENERATED_CALL_LINE"), "function": "through_generated"}
        self.assertEqual(frames[2], call)
        self.assertEqual(launch_record["python_callsite"], call)
        self.assertIn(f"[cuda-blockrun]   python: {HERE}:{line_of('GENERATED_CALL_LINE')} in through_generated "
                      f"(innermost: <string>:2 in launcher)\n", done.stderr)

    def test_generated_code_in_inductors_default_cache_is_not_the_line(self):
        self.generated_code_is_not_the_line(None)

    def test_generated_code_under_torchinductor_cache_dir_is_not_the_line(self):
        self.generated_code_is_not_the_line("inductor-cache")

    def deep_compiled_stack(self, mode):
        """More frames of library and generated code than are kept between the launch and the program's call: the
        Python line is the program's, the frames passed over are a gap in the report and in the log."""
        wrapper, launch_lib, sim_libdir = ARGS
        with tempfile.TemporaryDirectory() as directory:
            report = os.path.join(directory, "report.jsonl")
            environment = simulated_environment(sim_libdir, "fill:1")
            done = subprocess.run([wrapper, "--block", "fill", "--stack", "--report", report, "--", sys.executable,
                                   HERE, "--program", mode, launch_lib],
                                  env=environment, capture_output=True, text=True, timeout=120)
            self.assertEqual(done.returncode, 0, done.stderr)
            self.assertIn("launch returned 700", done.stdout)
            with open(report) as lines:
                records = [json.loads(line) for line in lines]
            schema = os.path.join(os.path.dirname(HERE), "..", "..", "docs", "report.schema.json")
            validator = os.path.join(os.path.dirname(HERE), "..", "report", "validate_report.py")
            # A Python with jsonschema (CMake finds it: CUDA_BLOCKRUN_VALIDATOR_PYTHON), not necessarily this one.
            checked = subprocess.run([os.environ.get("CUDA_BLOCKRUN_VALIDATOR_PYTHON", sys.executable), validator,
                                      schema, report, "--expect", "first_error"],
                                     capture_output=True, text=True)
            self.assertEqual(checked.returncode, 0, checked.stdout + checked.stderr)
        first = [r for r in records if r["type"] == "first_error"]
        self.assertEqual(len(first), 1, records)
        launch_record = first[0]["launch"]
        self.assertEqual(launch_record["python_status"],
                         "captured, GIL held" if mode == "compiled-gil" else "captured, GIL released")
        frames = launch_record["python"]
        self.assertGreater(len(COMPILED_LEVELS) + 1, 8)  # deeper than kMaxPythonFrames
        kept = 4  # kPythonInnermostKept
        self.assertEqual(frames[0], {"file": "<string>", "line": 2, "function": "launcher"})
        self.assertEqual(frames[1:kept], [{"file": file, "line": 2, "function": name}
                                          for file, name in reversed(COMPILED_LEVELS[-(kept - 1):])])
        self.assertEqual(launch_record["python_frames_skipped"], len(COMPILED_LEVELS) + 1 - kept)
        self.assertEqual(launch_record["python_frames_skipped_at"], kept)
        call = {"file": HERE, "line": line_of("COMPILED_CALL_LINE"), "function": "through_compiled"}
        self.assertEqual(frames[kept], call)
        self.assertEqual(launch_record["python_callsite"], call)
        self.assertEqual(frames[kept + 1]["function"], "program")
        self.assertFalse(launch_record["python_frames_truncated"])
        self.assertIn(f"[cuda-blockrun]   python: {HERE}:{line_of('COMPILED_CALL_LINE')} in through_compiled "
                      f"(innermost: <string>:2 in launcher)\n", done.stderr)
        self.assertIn(f"  py#3 {COMPILED_LEVELS[-3][0]}:2 in {COMPILED_LEVELS[-3][1]}\n"
                      f"[cuda-blockrun]     py   ... {len(COMPILED_LEVELS) + 1 - kept} frames of library or "
                      f"generated code ...\n"
                      f"[cuda-blockrun]     py#4 {HERE}:{line_of('COMPILED_CALL_LINE')} in through_compiled\n",
                      done.stderr)

    def test_deep_compiled_stack_gil_released(self):
        self.deep_compiled_stack("compiled")

    def test_deep_compiled_stack_gil_held(self):
        self.deep_compiled_stack("compiled-gil")

    def localize_late_fault(self, mode):
        wrapper, launch_lib, sim_libdir = ARGS
        # The 13th stencil faults (launch #38 of 90); the program learns it at the end: the fault stays in flight
        # until its synchronize (CUDA_SIM_FAULT_SURFACES=sync; by default the next launch would see it).
        environment = simulated_environment(sim_libdir, "stencil:13")
        environment["CUDA_SIM_FAULT_SURFACES"] = "sync"
        with tempfile.TemporaryDirectory() as directory:
            environment["TMPDIR"] = directory
            done = subprocess.run([wrapper, "--localize", "--", sys.executable, HERE, "--program", mode, launch_lib],
                                  env=environment, capture_output=True, text=True, timeout=120)
        self.assertEqual(done.stdout, "synchronize returned 700\n", "the program ran once: " + done.stderr)
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertIn("[cuda-blockrun] localize: culprit: kernel stencil(float*, float const*, int, long long)"
                      "<<<(64,1,1), (128,1,1), 0, 0x0>>>, launch #38 (stencil#13)\n"
                      "[cuda-blockrun]   error: cudaErrorIllegalAddress (an illegal memory access was encountered), "
                      "returned by cudaDeviceSynchronize\n", done.stderr)
        self.assertIn(f"[cuda-blockrun]   python: {HERE}:{line_of('FORWARD_STENCIL_LINE')} in forward\n",
                      done.stderr)
        self.assertIn("its call site is the caller of the CUDA entry point and the Python line kept for the "
                      "launch. No second run needed.", done.stderr)
        self.assertNotIn("run 2", done.stderr)

    def test_localize_names_the_line_of_a_late_fault_in_one_run_gil_released(self):
        self.localize_late_fault("late")

    def test_localize_names_the_line_of_a_late_fault_in_one_run_gil_held(self):
        self.localize_late_fault("late-gil")

    def test_a_faulting_replay_names_the_python_lines_that_captured_its_graph(self):
        wrapper, launch_lib, sim_libdir = ARGS
        # Stencil's second run is in the second replay (captured launches do not run).
        environment = simulated_environment(sim_libdir, "stencil:2")
        with tempfile.TemporaryDirectory() as directory:
            report = os.path.join(directory, "report.jsonl")
            done = subprocess.run([wrapper, "--report", report, "--", sys.executable, HERE, "--program", "graph",
                                   launch_lib], env=environment, capture_output=True, text=True, timeout=120)
            with open(report) as lines:
                records = [json.loads(line) for line in lines]
        self.assertEqual(done.stdout, "end_capture returned 0\nreplay returned 0\nreplay returned 700\n"
                                      "replay returned 700\n", done.stderr)
        first = [r for r in records if r["type"] == "first_error"]
        self.assertEqual(len(first), 1, records)
        # The wrapper's run without a mode flag has breadcrumbs: the replay is the culprit, exactly.
        self.assertEqual(first[0]["certainty"], "exact", first[0])
        graph = first[0]["launch"]["graph"]
        self.assertEqual(graph["replay"], 2)
        capture = graph["capture"]
        self.assertEqual(capture["begun_at"]["python_callsite"],
                         {"file": HERE, "line": line_of("BEGIN_CAPTURE_LINE"), "function": "make_graph"})
        self.assertEqual([launch["kernel_base"] for launch in capture["captured"]], ["fill", "stencil"])
        self.assertEqual(capture["captured"][1]["python_callsite"],
                         {"file": HERE, "line": line_of("CAPTURED_STENCIL_LINE"), "function": "capture_model"})
        self.assertIn(f"replay 2 of the graph captured at ", done.stderr)
        self.assertIn(f"python {HERE}:{line_of('BEGIN_CAPTURE_LINE')} in make_graph\n", done.stderr)
        self.assertIn(f"2. kernel stencil(float*, float const*, int, long long), captured at ", done.stderr)
        self.assertIn(f"python {HERE}:{line_of('CAPTURED_STENCIL_LINE')} in capture_model\n", done.stderr)

    def test_breadcrumbs_report_keeps_the_line_not_the_frames(self):
        wrapper, launch_lib, sim_libdir = ARGS
        environment = simulated_environment(sim_libdir, "stencil:13")
        with tempfile.TemporaryDirectory() as directory:
            report = os.path.join(directory, "report.jsonl")
            done = subprocess.run([wrapper, "--breadcrumbs", "--report", report, "--", sys.executable, HERE,
                                   "--program", "late", launch_lib],
                                  env=environment, capture_output=True, text=True, timeout=120)
            with open(report) as lines:
                records = [json.loads(line) for line in lines]
        self.assertEqual(done.stdout, "synchronize returned 700\n", done.stderr)
        first = [r for r in records if r["type"] == "first_error"]
        self.assertEqual(len(first), 1, records)
        self.assertEqual(first[0]["method"], "breadcrumbs")
        launch_record = first[0]["launch"]
        self.assertEqual(launch_record["seq"], 38)
        self.assertEqual(launch_record["stack"], "caller")
        self.assertEqual(launch_record["python_status"], "line kept for every launch")
        self.assertIsNone(launch_record["python"])
        self.assertEqual(launch_record["python_callsite"],
                         {"file": HERE, "line": line_of("FORWARD_STENCIL_LINE"), "function": "forward"})

    def test_gil_released(self):
        self.run_mode("nogil")

    def test_installed_package_frames_are_not_the_line(self):
        self.run_mode("package")


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--program":
        program(sys.argv[2], sys.argv[3])
        sys.exit(0)
    ARGS = sys.argv[1:4]
    unittest.main(argv=sys.argv[:1] + sys.argv[4:])
# SPDX-License-Identifier: MIT
