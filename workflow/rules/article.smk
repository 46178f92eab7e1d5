# The [Re] article (article/article.pdf, ReScience C style): its data from the
# committed outputs of the repository (results/summary.json, the investigations'
# data, the record of deviations, the claims' verdicts), typeset by the typst wheel
# (extra `article`). Like check_published, it reads the repository's published
# results whatever the run's folder, and always runs when named.


rule article:
    input:
        summary=REPO / "results" / "summary.json",
        figure=REPO / "results" / "figures" / "at_a_glance.png",
        equal_tuning=REPO / "investigations" / "results" / "equal_tuning.json",
        record=REPO / "docs" / "deviations.md",
        citation=REPO / "CITATION.cff",
        source=REPO / "article" / "article.typ",
        template=REPO / "article" / "rescience.typ",
    log:
        f"{LOGS}/article.log",
    localrule: True
    message:
        "Typesetting the [Re] article from the committed outputs"
    run:
        from tcca_core.reproduction.article import build

        with open(log[0], "w") as fh:
            print(build(REPO) / "article.pdf", file=fh)
