"""C code generation of CasADi functions into a disk cache of compiled libraries (shared by the
compiled BDF loop, ``ffopt.dae.bdf``, and the compiled plant of the verification, ``ffopt.sim.plant``).

Libraries live in ``$FFOPT_CACHE_DIR`` (default ``~/.cache/ffopt``) under a hash of what they
compute. Tiered compilation (FFOPT_COMPILE=tiered, the default) of the BDF step: a first run of a
step uses CasADi's virtual machine (one plan's BDF solve there costs less than gcc -O0: UR5, 6 axes,
0.84 s against 1.9 s) while -O2 is built in a detached background process (14.7 s of gcc CPU on the
UR5), one such build per cache at a time; later solves, in the same process or the next, use it. A
failed background build leaves the compiler's message beside the library (``build_failure``), which
the next run reports. FFOPT_COMPILE=sync: -O2 before the first use; quick: -O0 before the first use.
"""

from __future__ import annotations

import hashlib
import os
import shlex
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import casadi as ca

__all__ = ["CFLAGS", "CFLAGS_QUICK", "COMPILE_MODES", "available_cores", "build_failure", "build_in_background", "cache_dir",
           "compile_library", "compile_mode", "compiler", "compiler_message", "library_key", "write_source"]

CFLAGS = ("-O2", "-shared", "-fPIC")
CFLAGS_QUICK = ("-O0", "-shared", "-fPIC")
COMPILE_MODES = ("tiered", "sync", "quick")
_STALE_BUILD_S = 900  # a background build's marker older than this is from a build that died
# Bounds of every gcc ffopt starts (a huge model's generated code, e.g. 50 joints: 10 MB of C, made gcc -O2
# run past 15 minutes and 5.7 GB): a source larger than the limit is not compiled (the virtual machine runs
# it, as without a compiler), and the compiler's CPU time and address space are capped (ulimit -t / -v).
# A background build ends at its caps at the latest, also after the plan that started it has ended.
# UR5 BDF step: 1.1 MB (gcc -O2 14.7 s CPU); the 6-axis arm with a passive forearm flexure, exact-tracking NLP's
# interval Hessians: 15.2 MB (gcc -O0 15 s, once per model; in the virtual machine its 3 Hessians took 10 s more)
MAX_SOURCE_BYTES = {"-O2": 4_000_000, "-O0": 24_000_000}
COMPILER_CPU_S = 600
COMPILER_MEMORY_BYTES = 4 << 30
_LIMITS = f"ulimit -t {COMPILER_CPU_S}; ulimit -v {COMPILER_MEMORY_BYTES >> 10}; "  # sh: before the compiler


def compiler() -> str:
    """The C compiler: $CC, default gcc."""
    return os.environ.get("CC", "gcc")


def cache_dir(override=None) -> Path:
    """Folder of compiled libraries and other cached results: ``override``, else $FFOPT_CACHE_DIR,
    else ~/.cache/ffopt."""
    if override is not None:
        return Path(override)
    env = os.environ.get("FFOPT_CACHE_DIR")
    return Path(env) if env else Path.home() / ".cache" / "ffopt"


def available_cores() -> int:
    """Cores this process may run on (its CPU affinity, not the machine's count): how many threads the
    compiled code is run on (the verification's simulations, the NLP's interval kernels)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # platforms without sched_getaffinity
        return max(1, os.cpu_count() or 1)


def compile_mode() -> str:
    """FFOPT_COMPILE: tiered (default), sync or quick."""
    mode = os.environ.get("FFOPT_COMPILE", "tiered")
    if mode not in COMPILE_MODES:
        raise ValueError(f"FFOPT_COMPILE must be one of {', '.join(COMPILE_MODES)}, got {mode!r}")
    return mode


def _generate(functions, folder: str, extra_source: str = "") -> str:
    """C code for ``functions`` (plus ``extra_source``, C that calls them) in ``folder``; returns the file."""
    gen = ca.CodeGenerator(f"{functions[0].name()}.c", {"with_header": False})
    for f in functions:
        gen.add(f)
    c_file = gen.generate(folder + os.sep)
    if extra_source:
        with open(c_file, "a") as f:
            f.write(extra_source)
    return c_file


def write_source(functions, c_path: Path, extra_source: str = "") -> None:
    """Generate C code for ``functions`` (plus ``extra_source``) into ``c_path`` (atomically)."""
    c_path.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        c_file = _generate(functions, tmp, extra_source)
        fd, tmp_c = tempfile.mkstemp(dir=c_path.parent, prefix=".tmp_src_", suffix=".c")
        os.close(fd)
        shutil.copyfile(c_file, tmp_c)
        os.replace(tmp_c, c_path)


def compiler_message(err) -> str:
    """The line of a failed build worth showing: the compiler's first line that names an error, else the
    first line (of an exception or of the compiler's output)."""
    lines = [line.strip() for line in str(err).strip().splitlines() if line.strip()]
    if not lines:
        return type(err).__name__ if isinstance(err, BaseException) else "the compiler failed without a message"
    return next((line for line in lines if "error" in line), lines[0])[:300]


def library_key(functions, *settings) -> str | None:
    """Hash key of a library: the serialized ``functions`` and the ``settings`` that shape the code (a version,
    the compiler and its flags, ...); None if a function cannot be serialized."""
    try:
        text = "".join(f.serialize() for f in functions)
    except RuntimeError:
        return None
    return hashlib.sha256((repr((ca.__version__, compiler()) + settings) + text).encode()).hexdigest()


def build_failure(so_path: Path) -> str | None:
    """The compiler's message if the background build of ``so_path`` failed (its ``.failed`` file), else None."""
    try:
        return compiler_message(so_path.with_suffix(".failed").read_text())
    except FileNotFoundError:
        return None


def compile_library(functions, so_path: Path, extra_source: str = "", flags=CFLAGS) -> None:
    """Generate C code for ``functions`` (plus ``extra_source``, C that calls them) and compile them
    into one library ``so_path`` atomically. Raises OSError naming the command and the compiler's
    message if it fails."""
    cc = shutil.which(compiler())
    if cc is None:
        raise OSError(f"C compiler {compiler()!r} not found")
    so_path.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        c_file = _generate(functions, tmp, extra_source)
        fd, tmp_so = tempfile.mkstemp(dir=so_path.parent, prefix=".tmp_lib_", suffix=".so")
        os.close(fd)
        try:
            check_source_size(Path(c_file), flags)
            cmd = [cc, *flags, "-o", tmp_so, c_file, "-lm"]
            # killed on Ctrl-C / SIGTERM too (subprocess.run kills its child on KeyboardInterrupt)
            proc = subprocess.run(["sh", "-c", _LIMITS + 'exec "$0" "$@"', *cmd], capture_output=True, text=True,
                                  timeout=COMPILER_CPU_S)
            if proc.returncode != 0:
                raise OSError(f"{' '.join(cmd)}: {proc.stderr.strip()}")
            os.replace(tmp_so, so_path)
        finally:
            if os.path.exists(tmp_so):
                os.remove(tmp_so)


def check_source_size(c_file: Path, flags=CFLAGS) -> None:
    """Raise OSError if ``c_file`` is too large to compile with ``flags`` within ffopt's bounds."""
    level = flags[0] if flags and flags[0] in MAX_SOURCE_BYTES else "-O2"
    size = c_file.stat().st_size
    if size > MAX_SOURCE_BYTES[level]:
        raise OSError(f"the generated C code ({size / 1e6:.1f} MB) is above the {MAX_SOURCE_BYTES[level] / 1e6:g} MB "
                      f"that ffopt compiles with {level} (a model this large would keep gcc busy for many minutes)")


def _building(folder: Path) -> bool:
    """Whether a background build in ``folder`` is under way (a marker younger than _STALE_BUILD_S)."""
    now = time.time()
    for marker in folder.glob("*.building"):
        try:
            if now - marker.stat().st_mtime < _STALE_BUILD_S:
                return True
        except FileNotFoundError:  # the build finished meanwhile
            continue
    return False


def build_in_background(c_file: Path, so_path: Path, flags=CFLAGS) -> None:
    """Compile ``c_file`` into ``so_path`` in a detached process (atomic rename when done; the source is
    removed after). One background build per cache folder at a time (marker files, stale after 15 min): a
    burst of new models (a sweep, a test session) would otherwise start a gcc -O2 for each, 2-15 s of CPU
    apiece, competing with the plans themselves; a model whose build was skipped is built by a later plan
    (its C source stays beside the -O0 library until then). The build is detached (a later plan uses it) but
    bounded: COMPILER_CPU_S of CPU and COMPILER_MEMORY_BYTES of address space, and a source above
    MAX_SOURCE_BYTES is not built at all."""
    marker = so_path.with_suffix(".building")
    if so_path.exists() or _building(so_path.parent):
        return
    try:
        check_source_size(c_file, flags)
    except OSError:  # too large: the model keeps running where it runs now (the VM or -O0)
        return
    marker.touch()
    tmp = so_path.parent / f".tmp_lib_{os.getpid()}_{time.monotonic_ns()}.so"
    err = tmp.with_suffix(".err")
    q = shlex.quote
    cmd = " ".join([q(shutil.which(compiler()) or compiler()), *flags, "-o", q(str(tmp)), q(str(c_file)), "-lm"])
    # done: the library in place, the source removed; failed: the compiler's message in <library>.failed
    # (build_failure), which the next run reports instead of waiting for a library that will not come
    script = (f"{_LIMITS}if {cmd} 2> {q(str(err))}; then mv -f {q(str(tmp))} {q(str(so_path))}; rm -f {q(str(c_file))}; "
              f"else mv -f {q(str(err))} {q(str(so_path.with_suffix('.failed')))}; fi; "
              f"rm -f {q(str(tmp))} {q(str(err))} {q(str(marker))}")
    subprocess.Popen(["sh", "-c", script], start_new_session=True, stdin=subprocess.DEVNULL,
                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
