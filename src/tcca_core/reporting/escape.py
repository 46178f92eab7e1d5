"""Escaping for each text format the reports are written in.

Every string a report did not write itself (a title, a column label, a folder or a
machine name from the configuration or the system) goes through the function of its
output's format before it is written: :func:`markdown` (no raw HTML, no links, no
code spans, one line), :func:`latex` (LaTeX's special characters, one line) and
:func:`html` (:func:`html.escape`). CSV cells are neutralized where they are written
(:func:`tcca_core._io.write_csv`).
"""

from __future__ import annotations

import html as _html
import re

__all__ = ["html", "latex", "markdown", "one_line"]


def one_line(text) -> str:
    """Return ``text`` with every line break and control character as a space."""
    return "".join(
        " " if (ord(ch) < 32 or 0x7F <= ord(ch) < 0xA0 or ch in "\u2028\u2029") else ch
        for ch in str(text)
    )


# CommonMark: a backslash escapes any ASCII punctuation. Escaped: a backslash (or
# one given could undo the escape that follows it), a table cell's end, ``]`` where it
# would close a link or an image (before ``(`` or ``[``), and ``<`` where it could
# open raw HTML or an autolink (before a letter, ``/``, ``!`` or ``?``). Nothing else
# can make a link or an element (a code span shows its text as written; a reference
# definition must start a line, which a one-line string inside our text never does),
# so our own text keeps its bytes ("CCA (BST)", "[reduced run: quick]", "p < 0.0001").
_MD_SPECIAL = re.compile(r"[\\|]|\](?=[(\[])|<(?=[A-Za-z/!?])")


def markdown(text) -> str:
    """Escape ``text`` for a line of (GitHub-flavoured) Markdown.

    It renders as the characters given (in a code span where it has backticks),
    never as HTML, a link or an image.
    """
    return _MD_SPECIAL.sub(lambda m: "\\" + m.group(0), one_line(text))


_LATEX_SPECIAL = {
    "\\": r"\textbackslash{}",
    "&": r"\&",
    "%": r"\%",
    "$": r"\$",
    "#": r"\#",
    "_": r"\_",
    "{": r"\{",
    "}": r"\}",
    "~": r"\textasciitilde{}",
    "^": r"\textasciicircum{}",
}


def latex(text) -> str:
    """Escape LaTeX's special characters.

    Line breaks become spaces: a blank line would end the paragraph, or break a table.
    """
    return "".join(_LATEX_SPECIAL.get(ch, ch) for ch in one_line(text))


def html(text) -> str:
    """Escape ``text`` for HTML text or a quoted attribute (:func:`html.escape`)."""
    return _html.escape(str(text), quote=True)
