# Reproduction pipeline for Luo et al., "Tensor Canonical Correlation Analysis for
# Multi-view Dimension Reduction", IEEE TKDE 2015. See config/README.md.
#
#   snakemake --cores 2                                  # everything the data at hand allows
#   snakemake --cores 2 --configfile config/quick.yaml   # a first look, in results/quick/
#   snakemake --cores 2 ads                              # one data set (or table_<name>)
#   snakemake --profile profiles/slurm                   # the same jobs on a SLURM cluster
#   snakemake --report report.html                       # browsable report
#   snakemake --cores 2 reproduction                     # REPRODUCTION.md from the summary
#
# Only the full configuration writes the published results/ and REPRODUCTION.md; any
# other (an overlay such as config/quick.yaml, or --config values that change the
# numbers) writes results/<name>/ and says "reduced run" in its titles. A data set that
# cannot be obtained is skipped with one line (unless `strict: true`), and the end of
# the run says where its outputs are.

from pathlib import Path

from snakemake.utils import min_version

min_version("9.0")


# The base configuration: config/config.yaml of the working directory (--directory), as
# the integration fixture (.test/) has its own, else the one beside this Snakefile, so
# that `snakemake -s <repo>/Snakefile --configfile mine.yaml` run from any folder
# overlays the paper's settings instead of running without them.
_BASE_CONFIG = (
    "config/config.yaml"
    if Path("config/config.yaml").is_file()
    else str(Path(workflow.basedir) / "config" / "config.yaml")
)


configfile: _BASE_CONFIG


report: "workflow/report/workflow.rst"


include: "workflow/rules/common.smk"
include: "workflow/rules/data.smk"
include: "workflow/rules/fit.smk"
include: "workflow/rules/report.smk"
include: "workflow/rules/targets.smk"


localrules:
    all,
    gather,
    table,
    summary,
    reproduction,


rule all:
    default_target: True
    input:
        final_outputs,


onsuccess:
    print(run_end_message(), file=sys.stderr)
