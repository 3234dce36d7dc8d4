#!/usr/bin/env python3
"""The Python door (python/cuda_blockrun, docs/python.md) on the simulated CUDA stack, run by ctest (label
`python`): `import cuda_blockrun` and `python -m cuda_blockrun` give the wrapper's verdicts.

Usage: test_package.py PACKAGE_PARENT LAUNCH_LIB SIM_LIBDIR
  PACKAGE_PARENT  the directory holding the staged package cuda_blockrun/ (build/python)
  LAUNCH_LIB      tests/python/launch_lib.cpp built: simulated launches callable from ctypes
  SIM_LIBDIR      the simulated libcuda, libcudart

Each case runs a small program (PROGRAM below, its lines found by their `# MARK:` comments) in a fresh
interpreter, with the `stencil` launch faulting (CUDA_SIM_FAULT=stencil:1), and checks what it printed and the
first_error it reported. A culprit is checked with its launch number, its Python line and its certainty, and no
other launch may be called exact.
"""
import json
import os
import subprocess
import sys
import tempfile
import textwrap
import unittest

PACKAGE_PARENT, LAUNCH_LIB, SIM_LIBDIR = (os.path.abspath(a) for a in sys.argv[1:4])
del sys.argv[1:4]

# The program under test. `{before}` is what runs before the import (nothing, or a CUDA library's load), `{enable}`
# the settings. The launches: fill, stencil (faults), fill (the context refuses it: the fault surfaces there).
PROGRAM = """\
import ctypes, json, os, sys
{before}
import cuda_blockrun
{enable}
lib = ctypes.CDLL(sys.argv[1])
lib.launch_fill()
lib.launch_stencil()  # MARK: culprit
lib.launch_fill()
result = lib.synchronize()
print("STATUS " + json.dumps(cuda_blockrun.status()))
print("RESULT %d" % result)
record = cuda_blockrun.first_error()
print("FIRST_ERROR " + json.dumps(record))
if result:
    raise RuntimeError("CUDA error: an illegal memory access was encountered (%d)" % result)
"""
CULPRIT_SEQ = 2  # fill is #1, stencil #2


def marker_line(text, marker):
    for number, line in enumerate(text.splitlines(), start=1):
        if "# MARK: " + marker in line:
            return number
    raise AssertionError("no marker " + marker)


class Run:
    def __init__(self, completed, script_path):
        self.returncode = completed.returncode
        self.stdout = completed.stdout
        self.stderr = completed.stderr
        self.script_path = script_path

    def tagged(self, tag):
        for line in self.stdout.splitlines():
            if line.startswith(tag + " "):
                return json.loads(line[len(tag) + 1:])
        raise AssertionError("no %s line in the output:\n%s\n%s" % (tag, self.stdout, self.stderr))


def environment(extra=None):
    env = {k: v for k, v in os.environ.items() if not k.startswith("CUDA_BLOCKRUN") and k != "LD_PRELOAD"}
    env.update({
        "PYTHONPATH": PACKAGE_PARENT,
        "LD_LIBRARY_PATH": SIM_LIBDIR,
        "CUDA_SIM_FAULT": "stencil:1",
        "PYTHONDONTWRITEBYTECODE": "1",
    })
    env.update(extra or {})
    return env


class PackageTest(unittest.TestCase):
    def setUp(self):
        self.directory = tempfile.TemporaryDirectory()
        self.addCleanup(self.directory.cleanup)

    def write(self, name, text):
        path = os.path.join(self.directory.name, name)
        with open(path, "w") as file:
            file.write(text)
        return path

    def run_program(self, before="", enable="", extra_env=None, front=None, program=PROGRAM):
        script = self.write("program.py", program.format(before=before, enable=enable))
        command = [sys.executable] + (front or []) + [script, LAUNCH_LIB]
        completed = subprocess.run(command, env=environment(extra_env), cwd=self.directory.name,
                                   capture_output=True, text=True, timeout=120)
        return Run(completed, script)

    def assert_culprit(self, record, method, script):
        self.assertIsNotNone(record, "no first_error record")
        self.assertEqual(record["certainty"], "exact", record)
        self.assertEqual(record["method"], method, record)
        launch = record["launch"]
        self.assertEqual(launch["seq"], CULPRIT_SEQ, record)
        self.assertEqual(launch["kernel_base"], "stencil", record)
        site = launch["python_callsite"]
        self.assertEqual(os.path.realpath(site["file"]), os.path.realpath(script), record)
        line = marker_line(open(script).read(), "culprit")
        self.assertEqual(site["line"], line, record)
        # Never confidently wrong: the surfacing launch (#3) is not the culprit, and no suspect is exact.
        for suspect in record.get("suspects") or []:
            self.assertNotEqual(suspect.get("seq"), CULPRIT_SEQ + 1)

    def assert_note(self, run, method):
        # The note follows the traceback: after the exception's line, naming the culprit and its Python line.
        stderr = run.stderr
        exception_at = stderr.rfind("RuntimeError: CUDA error")
        self.assertGreaterEqual(exception_at, 0, stderr)
        note = stderr[exception_at:]
        self.assertIn("[cuda-blockrun] culprit (exact, by %s): stencil(" % method, note)
        self.assertIn("launch #%d (stencil#1)" % CULPRIT_SEQ, note)
        line = marker_line(open(run.script_path).read(), "culprit")
        self.assertIn("Python: %s:%d" % (run.script_path, line), note)

    # ---- import before CUDA ----
    def test_import_first_breadcrumbs_name_the_culprit(self):
        # The default: breadcrumbs, as the wrapper's default run. Through a shim loaded by dlopen, breadcrumbs need
        # the driver's launches, which reach the shim only through the rebound dlsym (issue 39's gap).
        run = self.run_program()
        self.assertEqual(run.returncode, 1, run.stderr)
        status = run.tagged("STATUS")
        self.assertTrue(status["enabled"], status)
        self.assertEqual(status["how"], "import")
        self.assert_culprit(run.tagged("FIRST_ERROR"), "breadcrumbs", run.script_path)
        self.assert_note(run, "breadcrumbs")
        self.assertIn("driver log: Sticky error detected", run.stderr)  # the driver's launches were seen

    def test_a_shim_loaded_by_ctypes_alone_names_it_too(self):
        # Issue 39's measurement: the shim loaded by ctypes as the first line (no package) saw the runtime's launches
        # but not the driver's, and breadcrumbs ended with suspects. The shim, loaded after start, now points
        # libcuda's own exported hooks at itself (claim_driver_library), so the driver's launches reach it.
        shim = os.path.join(PACKAGE_PARENT, "cuda_blockrun", "lib", "libcuda_blockrun.so")
        program = (
            "import ctypes, os, sys\n"
            "ctypes.CDLL(%r, mode=os.RTLD_GLOBAL)\n"
            "lib = ctypes.CDLL(sys.argv[1])\n"
            "lib.launch_fill(); lib.launch_stencil(); lib.launch_fill(); lib.synchronize()\n" % shim
        )
        report = os.path.join(self.directory.name, "ctypes.jsonl")
        self.run_program(program=program.replace("{", "{{").replace("}", "}}"),
                         extra_env={"CUDA_BLOCKRUN_BREADCRUMBS": "1", "CUDA_BLOCKRUN_REPORT": report})
        records = [json.loads(line) for line in open(report)]
        first = [r for r in records if r["type"] == "first_error"][0]
        self.assertEqual((first["certainty"], first["method"], first["launch"]["seq"]),
                         ("exact", "breadcrumbs", CULPRIT_SEQ), first)

    def test_the_simulated_driver_hands_out_its_own_functions(self):
        # The simulator's fidelity, on which the tests above rest: like the real driver, cuGetProcAddress answers
        # with libcuda's own functions even where an object loaded before it exports the same names (here the
        # shim, switched off so that it claims nothing). Without it, the Python door's gap never showed here.
        shim = os.path.join(PACKAGE_PARENT, "cuda_blockrun", "lib", "libcuda_blockrun.so")
        program = textwrap.dedent("""\
            import ctypes, os
            shim = ctypes.CDLL(SHIM, mode=os.RTLD_GLOBAL)
            driver = ctypes.CDLL("libcuda.so.1")
            function = ctypes.c_void_p()
            status = ctypes.c_int()
            result = driver.cuGetProcAddress_v2(b"cuLaunchKernel", ctypes.byref(function), 13000,
                                                ctypes.c_uint64(0), ctypes.byref(status))
            own = ctypes.cast(driver.cuLaunchKernel, ctypes.c_void_p).value
            shims = ctypes.cast(shim.cuLaunchKernel, ctypes.c_void_p).value
            print("ADDRESSES %d %d %d %d" % (result, function.value, own, shims))
            """).replace("SHIM", repr(shim))
        run = self.run_program(program=program.replace("{", "{{").replace("}", "}}"),
                               extra_env={"CUDA_BLOCKRUN": "0"})
        line = [l for l in run.stdout.splitlines() if l.startswith("ADDRESSES ")]
        self.assertTrue(line, run.stderr)
        result, handed, own, shims = (int(x) for x in line[0].split()[1:])
        self.assertEqual(result, 0)
        self.assertEqual(handed, own)
        self.assertNotEqual(handed, shims)

    def test_import_first_block_names_the_culprit(self):
        # Every launch blocked (blocking the stencil alone leaves the fill before it unfinished: suspects, rightly).
        run = self.run_program(enable="cuda_blockrun.enable(block='all')")
        self.assert_culprit(run.tagged("FIRST_ERROR"), "blocking", run.script_path)
        self.assert_note(run, "blocking")

    def test_same_verdict_as_the_wrapper(self):
        # The same program through the wrapper (LD_PRELOAD): the same culprit, method and line, in each mode.
        wrapper = os.path.join(PACKAGE_PARENT, "cuda_blockrun", "bin", "cuda-blockrun")
        for flags, keywords, method in (([], "", "breadcrumbs"),
                                        (["--block", "all"], "block='all'", "blocking")):
            with self.subTest(flags=flags):
                imported = self.run_program(enable="cuda_blockrun.enable(%s)" % keywords)
                script = self.write("wrapped.py", PROGRAM.format(before="", enable=""))
                report = os.path.join(self.directory.name, "wrapped%d.jsonl" % len(flags))
                subprocess.run([wrapper, "--report", report] + flags + ["--", sys.executable, script, LAUNCH_LIB],
                               env=environment(), capture_output=True, text=True, timeout=120)
                mine = imported.tagged("FIRST_ERROR")
                theirs = [json.loads(line) for line in open(report) if '"first_error"' in line][0]
                for key in ("error", "certainty", "method", "surfaced_api"):
                    self.assertEqual(mine[key], theirs[key], (key, mine, theirs))
                for key in ("seq", "kernel", "thread_launch"):
                    self.assertEqual(mine["launch"][key], theirs["launch"][key], key)
                self.assertEqual(mine["launch"]["python_callsite"]["line"],
                                 theirs["launch"]["python_callsite"]["line"])
                self.assert_culprit(mine, method, imported.script_path)

    def test_report_and_trace_through_import(self):
        report = os.path.join(self.directory.name, "mine.%p.jsonl")
        trace = os.path.join(self.directory.name, "trace.json")
        run = self.run_program(enable="cuda_blockrun.enable(report=%r, trace=%r)" % (report, trace))
        record = run.tagged("FIRST_ERROR")
        self.assert_culprit(record, "breadcrumbs", run.script_path)
        written = [f for f in os.listdir(self.directory.name) if f.startswith("mine.")]
        self.assertEqual(len(written), 1, written)
        types = [json.loads(line)["type"] for line in open(os.path.join(self.directory.name, written[0]))]
        self.assertEqual(types[0], "start")
        self.assertIn("summary", types)
        events = json.load(open(trace))
        names = json.dumps(events)
        self.assertIn("stencil", names)

    def test_first_error_is_none_without_an_error(self):
        program = "import cuda_blockrun, ctypes, sys\nlib = ctypes.CDLL(sys.argv[1])\nlib.launch_fill()\n" \
                  "print('SYNC %d' % lib.synchronize())\nprint('FIRST_ERROR null')\n" \
                  "assert cuda_blockrun.first_error() is None\n"
        run = self.run_program(program=program.replace("{", "{{").replace("}", "}}"),
                               extra_env={"CUDA_SIM_FAULT": ""})
        self.assertEqual(run.returncode, 0, run.stderr)
        self.assertIn("SYNC 0", run.stdout)

    def test_private_report_is_removed_at_exit(self):
        run = self.run_program()
        report = run.tagged("STATUS")["report"]
        self.assertTrue(report.startswith(tempfile.gettempdir()), report)
        self.assertFalse(os.path.exists(os.path.dirname(report)), report)

    # ---- settings ----
    def test_a_wrong_setting_raises_with_the_wrappers_words(self):
        program = textwrap.dedent("""\
            import cuda_blockrun
            try:
                cuda_blockrun.enable(blok="stencil")
            except cuda_blockrun.ConfigError as error:
                print("ERROR " + str(error))
            try:
                cuda_blockrun.enable(callsites="sometimes")
            except cuda_blockrun.ConfigError as error:
                print("ERROR2 " + str(error))
            """)
        run = self.run_program(program=program.replace("{", "{{").replace("}", "}}"))
        self.assertIn("ERROR cuda_blockrun.enable: unknown option 'blok' (did you mean 'block'?)", run.stdout)
        self.assertIn("ERROR2 cuda_blockrun.enable: ", run.stdout)
        self.assertIn("sometimes", run.stdout)

    def test_a_wrong_variable_fails_the_import(self):
        run = self.run_program(extra_env={"CUDA_BLOCKRUN_BLOK": "all"})
        self.assertNotEqual(run.returncode, 0)
        self.assertIn("import cuda_blockrun: ", run.stderr)
        self.assertIn("CUDA_BLOCKRUN_BLOCK", run.stderr)  # the did-you-mean

    def test_enable_after_cuda_code_loaded_is_refused(self):
        program = textwrap.dedent("""\
            import ctypes, sys
            import cuda_blockrun
            lib = ctypes.CDLL(sys.argv[1])
            try:
                cuda_blockrun.enable(block="stencil")
            except cuda_blockrun.ConfigError as error:
                print("ERROR " + str(error))
            """)
        run = self.run_program(program=program.replace("{", "{{").replace("}", "}}"))
        self.assertIn("ERROR cuda_blockrun.enable: too late to change the settings: libcudart was loaded since",
                      run.stdout)

    # ---- imported late ----
    def test_import_after_cuda_libraries_loaded_still_sees_everything(self):
        # The CUDA runtime loaded (torch imported first) but not yet initialized: its slots are rebound.
        run = self.run_program(before="ctypes.CDLL(sys.argv[1])")
        self.assertIn("imported after libcudart was loaded (CUDA not yet initialized)", run.stderr)
        status = run.tagged("STATUS")
        self.assertTrue(status["enabled"], status)
        self.assertIn("libcudart", status["loaded_before"])
        self.assert_culprit(run.tagged("FIRST_ERROR"), "breadcrumbs", run.script_path)

    def test_import_after_cuda_initialized_says_so_and_changes_nothing(self):
        before = "early = ctypes.CDLL(sys.argv[1]); print('EARLY %d' % early.synchronize())"
        run = self.run_program(before=before, extra_env={"CUDA_SIM_FAULT": "stencil:1", "PYTHONWARNINGS": "always"})
        self.assertIn("EARLY 0", run.stdout)
        self.assertIn("CUDA was already initialized in this process", run.stderr)
        self.assertIn("NOT enabled", run.stderr)
        self.assertIn("Import cuda_blockrun before anything that uses CUDA", run.stderr)
        status = run.tagged("STATUS")
        self.assertFalse(status["enabled"], status)
        self.assertIsNone(run.tagged("FIRST_ERROR"))
        # The program saw what it sees without the tool.
        self.assertEqual(run.tagged("RESULT"), 700)
        self.assertNotIn("[cuda-blockrun] first error", run.stderr)

    # ---- python -m cuda_blockrun ----
    def test_dash_m_names_the_culprit_and_notes_it(self):
        run = self.run_program(front=["-m", "cuda_blockrun"])
        self.assertEqual(run.returncode, 1, run.stderr)
        self.assertEqual(run.tagged("STATUS")["how"], "LD_PRELOAD")
        self.assert_culprit(run.tagged("FIRST_ERROR"), "breadcrumbs", run.script_path)
        self.assert_note(run, "breadcrumbs")
        # The runner's frames are not in the traceback: it reads as the script's own.
        traceback = run.stderr[run.stderr.rfind("Traceback"):]
        self.assertNotIn("runpy", traceback)
        self.assertNotIn("_run.py", traceback)

    def test_dash_m_localize(self):
        run = self.run_program(front=["-m", "cuda_blockrun", "--localize"])
        self.assertEqual(run.returncode, 1, run.stderr)
        line = marker_line(open(run.script_path).read(), "culprit")
        self.assertIn("localize: culprit: kernel stencil(", run.stderr)
        self.assertIn("launch #%d (stencil#1)" % CULPRIT_SEQ, run.stderr)
        self.assertIn("python: %s:%d" % (run.script_path, line), run.stderr)

    def test_dash_m_runs_a_module_and_code(self):
        module = self.write("faulty_module.py", PROGRAM.format(before="", enable=""))
        env = environment({"PYTHONPATH": PACKAGE_PARENT + os.pathsep + self.directory.name})
        done = subprocess.run([sys.executable, "-m", "cuda_blockrun", "--block", "all", "-m", "faulty_module",
                               LAUNCH_LIB], env=env, capture_output=True, text=True, timeout=120,
                              cwd=self.directory.name)
        self.assert_culprit(Run(done, module).tagged("FIRST_ERROR"), "blocking", module)
        done = subprocess.run([sys.executable, "-m", "cuda_blockrun", "-c", "import sys; print('ARGS', sys.argv)",
                               "x", "y"], env=env, capture_output=True, text=True, timeout=120)
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertIn("ARGS ['-c', 'x', 'y']", done.stdout)

    def test_dash_m_wrong_flag(self):
        done = subprocess.run([sys.executable, "-m", "cuda_blockrun", "--blok", "all", "x.py"], env=environment(),
                              capture_output=True, text=True, timeout=60)
        self.assertEqual(done.returncode, 2)
        self.assertIn("did you mean '--block'", done.stderr)

    # ---- notebooks ----
    def test_ipython_hook_adds_the_note(self):
        # A notebook-shaped run: cells executed one by one in one shell, the fault in cell 3. IPython itself where
        # it is installed, else a stand-in with the same API (set_custom_exc, showtraceback, custom_exceptions).
        program = textwrap.dedent("""\
            import sys
            try:
                from IPython.core.interactiveshell import InteractiveShell
                shell = InteractiveShell.instance(colors="NoColor")
                kind = "ipython"
            except ImportError:
                import traceback, types
                class Shell:
                    custom_exceptions = ()
                    CustomTB = None
                    def set_custom_exc(self, types_, handler):
                        self.custom_exceptions = types_
                        self.CustomTB = types.MethodType(handler, self)
                    def showtraceback(self, exc_tuple=None, tb_offset=None):
                        traceback.print_exception(*exc_tuple)
                    def run_cell(self, code):
                        try:
                            exec(code, self.namespace)
                        except self.custom_exceptions:
                            self.CustomTB(*sys.exc_info())
                shell = Shell()
                shell.namespace = {}
                module = types.ModuleType("IPython")
                module.get_ipython = lambda: shell
                sys.modules["IPython"] = module
                kind = "stand-in"
            print("SHELL " + '"' + kind + '"')
            cells = [
                "import cuda_blockrun",
                "import ctypes, sys\\nlib = ctypes.CDLL(%r)" % sys.argv[1],
                "lib.launch_fill()\\nlib.launch_stencil()\\nlib.launch_fill()\\n"
                "r = lib.synchronize()\\nif r: raise RuntimeError('CUDA error: illegal address')",
                "print('FIRST_ERROR ' + __import__('json').dumps(cuda_blockrun.first_error()))",
            ]
            for cell in cells:
                shell.run_cell(cell)
            """)
        run = self.run_program(program=program.replace("{", "{{").replace("}", "}}"))
        record = run.tagged("FIRST_ERROR")
        self.assertEqual(record["certainty"], "exact", record)
        self.assertEqual(record["launch"]["seq"], CULPRIT_SEQ)
        self.assertIn("RuntimeError: CUDA error: illegal address", run.stdout + run.stderr)
        self.assertIn("[cuda-blockrun] culprit (exact, by breadcrumbs): stencil(", run.stderr)


if __name__ == "__main__":
    unittest.main(verbosity=2)
