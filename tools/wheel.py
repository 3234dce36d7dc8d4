#!/usr/bin/env python3
"""The wheel of the Python package (issue 39): `cmake --build build --target wheel` runs it.

  wheel.py build --config CONFIG --out-dir DIR   DIR/cuda_blockrun-VERSION-py3-none-manylinux_2_28_x86_64.whl
  wheel.py check-glibc --config CONFIG [FILE...] fail if a binary needs a newer glibc than the tag claims
  wheel.py verify WHEEL                          check a wheel's RECORD, tag, modes and entry points

CONFIG is written by CMake (CMakeLists.txt, "the Python package"): the staged package (build/python/cuda_blockrun,
whose bin/ and lib/ link to the built binaries), the version, the glibc of the tag, strip and objdump.

Written by hand rather than by setuptools or pip, with the standard library only:
  - `pip wheel .` with setuptools builds in ./build, which is this tree's CMake build directory; offline it needs
    --no-build-isolation and Debian's python3-setuptools and python3-wheel; and bdist_wheel makes wheels of what
    it compiles itself: shipping binaries that CMake built takes a fake extension module to mark the wheel
    platform-specific, and --plat-name to tag it. scikit-build-core, made for this, is not in Debian 12.
  - The format is small (PEP 427, PEP 491, PyPA's binary distribution format): a zip of the files and a
    NAME-VERSION.dist-info directory with METADATA, WHEEL, entry_points.txt and RECORD (every file's sha256, urlsafe
    base64 without padding, and size). Written here, the wheel is reproducible (sorted entries, fixed times) and
    checked before it is written: the binaries are stripped copies, their executable bits kept in the zip's
    external attributes, and no binary needs a newer glibc than the platform tag claims.
"""
import argparse
import base64
import hashlib
import io
import json
import os
import re
import stat
import subprocess
import sys
import tempfile
import time
import zipfile

# What a manylinux binary may name as needed (auditwheel's policy, less the X11 and GL libraries): the C library's
# parts. Not libstdc++ or libgcc_s: the binaries carry their own C++ runtime (CMakeLists.txt), so that a program
# under the shim keeps its own, whatever its age.
ALLOWED_LIBRARIES = {"libc.so.6", "libm.so.6", "libdl.so.2", "libpthread.so.0", "librt.so.1"}
ALLOWED_LOADERS = re.compile(r"^ld-linux(-x86-64|-aarch64)?\.so\.[12]$")
# The package's files that must be there, relative to the package.
REQUIRED = ["__init__.py", "__main__.py"]
SKIPPED = re.compile(r"(^|/)__pycache__(/|$)|\.py[co]$")


def fail(message):
    print(f"wheel.py: {message}", file=sys.stderr)
    sys.exit(1)


def version_tuple(text):
    return tuple(int(part) for part in text.split("."))


def objdump_output(objdump, arguments, path):
    result = subprocess.run([objdump, *arguments, path], capture_output=True, text=True,
                            env=dict(os.environ, LC_ALL="C"))
    if result.returncode != 0:
        fail(f"{objdump} {' '.join(arguments)} {path}: {result.stderr.strip()}")
    return result.stdout


def dynamic_needs(objdump, path):
    """(needed libraries, {library: {version name}}) from the dynamic section and the version references."""
    output = objdump_output(objdump, ["-p"], path)
    needed = re.findall(r"^\s+NEEDED\s+(\S+)$", output, re.M)
    references = {}
    library = None
    in_references = False
    for line in output.splitlines():
        if line.startswith("Version References:"):
            in_references = True
            continue
        if not in_references:
            continue
        match = re.match(r"^\s+required from (\S+):$", line)
        if match:
            library = match.group(1)
            references.setdefault(library, set())
            continue
        match = re.match(r"^\s+0x[0-9a-f]+ 0x[0-9a-f]+ \d+ (\S+)$", line)
        if match and library:
            references[library].add(match.group(1))
            continue
        if line.strip():
            in_references = False
    return needed, references


def symbols_of_version(objdump, path, version):
    """The dynamic symbols that carry VERSION (for the message when a binary needs too new a glibc)."""
    output = objdump_output(objdump, ["-T"], path)
    pattern = re.compile(r"\(?" + re.escape(version) + r"\)?\s+(\S+)$")
    return sorted({match.group(1) for match in map(pattern.search, output.splitlines()) if match})


def check_binary(objdump, path, glibc):
    """Problems of one binary (empty if it runs on glibc GLIBC), and the newest GLIBC_ version it needs."""
    problems = []
    newest = (0,)
    needed, references = dynamic_needs(objdump, path)
    for library in needed:
        if library not in ALLOWED_LIBRARIES and not ALLOWED_LOADERS.match(library):
            problems.append(f"needs {library}, which a manylinux system need not have")
    limit = version_tuple(glibc)
    for library, versions in sorted(references.items()):
        for version in sorted(versions):
            match = re.match(r"^GLIBC_(\d+(?:\.\d+)+)$", version)
            if match:
                number = version_tuple(match.group(1))
                newest = max(newest, number)
                if number > limit:
                    names = ", ".join(symbols_of_version(objdump, path, version)) or "?"
                    problems.append(f"needs {version} of {library} (newer than the tag's {glibc}): {names}")
            elif version == "GLIBC_PRIVATE":
                problems.append(f"needs GLIBC_PRIVATE of {library}: glibc's internals, of one glibc build only")
            else:
                problems.append(f"needs {version} of {library}: its C++ runtime or another library is not linked in")
    return problems, newest


def check_glibc(config, files):
    """Problems of the binaries FILES ({name: path}) against the glibc of the tag; prints what each needs."""
    problems = []
    for name, path in files.items():
        found, newest = check_binary(config["objdump"], path, config["glibc"])
        print(f"{name}: newest GLIBC_ version needed: {'.'.join(map(str, newest))}"
              f" (the tag claims {config['glibc']})")
        problems += [f"{name}: {problem}" for problem in found]
    return problems


def record_hash(data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode("ascii")
    return f"sha256={digest}"


def zip_time():
    # Reproducible: SOURCE_DATE_EPOCH where it is set, else the earliest time a zip can hold.
    epoch = os.environ.get("SOURCE_DATE_EPOCH")
    if epoch:
        return time.gmtime(max(int(epoch), 315532800))[:6]
    return (1980, 1, 1, 0, 0, 0)


def wheel_names(config):
    # PEP 427's escaping of the name; the platform tag from the glibc the binaries were checked against.
    name = re.sub(r"[-_.]+", "_", config["name"]).lower()
    major, minor = config["glibc"].split(".")[:2]
    tag = f"py3-none-manylinux_{major}_{minor}_{config['machine']}"
    return name, f"{name}-{config['version']}.dist-info", f"{name}-{config['version']}-{tag}.whl", tag


def metadata(config):
    with open(config["readme"], encoding="utf-8") as readme:
        description = readme.read()
    lines = [
        "Metadata-Version: 2.1",
        f"Name: {config['name']}",
        f"Version: {config['version']}",
        f"Summary: {config['summary']}",
        f"License: {config['license_name']}",
        f"Requires-Python: {config['requires_python']}",
    ]
    lines += [f"Classifier: {classifier}" for classifier in config["classifiers"]]
    lines.append("Description-Content-Type: text/markdown")
    return ("\n".join(lines) + "\n\n" + description).encode("utf-8")


def package_files(package):
    """(path in the package, real file) for every file of the staged package, links followed."""
    files = []
    for directory, subdirectories, names in os.walk(package, followlinks=True):
        subdirectories.sort()
        for name in sorted(names):
            path = os.path.join(directory, name)
            relative = os.path.relpath(path, package).replace(os.sep, "/")
            if SKIPPED.search(relative):
                continue
            real = os.path.realpath(path)
            if not os.path.isfile(real):
                fail(f"{path} points at {real}, which is not a file (is the tree built?)")
            files.append((relative, real))
    return files


def build(config, out_dir):
    package = config["package"]
    import_name = os.path.basename(os.path.normpath(package))
    files = dict(package_files(package))
    missing = [name for name in REQUIRED + config["binaries"] if name not in files]
    if missing:
        fail(f"{package} lacks {', '.join(missing)} (python/{import_name}/ and the build's binaries)")
    _, dist_info, wheel_name, tag = wheel_names(config)
    entries = []  # (path in the wheel, bytes, mode)
    with tempfile.TemporaryDirectory(prefix="wheel-") as scratch:
        stripped = {}
        for relative in config["binaries"]:
            copy = os.path.join(scratch, relative.replace("/", "_"))
            result = subprocess.run([config["strip"], "-o", copy, files[relative]], capture_output=True, text=True)
            if result.returncode != 0:
                fail(f"cannot strip {files[relative]}: {result.stderr.strip()}")
            stripped[f"{import_name}/{relative}"] = copy
            files[relative] = copy
        problems = check_glibc(config, stripped)
        if problems:
            fail("the binaries do not run on the glibc the tag claims:\n  " + "\n  ".join(problems))
        for relative, real in sorted(files.items()):
            with open(real, "rb") as file:
                data = file.read()
            executable = relative in config["binaries"] or os.stat(real).st_mode & 0o111
            entries.append((f"{import_name}/{relative}", data, 0o755 if executable else 0o644))
    wheel_file = "\n".join(["Wheel-Version: 1.0", "Generator: cuda-blockrun tools/wheel.py", "Root-Is-Purelib: false",
                            f"Tag: {tag}", ""])
    entry_points = "".join(f"[{group}]\n" + "".join(f"{line}\n" for line in lines) + "\n"
                           for group, lines in config["entry_points"].items())
    with open(config["license"], "rb") as file:
        license_text = file.read()
    entries += [
        (f"{dist_info}/METADATA", metadata(config), 0o644),
        (f"{dist_info}/WHEEL", wheel_file.encode(), 0o644),
        (f"{dist_info}/entry_points.txt", entry_points.encode(), 0o644),
        (f"{dist_info}/top_level.txt", f"{import_name}\n".encode(), 0o644),
        (f"{dist_info}/LICENSE", license_text, 0o644),
    ]
    record = "".join(f"{path},{record_hash(data)},{len(data)}\n" for path, data, _ in entries)
    record += f"{dist_info}/RECORD,,\n"
    entries.append((f"{dist_info}/RECORD", record.encode(), 0o644))

    os.makedirs(out_dir, exist_ok=True)
    target = os.path.join(out_dir, wheel_name)
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for path, data, mode in entries:
            info = zipfile.ZipInfo(path, zip_time())
            info.create_system = 3  # Unix: external_attr holds st_mode
            info.external_attr = (stat.S_IFREG | mode) << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            archive.writestr(info, data)
    with open(target + ".part", "wb") as file:
        file.write(buffer.getvalue())
    os.replace(target + ".part", target)
    print(target)
    return target


def verify(path):
    """Problems of a wheel: its RECORD against its files, its tag against its name, its binaries' modes."""
    problems = []
    name_match = re.match(r"^([^-]+)-([^-]+)-([^-]+)-([^-]+)-([^-]+)\.whl$", os.path.basename(path))
    if not name_match:
        return [f"{path}: not a wheel's name"]
    name, version, python, abi, platform = name_match.groups()
    dist_info = f"{name}-{version}.dist-info"
    with zipfile.ZipFile(path) as archive:
        names = archive.namelist()
        if f"{dist_info}/RECORD" not in names:
            return [f"{path}: no {dist_info}/RECORD"]
        rows = {}
        for row in archive.read(f"{dist_info}/RECORD").decode().splitlines():
            file, digest, size = row.rsplit(",", 2)
            rows[file] = (digest, size)
        for file in names:
            data = archive.read(file)
            if file not in rows:
                problems.append(f"{file}: not in RECORD")
            elif file != f"{dist_info}/RECORD" and rows[file] != (record_hash(data), str(len(data))):
                problems.append(f"{file}: RECORD's hash or size is wrong")
            mode = archive.getinfo(file).external_attr >> 16
            if not stat.S_ISREG(mode):
                problems.append(f"{file}: not a regular file's mode ({oct(mode)})")
            if re.search(r"/(bin|lib)/", file) and mode & 0o111 != 0o111:
                problems.append(f"{file}: not executable ({oct(mode)})")
        problems += [f"{file}: in RECORD, not in the wheel" for file in rows if file not in names]
        wheel = archive.read(f"{dist_info}/WHEEL").decode()
        tags = re.findall(r"^Tag: (\S+)$", wheel, re.M)
        if tags != [f"{python}-{abi}-{platform}"]:
            problems.append(f"WHEEL's tags {tags} are not the name's {python}-{abi}-{platform}")
        if "Root-Is-Purelib: false" not in wheel:
            problems.append("WHEEL: Root-Is-Purelib is not false")
        if f"{dist_info}/entry_points.txt" not in names:
            problems.append("no entry_points.txt")
    return problems


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    build_command = commands.add_parser("build")
    build_command.add_argument("--config", required=True)
    build_command.add_argument("--out-dir", required=True)
    check_command = commands.add_parser("check-glibc")
    check_command.add_argument("--config", required=True)
    check_command.add_argument("files", nargs="*", help="default: the staged package's binaries")
    verify_command = commands.add_parser("verify")
    verify_command.add_argument("wheel")
    arguments = parser.parse_args()

    if arguments.command == "verify":
        problems = verify(arguments.wheel)
        for problem in problems:
            print(f"wheel.py verify: {problem}", file=sys.stderr)
        if not problems:
            print(f"{arguments.wheel}: RECORD, tag, modes and entry points are right")
        return 1 if problems else 0
    with open(arguments.config, encoding="utf-8") as file:
        config = json.load(file)
    if arguments.command == "build":
        build(config, arguments.out_dir)
        return 0
    if arguments.files:
        files = {path: path for path in arguments.files}
    else:
        files = {binary: os.path.join(config["package"], binary) for binary in config["binaries"]}
    for path in files.values():
        if not os.path.isfile(path):
            fail(f"{path}: no such file (is the tree built?)")
    problems = check_glibc(config, files)
    for problem in problems:
        print(f"wheel.py check-glibc: {problem}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
# SPDX-License-Identifier: MIT
