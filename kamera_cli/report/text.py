"""Small text helpers every reporter shares: value formatting, durations and character hygiene.

Why one module: the terminal story, the JUnit failure text and GitHub annotations must agree on
how a value is shortened and which characters survive, or the same counterexample would read
differently in each place.
"""

from __future__ import annotations

import json
import re
from typing import Any

#: how many characters of a value a diff line shows before it is cut with "…"
VALUE_WIDTH = 60

# CSI sequences (colours, cursor moves), OSC sequences (hyperlinks, titles) and lone two-byte escapes.
_ANSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-Z\\-_]")
# Characters XML 1.0 forbids anywhere in a document (even escaped).
_XML_ILLEGAL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


def format_value(value: Any, width: int = VALUE_WIDTH) -> str:
    """A JSON value on one line, cut to ``width`` characters; ``width <= 0`` never cuts."""
    text = json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(", ", ": "), default=str)
    if 0 < width < len(text):
        return text[: max(width - 1, 1)] + "…"
    return text


#: characters kept on each side of the part two long values differ in
DIFF_CONTEXT = 12


def format_change(old: Any, new: Any, width: int = VALUE_WIDTH) -> tuple[str, str]:
    """Both sides of a replacement, each on one line, cut so that the part that changed shows.

    Why not ``format_value`` on each side: two long values that share their first ``width``
    characters (a kopf progress annotation whose timestamp moved, say) would both be cut before the
    difference and read the same. Here a long pair is cut around where it differs: the shared start
    and end become ``…``, with ``DIFF_CONTEXT`` characters of context kept on each side.
    """
    a, b = format_value(old, 0), format_value(new, 0)
    if width <= 0 or (len(a) <= width and len(b) <= width):
        return a, b
    prefix = 0
    while prefix < min(len(a), len(b)) and a[prefix] == b[prefix]:
        prefix += 1
    suffix = 0
    while suffix < min(len(a), len(b)) - prefix and a[-1 - suffix] == b[-1 - suffix]:
        suffix += 1
    start = max(0, prefix - DIFF_CONTEXT)

    def cut(text: str) -> str:
        end = min(len(text), len(text) - suffix + DIFF_CONTEXT, start + max(width - 2, DIFF_CONTEXT + 1))
        return ("…" if start > 0 else "") + text[start:end] + ("…" if end < len(text) else "")

    return cut(a), cut(b)


def format_duration(seconds: float) -> str:
    """``0.84s``, ``12.3s``, ``2m05s``: precise when short, readable when long."""
    if seconds < 10:
        return f"{seconds:.2f}s"
    if seconds < 60:
        return f"{seconds:.1f}s"
    minutes, rest = divmod(round(seconds), 60)
    if minutes < 60:
        return f"{minutes}m{rest:02d}s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m{rest:02d}s"


def format_rate(per_second: float) -> str:
    return f"{per_second:.0f}" if per_second >= 100 else f"{per_second:.1f}"


def one_line(text: str) -> str:
    """Collapse a message to a single line (JUnit ``message`` attributes, terminal check lines)."""
    return " ".join(part.strip() for part in text.splitlines() if part.strip())


def strip_ansi(text: str) -> str:
    return _ANSI.sub("", text)


# C0 controls but TAB and LF, DEL, and C1 controls (\x9b is a one-byte CSI on some terminals)
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def clean(text: str) -> str:
    """User-supplied text for a terminal: no escape sequences, control characters spelled out.

    A controller's exception message can carry colour codes or a stray ``\\r`` that would
    garble the report (or forge output); newlines and tabs survive.
    """
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", strip_ansi(text))


def label(text: str) -> str:
    """A name, path or reference for one line of a terminal: ``clean`` with newlines as spaces."""
    return clean(text).replace("\n", " ")


def xml_safe(text: str) -> str:
    """Remove ANSI sequences, then spell out characters XML cannot carry as ``\\xNN``.

    Spelling them out (rather than dropping them) keeps a controller's odd output diagnosable.
    """
    return _XML_ILLEGAL.sub(lambda m: f"\\x{ord(m.group()):02x}", strip_ansi(text))


def plural(count: int, noun: str, nouns: str = "") -> str:
    return f"{count} {noun if count == 1 else (nouns or noun + 's')}"
