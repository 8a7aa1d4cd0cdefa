"""Reporters (layer 4): terminal text, JUnit XML, JSON and HTML, each a pure function of a ``CheckResult``.

May import: ``model`` and ``errors`` only (the contract "reporters read only the result model").

Nothing here runs a search or prints; the CLI chooses the reporters and where their text goes.
"""

from __future__ import annotations

from kamera_cli.report.html_report import to_html, write_html
from kamera_cli.report.json_report import ResultFormatError, from_json, to_json, write_json
from kamera_cli.report.junit import to_junit_xml, write_junit
from kamera_cli.report.story import story
from kamera_cli.report.terminal import github_annotations, progress_line, render, summary_line

__all__ = [
    "ResultFormatError",
    "from_json",
    "github_annotations",
    "progress_line",
    "render",
    "story",
    "summary_line",
    "to_html",
    "to_json",
    "to_junit_xml",
    "write_html",
    "write_json",
    "write_junit",
]
