"""Running this repository's Snakemake workflow from the tests (shared helpers)."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
#: The workflow, where the Snakemake workflow catalog expects it (and Snakemake finds it
#: from the repository root).
SNAKEFILE = REPO / "workflow" / "Snakefile"
SNAKEMAKE = shutil.which("snakemake") or shutil.which(
    "snakemake", path=str(Path(sys.executable).parent)
)


def snakemake_env(blas_threads: int | None = None) -> dict:
    """This interpreter first on PATH, so that rules (and SLURM jobs, which inherit
    the environment) that call `python` get it; BLAS threads fixed if given."""
    env = {
        **os.environ,
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
    }
    if blas_threads is not None:
        for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
            env[var] = str(blas_threads)
    return env


def snakemake(*args, cwd=REPO, timeout=600, blas_threads=None):
    """Run Snakemake with ``args``; the completed process, output captured."""
    return subprocess.run(
        [SNAKEMAKE, *args],
        cwd=cwd,
        env=snakemake_env(blas_threads),
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
