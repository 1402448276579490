"""What every benchmark shares: the machine description, the processes under /proc, and publishing its own section of
docs/performance.md."""

from __future__ import annotations

import contextlib
import os
import platform
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path

DOC = Path(__file__).resolve().parent.parent / "docs" / "performance.md"
HEADER = "# Performance\n\nFigures written by `make bench` (`python -m bench.run`).\n\n"


def proc_stats() -> Iterator[tuple[int, list[str]]]:
    """(pid, the fields of /proc/<pid>/stat after its command name: state, ppid, … utime, stime at 11 and 12) of
    every process that is still there when read."""
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry.name}/stat").read_text()
        except OSError:  # exited meanwhile
            continue
        yield int(entry.name), stat[stat.rindex(")") + 2 :].split()


def live_children_cpu(pid: int | None = None) -> float:
    """User + system CPU seconds of the live child processes of `pid` (this process by default): a process's own
    `os.times()` counts a child only once it has been reaped, and the workers that the dedup stages share are
    reaped when the group ends, not with each stage."""
    parent = pid or os.getpid()
    ticks = sum(int(f[11]) + int(f[12]) for _, f in proc_stats() if int(f[1]) == parent)
    return ticks / os.sysconf("SC_CLK_TCK")


def machine(libraries: str = "") -> str:
    """`nproc`, CPU model, RAM and Python version (plus the given library versions)."""
    cpu = "unknown CPU"
    with contextlib.suppress(OSError, StopIteration):
        cpu = next(line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                   if line.startswith("model name"))
    ram = "?"
    with contextlib.suppress(OSError, AttributeError):
        kb = int(re.search(r"MemTotal:\s+(\d+)", Path("/proc/meminfo").read_text()).group(1))
        ram = f"{kb / 2**20:.1f} GiB"
    nproc = subprocess.run(["nproc"], capture_output=True, text=True).stdout.strip() or str(os.cpu_count())
    extra = f", {libraries}" if libraries else ""
    return f"`nproc` = {nproc}, CPU: {cpu}, RAM: {ram}; Python {platform.python_version()}{extra}"


def show(section: str, begin: str, end: str, publish_it: bool) -> None:
    """Print a bench's section and, unless told not to (`--no-publish`), publish it into docs/performance.md."""
    print(section)
    if publish_it:
        publish(section, begin, end)


def publish(section: str, begin: str, end: str, doc: Path = DOC) -> None:
    """Replace the section between `begin` and `end` in `doc` (docs/performance.md; or append it), atomically."""
    text = doc.read_text() if doc.exists() else HEADER
    section = section.strip("\n")  # runs from `begin` to `end`, markers included
    if begin in text and end in text:
        text = text[: text.index(begin)] + section + text[text.index(end) + len(end):]
    else:
        text = text.rstrip("\n") + "\n\n" + section + "\n"
    tmp = doc.with_suffix(f".md.tmp-{os.getpid()}")
    tmp.write_text(text)
    tmp.replace(doc)
