# syntax=docker/dockerfile:1
# The reproduction pipeline in a container, built from the lock file
# (requirements/lock.txt, the environment of the published results; docs/install.md):
#
#   docker build -t tcca .
#   docker run --rm -v "$PWD/data:/tcca/data" -v "$PWD/results:/tcca/results" tcca \
#       snakemake --cores 2 --configfile config/quick.yaml
#
# The checkout is copied in (see .dockerignore); mount data/ (the downloads, kept
# between runs) and results/ to keep the outputs. With no command, the container runs
# the full grid into results/full/ (the CMD below says why not results/). Not built on
# the project's CI machines, which run no Docker engine.

# Python 3.11.7 on Debian 12, as the published run (results/summary.json,
# provenance.machine.python)
FROM python:3.11.7-slim-bookworm

# git: the commit in summary.json's provenance (when the checkout's .git is mounted:
# .dockerignore leaves it out);
# bsdtar: extracting NUS-WIDE's .rar archive (docs/data.md)
RUN apt-get update \
    && apt-get install -y --no-install-recommends git libarchive-tools \
    && rm -rf /var/lib/apt/lists/*

ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PYTHONDONTWRITEBYTECODE=1

WORKDIR /tcca
# the pinned dependencies first (their layer is reused while the lock is unchanged),
# every file checked against the lock's hashes
COPY requirements/lock.txt requirements/lock.txt
RUN python -m pip install --require-hashes -r requirements/lock.txt

# then the project itself (a regular, not editable, install; its requirements are
# all met by the lock: pip check fails the build otherwise), built by the lock's
# setuptools (no build isolation: no unpinned build backend is fetched)
COPY . .
RUN python -m pip install --no-build-isolation --no-deps . && python -m pip check

# The default command runs the paper's full grid into results/full/ (mount results/ to
# keep it): the published results/ and REPRODUCTION.md are written only from a clean
# git checkout (config/README.md, Clean provenance), and the image has no .git
# (.dockerignore), so `snakemake --cores all` alone is refused here before any job.
CMD ["snakemake", "--cores", "all", "--config", "results_dir=results/full"]
