"""A non-determinism finding shows where the two runs' calls differ, not a shared prefix cut short."""

from __future__ import annotations

from kamera_cli.sim.runtime import _first_difference


def test_long_calls_are_cut_around_the_difference() -> None:
    common = "PATCH /api/v1/namespaces/default/configmaps/x {\"data\": {\"" + "k" * 300 + "\": \"1\", \"t\": \"10:0"
    text = _first_difference([common + "0\"}}"], [common + "1\"}}"])
    assert text.startswith("#1: first run sent `PATCH /api/v1/namespaces/default/configmaps/x …")
    assert "\"t\": \"10:00\"}}`" in text and "\"t\": \"10:01\"}}`" in text
    assert len(text) < 500


def test_short_calls_are_shown_whole() -> None:
    assert _first_difference(["GET /a"], ["GET /b"]) == "#1: first run sent `GET /a`, second run sent `GET /b`"
