"""ANSI styling that is a no-op when colour is off.

Why not rich markup: the reporters return plain strings (the CLI prints them, JUnit embeds them),
and colour must be a pure function of a flag so golden tests can pin both forms.
"""

from __future__ import annotations

from dataclasses import dataclass

_CODES = {
    "bold": "1",
    "dim": "2",
    "red": "31",
    "green": "32",
    "yellow": "33",
    "blue": "34",
    "magenta": "35",
    "cyan": "36",
}


@dataclass(frozen=True, slots=True)
class Style:
    color: bool = False

    def __call__(self, text: str, *styles: str) -> str:
        if not self.color or not styles or not text:
            return text
        codes = ";".join(_CODES[s] for s in styles)
        return f"\x1b[{codes}m{text}\x1b[0m"


PLAIN = Style(False)
