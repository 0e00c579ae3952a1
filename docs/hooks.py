"""MkDocs hooks: fill the Array API coverage table from the package at build time."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

import asyncfusion  # noqa: E402
from array_api import table  # noqa: E402

MARKER = "<!-- array-api-table -->"


def on_page_markdown(markdown: str, page: Any, **kwargs: Any) -> str:
    if MARKER in markdown:
        return markdown.replace(MARKER, table(asyncfusion))
    return markdown
