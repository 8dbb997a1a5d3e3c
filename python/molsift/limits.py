"""Memory that runs out under an address-space limit (`ulimit -v`, RLIMIT_AS), said in one
line: which errors mean it (a library of numpy's or RDKit's that cannot be mapped, MemoryError,
ENOMEM), the message naming the limit, the exit status of a worker process that ran out; and
OpenBLAS (loaded by numpy) kept to one thread under a limit, since it reserves a buffer per
thread when numpy is imported. Imports nothing heavy: the command line's `main` uses it before
any verb is imported, worker processes when they fail.
"""

from __future__ import annotations

# mmap and resource here, not where memory has run out: loading them then can fail too
import errno
import mmap
import os
import re
import resource

#: The exit status of a worker process that ran out of memory (it cannot send its error then:
#: that needs a thread); the parent says so in words.
WORKER_OUT_OF_MEMORY = 86

# what the loader, the C and C++ runtimes and the libraries say when memory runs out
SYMPTOMS = (
    "failed to map segment",
    "cannot allocate memory",
    "memory allocation",
    "out of memory",
    "std::bad_alloc",
)


def address_space_limit() -> int | None:
    """The soft RLIMIT_AS in bytes, None when there is none."""
    soft, _ = resource.getrlimit(resource.RLIMIT_AS)
    return None if soft == resource.RLIM_INFINITY else soft


def machine_memory() -> int:
    """Bytes of memory this process may count on: the least of the machine's (MemTotal), its
    cgroup's limit (cgroup v2 `memory.max` of its group and the groups above it, or v1
    `memory.limit_in_bytes`: what `systemd-run -p MemoryMax=` or a batch system sets) and the
    address-space limit (`ulimit -v`)."""
    found = [os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")]
    found += [limit for limit in (address_space_limit(), _cgroup_limit()) if limit]
    return min(found)


def _cgroup_limit() -> int | None:
    """The tightest memory limit of this process's cgroup and its parents, None without one."""
    try:
        with open("/proc/self/cgroup") as fh:
            lines = fh.read().splitlines()
    except OSError:
        return None
    limits = []
    for line in lines:
        _, controllers, path = line.split(":", 2)
        if controllers == "":  # cgroup v2: memory.max of the group and every group above it
            root, name = "/sys/fs/cgroup", "memory.max"
        elif "memory" in controllers.split(","):
            root, name = "/sys/fs/cgroup/memory", "memory.limit_in_bytes"
        else:
            continue
        parts = [p for p in path.split("/") if p]
        for k in range(len(parts), -1, -1):
            try:
                with open(os.path.join(root, *parts[:k], name)) as fh:
                    text = fh.read().strip()
            except OSError:
                continue
            if text.isdigit() and int(text) < 1 << 60:  # v1 says "no limit" with a huge number
                limits.append(int(text))
    return min(limits) if limits else None


def fit_to_limit() -> None:
    """Under an address-space limit, numpy's OpenBLAS starts one thread (unless
    OPENBLAS_NUM_THREADS says otherwise): a buffer per core does not fit a few hundred MB, and
    OpenBLAS then ends the process itself. molsift's work does not use BLAS."""
    if address_space_limit() is not None:
        os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")


#: the longest time limit molsift takes (a search's timeout, the server's limits): a year; the
#: core's clocks cannot hold much longer ones (`--timeout 1e19` was a panic of the Rust core,
#: `inf` an error on every query)
MAX_SECONDS = 365 * 24 * 3600

#: MiB of address space RDKit's libraries take as they load (about 52 on Linux x86-64, RDKit
#: 2026.09, measured as VmSize before and after `from rdkit import Chem`), with a margin
RDKIT_LOAD_MIB = 64


def reserve(what: str, mib: int) -> None:
    """Under an address-space limit, checks that `mib` MiB of it are still free before loading
    `what` (a reservation of that many bytes, returned at once): loading libraries at the very
    edge of the limit fails wherever memory happens to run out, sometimes in the loader itself,
    which ends the process without a word; this fails first, always the same way (OSError
    ENOMEM, said in one line by the command line). Without a limit it does nothing."""
    if address_space_limit() is None:
        return
    try:  # no access (prot 0): address space only, no memory
        region = mmap.mmap(-1, mib << 20, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS, prot=0)
    except OSError:
        raise OSError(
            errno.ENOMEM, f"loading {what}: failed to map segment of {mib} MiB of address space"
        ) from None
    region.close()


def out_of_memory(exc: BaseException) -> str | None:
    """The one-line message when `exc` (or an error it was raised from) means that memory ran
    out; None when it does not."""
    if isinstance(exc, (SystemExit, KeyboardInterrupt, GeneratorExit)):
        return None
    seen: set[int] = set()
    e: BaseException | None = exc
    while e is not None and id(e) not in seen:
        seen.add(id(e))
        if isinstance(e, MemoryError):
            return memory_message("a memory allocation failed (MemoryError)")
        if isinstance(e, OSError) and e.errno == errno.ENOMEM:
            return memory_message(memory_symptom(str(e)) or os.strerror(errno.ENOMEM))
        panic = type(e).__name__ == "PanicException"  # the Rust core's, from pyo3
        if isinstance(e, (ImportError, OSError, RuntimeError)) or panic:
            symptom = memory_symptom(str(e))
            if symptom:
                return memory_message(symptom)
            # a thread's stack is mapped memory: under a limit, no thread starts once it is used
            if panic and "failed to spawn thread" in str(e) and address_space_limit():
                return memory_message("a thread could not be started")
        e = e.__cause__ or e.__context__
    return None


def memory_message(what: str) -> str:
    """`what` happened because memory ran out, with the limit that made it run out."""
    limit = address_space_limit()
    if limit is None:
        return f"out of memory: {what}; no address-space limit (ulimit -v) is set"
    return (
        f"out of memory: {what}; the address-space limit (ulimit -v) is {limit / 2**20:,.0f} MiB "
        f"({limit // 1024:,} KiB): raise it (e.g. ulimit -v unlimited) or run where more is "
        "allowed"
    )


def memory_symptom(text: str) -> str | None:
    """The line of an error's text that says memory ran out, shortened (a library's full path
    to its name); None when no line says so."""
    for line in reversed(text.splitlines()):
        if any(s in line.lower() for s in SYMPTOMS):
            line = line.strip().removeprefix("Original error was: ")
            line = re.sub(r"^\[Errno \d+\] ", "", line)
            head, sep, rest = line.partition(": ")
            if sep and " " not in head and ("/" in head or ".so" in head):  # lib.so: failed ...
                line = f"loading {os.path.basename(head)}: {rest}"
            return line[:200]
    return None
