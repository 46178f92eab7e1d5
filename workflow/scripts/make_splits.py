"""The random subset (if any) and the labeled/validation/test splits of a setting."""

from tcca_core.pipeline import draw_splits, start_logging

start_logging(snakemake.log[0], snakemake.rule)  # noqa: F821
draw_splits(
    snakemake.params.cfg,  # noqa: F821
    snakemake.output.splits,  # noqa: F821
    data_root=snakemake.config["data_root"],  # noqa: F821
    mirror=snakemake.config["mirror"],  # noqa: F821
    offline=snakemake.config["offline"],  # noqa: F821
    status=snakemake.input.data,  # noqa: F821
)
