"""The allocator setting the workflow gives its jobs changes no number.

workflow/Snakefile keeps freed memory in glibc's heap (BENCHMARKS.md, "Allocator"):
the fits then reuse their temporaries instead of faulting in zeroed pages. Where a
block lives must not change what is computed in it: the same TCCA fit, in a fresh
process with and without the setting, gives the same bits.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

FIT = """
import hashlib
import numpy as np
from tcca_core import TCCA
rng = np.random.default_rng(0)
views = [rng.standard_normal((20_000, d)) for d in (110, 100, 90)]
Z = TCCA(n_components=8, random_state=0).fit(views).transform(views)
print(hashlib.sha256(np.ascontiguousarray(np.hstack(Z))).hexdigest())
"""


def workflow_setting() -> dict[str, str]:
    """The variables workflow/Snakefile sets for its jobs, as it writes them."""
    text = (REPO / "workflow" / "Snakefile").read_text()
    found = dict(re.findall(r'os\.environ\.setdefault\("(MALLOC_\w+)", (.+)\)', text))
    return {k: str(eval(v, {"str": str})) for k, v in found.items()}


def fit_digest(extra: dict[str, str]) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MALLOC_")}
    env.update({"OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"}, **extra)
    out = subprocess.run(
        [sys.executable, "-c", FIT], env=env, capture_output=True, text=True, check=True
    )
    return out.stdout.strip()


def test_the_workflow_keeps_freed_memory_for_its_jobs():
    setting = workflow_setting()
    assert setting == {"MALLOC_MMAP_MAX_": "0", "MALLOC_TRIM_THRESHOLD_": str(2**40)}


def test_keeping_freed_memory_changes_no_bit_of_a_fit():
    plain = fit_digest({})
    assert len(plain) == 64
    assert fit_digest(workflow_setting()) == plain
