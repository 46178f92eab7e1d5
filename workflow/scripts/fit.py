"""One fit job: a method on one split (or on every split) of a setting, over the whole
r grid (tcca_core.pipeline.run_fit_job; written atomically)."""

from tcca_core.pipeline import run_fit_job, start_logging

start_logging(snakemake.log[0], snakemake.rule)  # noqa: F821
run_fit_job(
    snakemake.params.cfg,  # noqa: F821
    snakemake.input.splits,  # noqa: F821
    snakemake.output.fit,  # noqa: F821
    data_root=snakemake.config["data_root"],  # noqa: F821
    mirror=snakemake.config["mirror"],  # noqa: F821
    fit_cache=snakemake.config.get("fit_cache"),  # noqa: F821
    threads=snakemake.threads,  # noqa: F821
    offline=snakemake.config["offline"],  # noqa: F821
)
