"""Text inside the Markdown that train/ and scripts.release write (model cards, reports)."""
from __future__ import annotations

import html
import re


def table_cell(text) -> str:
    """`text` as a Markdown table cell that keeps its HTML and table syntax as text: on one line (a line break would
    end the row), its `|` escaped (it would end the cell), and `<`, `>` and `&` written as HTML entities (a
    sentence's `<s>` or `<mask>` would be read as an HTML tag, and vanish or strike the rest of the row through on
    the Hub). Markdown's own emphasis and code spans still render."""
    return re.sub(r"\r\n?|\n", " ", html.escape(str(text), quote=False)).replace("|", "\\|")
