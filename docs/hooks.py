"""MkDocs hook: writes the generated reference into pages at build time (mkdocs.yml `hooks:`).

A page holds a marker comment; the build replaces it with tables read from the code
(tuner/docs_reference.py), so the experiment-file reference cannot drift from the loader.
"""

from __future__ import annotations

from typing import Any

from tuner.docs_reference import dimensions_markdown, keys_markdown

MARKERS = {
    "<!-- generated: experiment keys -->": keys_markdown,
    "<!-- generated: search dimensions -->": dimensions_markdown,
}


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    """Replace each marker with its generated Markdown."""
    for marker, generate in MARKERS.items():
        if marker in markdown:
            markdown = markdown.replace(marker, generate())
    return markdown
