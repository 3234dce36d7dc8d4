# GPU case (issue 39, the Python door in a notebook): cells run one after another in one namespace, as Jupyter
# runs them, `import cuda_blockrun` in cell 1 and an embedding lookup with an id far past its table in cell 3.
# In IPython (where it is installed) the cells go through InteractiveShell.run_cell, which shows a cell's
# exception itself; without it, through exec (each cell named as Jupyter's kernel names it) with the exception
# handed to sys.excepthook, as a REPL does. Either
# way the verdict's note must follow the exception's traceback, naming the lookup's kernel, exactly, at cell 3's
# line 2; and cuda_blockrun.first_error() must say the same. Prints PASSED or FAILED lines; exit status 0 or 1
# (77: no CUDA).
#   python3 torch_notebook_cells.py
import io
import json
import os
import re
import sys

KERNEL = re.compile(r"vectorized_gather_kernel|indexSelect|index_select|index_elementwise_kernel")
CELLS = [
    "import cuda_blockrun",
    "import torch\n"
    "if not torch.cuda.is_available():\n"
    "    raise SystemExit(77)\n"
    "table = torch.nn.Embedding(1000, 64).cuda()\n"
    "tokens = torch.randint(0, 1000, (64,), device='cuda')\n"
    "torch.cuda.synchronize()",
    "tokens[7] = 10**9\n"
    "hidden = table(tokens)  # FAULT_LINE (cell 3, line 2)\n"
    "print(hidden.sum().item())",
    "record = cuda_blockrun.first_error()",
]


class Tee(io.TextIOBase):
    """Standard error, kept as well: the note is checked in what the user saw."""

    def __init__(self, stream):
        self.stream, self.kept = stream, []

    def write(self, text):
        self.kept.append(text)
        return self.stream.write(text)

    def flush(self):
        self.stream.flush()


tee = Tee(sys.stderr)
sys.stderr = tee
try:
    from IPython.core.interactiveshell import InteractiveShell
except ImportError:
    InteractiveShell = None
if InteractiveShell is not None:
    shell = InteractiveShell.instance(colors="NoColor")
    namespace = shell.user_ns
    for cell in CELLS:
        shell.run_cell(cell)
        if "record" not in namespace and cell is CELLS[1] and "table" not in namespace:
            sys.exit(77)
    how = "IPython"
else:
    namespace = {}
    for number, cell in enumerate(CELLS, start=1):
        try:
            # Named as Jupyter's kernel names a cell's code (ipykernel 6+: a file in its temporary directory).
            exec(compile(cell, "/tmp/ipykernel_%d/cell%d.py" % (os.getpid(), number), "exec"), namespace)
        except SystemExit:
            raise
        except BaseException:
            sys.excepthook(*sys.exc_info())
    how = "exec"
sys.stderr = tee.stream
seen = "".join(tee.kept)
record = namespace.get("record")
print("cells ran through " + how)
print("FIRST_ERROR " + json.dumps(record)[:2000])
problems = []
culprit = [line for line in seen.splitlines() if "[cuda-blockrun] culprit (exact" in line]
if not culprit or not KERNEL.search(culprit[0]):
    problems.append("the note names no exact culprit matching the lookup's kernel")
python_lines = [line for line in seen.splitlines() if "[cuda-blockrun]   Python: " in line]
if not python_lines or not python_lines[0].strip().endswith(":2 in <module>"):
    problems.append("the note's Python line is not cell 3's line 2: %s" % python_lines[:1])
if not record or record.get("certainty") != "exact" or not KERNEL.search(record["launch"].get("kernel") or ""):
    problems.append("first_error() does not name the lookup exactly")
for problem in problems:
    print("FAILED: " + problem)
print("PASSED: the notebook's cell 3 named" if not problems else "FAILED: the notebook case")
sys.exit(1 if problems else 0)
# SPDX-License-Identifier: MIT
