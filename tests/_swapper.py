"""A hostile second process for the atomic-write tests: it keeps replacing the
temporary files it sees in a folder by symbolic links to a file elsewhere."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

_SCRIPT = r"""
import os, re, signal, sys
folder, pattern, target = sys.argv[1:4]
swap = re.compile(pattern).match
stop = []
signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
swaps = 0
print("ready", flush=True)
while not stop:
    try:
        names = os.listdir(folder)
    except OSError:
        continue
    for name in names:
        if not swap(name):
            continue
        path = os.path.join(folder, name)
        try:
            if os.path.islink(path):
                continue
            os.unlink(path)
            os.symlink(target, path)
            swaps += 1
        except OSError:
            pass  # renamed or removed by the writer meanwhile
print(swaps, flush=True)
"""


class Swapper:
    """Run the swapper on the files of ``folder`` whose names match ``pattern`` (a
    regular expression) while the ``with`` block runs; ``swaps`` is how many files
    it replaced."""

    def __init__(self, folder: Path, pattern: str, target: Path):
        self.args = [sys.executable, "-c", _SCRIPT, str(folder), pattern, str(target)]
        self.swaps = -1

    def __enter__(self) -> Swapper:
        self.proc = subprocess.Popen(self.args, stdout=subprocess.PIPE, text=True)
        assert self.proc.stdout is not None
        assert self.proc.stdout.readline().strip() == "ready"
        return self

    def __exit__(self, *exc) -> None:
        self.proc.terminate()
        out, _ = self.proc.communicate(timeout=60)
        self.swaps = int(out.split()[-1]) if out.split() else -1


def snapshot(path: Path) -> tuple:
    """What would change if anything wrote ``path``: its bytes and times."""
    st = path.stat()
    return path.read_bytes(), st.st_size, st.st_mtime_ns, st.st_ctime_ns
