"""Sphinx configuration of the documentation site (guides, examples, API reference).

Build: ``python -m sphinx -W --keep-going -b html docs build/docs/html``
(``pip install -e ".[docs]"``; CI runs it in ``.ci/run``, warnings as errors).

- Markdown pages (``*.md``) are read by MyST; the guides of the repository that
  live outside ``docs/`` (the configuration, the cluster profiles, the benchmarks,
  the reproduction report) are pulled in by ``{include}`` pages, not copied.
- The examples gallery is built by sphinx-gallery from ``examples/``: the fast
  scripts are executed during the build and their output shown; the others are
  shown without running (``EXECUTED_EXAMPLES`` below).
- The API reference (``api/``) is built from the docstrings (autodoc + napoleon).
"""

from __future__ import annotations

import re
import sys
from fnmatch import fnmatch
from pathlib import Path

from docutils import nodes
from sphinx import addnodes
from sphinx.transforms.post_transforms import SphinxPostTransform

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

project = "tcca"
author = "the tcca contributors"
copyright = "2026, the tcca contributors"  # noqa: A001 (Sphinx's name)

import tcca_core  # noqa: E402

release = version = tcca_core.__version__

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.napoleon",
    "myst_parser",
    "sphinx_gallery.gen_gallery",
]

source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
root_doc = "index"
# docs/investigations.md is a template of REPRODUCTION.md (its numbers are filled
# in when REPRODUCTION.md is built), shown through reproduction.md instead.
exclude_patterns = ["_build", "investigations.md"]

# MyST: headings get anchors (links like data.md#use), $...$ stays text.
myst_heading_anchors = 3
myst_enable_extensions = ["colon_fence"]
# BENCHMARKS.md (shown as it is, docs/include/benchmarks.md) goes from "##" to
# "####" headings; MyST's note on that is about looks, not a broken page.
suppress_warnings = ["myst.header"]

# numpydoc-style docstrings (Parameters / Returns / Attributes sections)
napoleon_google_docstring = False
napoleon_numpy_docstring = True
napoleon_use_rtype = False
autodoc_default_options = {"members": True, "show-inheritance": True}
autodoc_member_order = "bysource"
autodoc_typehints = "description"
autodoc_class_signature = "separated"
# Heavy optional imports are not needed to read the docstrings.
autodoc_mock_imports: list[str] = []

# The gallery: the scripts of examples/ whose docstring opens with a title (a line
# underlined with "=", sphinx-gallery's convention) are shown; only the fast ones
# named here are executed during the build (a few seconds each) and their output
# shown. dask_zarr.py needs the dask extra and starts a local Dask cluster: it is
# never executed here (tests/test_dask.py runs it).
EXAMPLES = ROOT / "examples"
EXECUTED_EXAMPLES = ("demo", "model_selection")


def _has_title(script: Path) -> bool:
    lines = script.read_text(encoding="utf-8").lstrip().splitlines()[:3]
    return len(lines) == 3 and lines[0] == '"""' and set(lines[2]) == {"="}


UNTITLED_EXAMPLES = sorted(p.stem for p in EXAMPLES.glob("*.py") if not _has_title(p))
sphinx_gallery_conf = {
    "examples_dirs": str(EXAMPLES),
    "gallery_dirs": "gallery",
    "filename_pattern": r"[\\/](" + "|".join(EXECUTED_EXAMPLES) + r")\.py$",
    "ignore_pattern": r"(^|[\\/])(_.*"
    + "".join("|" + re.escape(name) for name in UNTITLED_EXAMPLES)
    + r")\.py$",
    "within_subsection_order": "FileNameSortKey",
    "download_all_examples": False,
    "abort_on_example_error": True,
    "min_reported_time": 1,
}

html_theme = "alabaster"
# alabaster's 940 px page cut the two install-and-run commands (sideways scrolling)
# and squeezed the wide tables: a wider page, no cap on the body, and wrapping shell
# commands (_static/wide.css; tests/test_docs_layout.py checks the settings)
html_theme_options = {
    "description": "Tensor CCA and kernel tensor CCA",
    "page_width": "min(1320px, 96vw)",
    "body_max_width": "none",
}
html_static_path = ["_static"]
html_css_files = ["wide.css"]
html_sidebars = {
    "**": ["about.html", "navigation.html", "relations.html", "searchbox.html"]
}


def _skip_member(app, what, name, obj, skip, options):
    # scikit-learn adds set_<method>_request (metadata routing) to every estimator
    # class; their docstrings point into scikit-learn's own documentation.
    if name.startswith("set_") and name.endswith("_request"):
        return True
    return None


def _is_private(cls) -> bool:
    """Tell whether a class's module or name has a component starting with "_"."""
    dotted = f"{getattr(cls, '__module__', '')}.{getattr(cls, '__qualname__', '')}"
    return any(part.startswith("_") for part in dotted.split(".") if part)


def _public_bases(app, name, obj, options, bases):
    # "Bases:" lists only public classes (scikit-learn's BaseEstimator, ...): the
    # library's mixins live in private modules and are no part of the API.
    bases[:] = [b for b in bases if not _is_private(b)]


# Docstrings in files this documentation may not change (their owners' work in
# progress) that use a fitted attribute's name (trailing "_", scikit-learn's
# convention) as plain text, which reStructuredText reads as a link to an unknown
# target. Only these objects get the trailing "_" escaped; list new ones here
# rather than silencing the warning for everything.
UNESCAPED_ATTRIBUTE_NAMES = {
    "tcca_core.baselines.CCA": "correlations_ in the Attributes section",
    "tcca_core.baselines.SSMVD": "n_iter_ in the Attributes section",
}
_TRAILING_UNDERSCORE = re.compile(
    r"(?<![`\\\w])([A-Za-z]\w*[A-Za-z0-9])_(?=[\s).,;:]|$)"
)


def _escape_attribute_names(app, what, name, obj, options, lines):
    if name not in UNESCAPED_ATTRIBUTE_NAMES:
        return
    for i, line in enumerate(lines):
        if not line.lstrip().startswith(".. "):
            lines[i] = _TRAILING_UNDERSCORE.sub(r"\1\\_", line)


# Guides that live outside docs/ (read on their own in the repository) are shown
# by the include pages of docs/include/. A Markdown link from a page of docs/ to
# one of them (``../config/README.md#seeds``) goes to its page here.
REPOSITORY_PAGES = {
    "config/README": "include/configuration",
    "profiles/README": "include/profiles",
    "BENCHMARKS": "include/benchmarks",
    "REPRODUCTION": "include/reproduction",
    "README": "index",
}


def _repository_page(path: Path, srcdir: Path, docs: set[str]) -> str | None:
    """Return the page here that shows a repository file, or None."""
    stem = path.with_suffix("")
    try:
        rel = stem.relative_to(ROOT).as_posix()
    except ValueError:
        return None
    if rel in REPOSITORY_PAGES:
        return REPOSITORY_PAGES[rel]
    try:
        docname = stem.relative_to(srcdir).as_posix()
    except ValueError:
        return None
    return docname if docname in docs else None


class _RepositoryLinks(SphinxPostTransform):
    """Point Markdown links to the repository's files at their pages here.

    A link in a page of docs/ to a guide shown by an include page goes to that
    page. A link in an included repository file (REPRODUCTION.md's
    ``docs/deviations.md#reporting``) is written as GitHub reads it, relative to
    that file, while MyST reads it relative to the including page: it is resolved
    from the file's own folder here, and one to a file the site does not show
    (``investigations/results/variance.md``) keeps its text without a link, its
    repository path shown where the text was the file's name or path.
    """

    default_priority = 8  # before MyST's resolver (9)

    def run(self, **kwargs):
        srcdir = Path(self.env.srcdir).resolve()
        docs = set(self.env.found_docs)
        for node in list(self.document.findall(addnodes.pending_xref)):
            if node.get("reftype") != "myst":
                continue
            if node.get("refdomain") == "doc":
                target = Path(node["reftarget"])
                if not target.is_absolute():
                    target = srcdir / target
                try:
                    rel = target.resolve().relative_to(ROOT).as_posix()
                except ValueError:
                    continue
                if rel in REPOSITORY_PAGES:
                    node["reftarget"] = REPOSITORY_PAGES[rel]
            elif node.get("refdomain") is None:
                self._included_link(node, srcdir, docs)

    def _included_link(self, node, srcdir: Path, docs: set[str]) -> None:
        source = Path(node.source or "").resolve()
        try:
            source.relative_to(srcdir)
            return  # a page of docs/: MyST resolves its links
        except ValueError:
            pass
        if not source.is_file() or not source.is_relative_to(ROOT):
            return
        path, _, anchor = node["reftarget"].partition("#")
        target = (source.parent / path).resolve()
        if not path or not target.is_file() or not target.is_relative_to(ROOT):
            return  # not a repository file: MyST warns as usual
        page = _repository_page(target, srcdir, docs)
        if page is not None:
            node["refdomain"] = "doc"
            node["reftarget"] = page
            node["reftargetid"] = anchor or None
            return
        text = node.astext()
        rel = target.relative_to(ROOT).as_posix()
        if text in (target.name, rel, path):
            node.replace_self(nodes.literal(rel, rel))
        else:
            node.replace_self(node.children)


USER_GUIDES = ("dask*", "install*")


# Pages of a folder that no toctree names (a guide another change adds) are listed
# at the end of that folder's index, so that a new page never breaks the -W build.
def _list_unlisted_pages(app, docname, source):
    if docname not in ("index", "api/index"):
        return
    folder = Path(app.srcdir) / Path(docname).parent
    base = Path(docname).parent.as_posix()
    prefix = "" if base == "." else base + "/"
    named = set(re.findall(r"^\s*([\w./-]+)\s*$", source[0], re.MULTILINE))
    unlisted = []
    for path in sorted(folder.glob("*.*")):
        name = prefix + path.stem
        if (
            path.suffix in (".md", ".rst")
            and path.stem != "index"
            and path.stem not in named
            and name not in named
            and not any(fnmatch(path.name, pat) for pat in exclude_patterns)
            and not path.name.startswith(("_", "sg_execution_times"))
        ):
            unlisted.append(path.stem)
    # Guides that other changes add (Dask, installation) join the user guide.
    guides = [stem for stem in unlisted if any(fnmatch(stem, p) for p in USER_GUIDES)]
    if guides and docname == "index":
        end = source[0].index("```", source[0].index(":caption: User guide"))
        entries = "".join(f"{stem}\n" for stem in guides)
        source[0] = source[0][:end] + entries + source[0][end:]
        unlisted = [stem for stem in unlisted if stem not in guides]
    if not unlisted:
        return
    if (folder / "index.md").exists():
        entries = "\n".join(unlisted)
        source[0] += f"\n\n```{{toctree}}\n:caption: More\n\n{entries}\n```\n"
    else:
        entries = "\n".join(f"   {stem}" for stem in unlisted)
        source[0] += f"\n\n.. toctree::\n   :caption: More\n\n{entries}\n"


def setup(app):
    """Connect this file's hooks."""
    app.add_post_transform(_RepositoryLinks)
    app.connect("source-read", _list_unlisted_pages)
    app.connect("autodoc-skip-member", _skip_member)
    app.connect("autodoc-process-bases", _public_bases)
    app.connect("autodoc-process-docstring", _escape_attribute_names)
