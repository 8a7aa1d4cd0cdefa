"""A program's steps memoised by their position and what the server answered (adapters/program/memo.py).

The renaming of opaque values is checked on its own; the memo against the search that runs every
program step (``explore.memoize: false``): the same states, transitions, verdicts, failing checks,
converged outcomes and findings, with the reduction on and with ``reduction: none`` — a hit hands the
explorer the very log a run would have produced, so nothing the search sees may differ."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

pytest.importorskip("greenlet")

from kamera_cli.adapters.program.memo import Renaming, log_key, pattern
from kamera_cli.adapters.program.session import Entry
from kamera_cli.model.scenario import Scenario
from kamera_cli.runner import Exploration, explore
from kamera_cli.scenario import load_scenario
from tests.sim.test_program_positions import _outcomes
from tests.sim.test_thread_traces import _family

OBJ = b'{"metadata": {"name": "a", "resourceVersion": "%s", "creationTimestamp": "%s"}, "data": {"n": "%s"}}'


def _obj(rv: str, ts: str, data: str = "x") -> bytes:
    return OBJ % (rv.encode(), ts.encode(), data.encode())


def test_an_answer_agrees_up_to_a_consistent_renaming() -> None:
    r = Renaming([b"rv:3"], [b"rv:7"])
    assert r.ok
    assert r.agrees(_obj("3", "2026-01-01T00:00:01Z"), _obj("7", "2026-01-01T00:00:09Z"))
    # the renaming grew: 3 is 7 and the time is the later one, both ways
    assert not r.agrees(_obj("3", "2026-01-01T00:00:02Z"), _obj("8", "2026-01-01T00:00:09Z"))
    assert not r.agrees(_obj("4", "2026-01-01T00:00:01Z"), _obj("7", "2026-01-01T00:00:09Z"))
    assert not r.agrees(_obj("3", "2026-01-01T00:00:01Z", "y"), _obj("7", "2026-01-01T00:00:09Z"))


def test_a_renaming_is_one_to_one_and_keeps_kinds_apart() -> None:
    assert not Renaming([b"rv:3", b"rv:4"], [b"rv:7", b"rv:7"]).ok
    assert not Renaming([b"rv:3", b"rv:3"], [b"rv:7", b"rv:8"]).ok
    r = Renaming([], [])
    assert not r.agrees(b'{"resourceVersion": "5", "t": "2026-01-01T00:00:01Z"}',
                        b'{"resourceVersion": "5", "t": "5"}')


def test_a_request_is_translated_only_where_it_carries_resource_versions() -> None:
    r = Renaming([b"rv:3"], [b"rv:7"])
    sent = b'{"metadata": {"name": "a", "resourceVersion": "3"}}'
    assert r.apply(sent) == b'{"metadata": {"name": "a", "resourceVersion": "7"}}'
    # the program copied the value into its data: what it would send now cannot be known
    assert r.apply(b'{"metadata": {"resourceVersion": "3"}, "data": {"seen": "3"}}') is None
    unmoved = Renaming([b"rv:3"], [b"rv:3"])
    assert unmoved.apply(b'{"data": {"seen": "3"}}') == b'{"data": {"seen": "3"}}'


def test_a_log_s_key_leaves_out_opaque_values_and_times_only() -> None:
    def log(rv: str, clock: float, data: str = "x") -> tuple[bytes, tuple[bytes, ...]]:
        entries = [Entry("start", "", clock), Entry("http", f"GET /api/v1/configmaps?resourceVersion={rv} ", clock,
                                                    200, (), _obj(rv, "2026-01-01T00:00:01Z", data))]
        return log_key((b"", ()), entries)

    (k1, v1), (k2, v2) = log("3", 1.0), log("9", 5.0)
    assert k1 == k2 and pattern(v1) == pattern(v2) and v1 != v2
    assert log("3", 1.0, "y")[0] != k1


# -- the memo against running every step ----------------------------------------------------------------------
def _run(scenario: Scenario, memoize: bool, reduction: str | None = None) -> Exploration:
    settings = replace(scenario.explore, memoize=memoize)
    if reduction is not None:
        settings = replace(settings, reduction=reduction)
    return explore(replace(scenario, explore=settings))


def _assert_memo_agrees(scenario: Scenario, reduction: str | None = None) -> int:
    """Runs with and without the memo; returns the memo's hits."""
    on, off = _run(scenario, True, reduction), _run(scenario, False, reduction)
    assert on.result.verdict == off.result.verdict
    assert {c.name: c.verdict for c in on.result.checks} == {c.name: c.verdict for c in off.result.checks}
    assert (on.search.stats.states, on.search.stats.transitions) == (off.search.stats.states,
                                                                     off.search.stats.transitions)
    assert _outcomes(on) == _outcomes(off)
    assert {f.key for f in on.search.findings} == {f.key for f in off.search.findings}
    assert off.result.stats.memo_hits == 0
    return on.result.stats.memo_hits


@pytest.mark.parametrize(("channel", "workers", "watch_thread", "reads", "delete", "reduction", "hit"), [
    ("condition", 1, True, True, True, None, True),  # a watch thread and a worker reading the source, a delete
    ("queue", 2, False, False, False, None, False),
    ("queue", 2, False, False, False, "none", False),  # every order of the threads: positions are their logs
    ("event", 1, True, True, True, None, True),
])
def test_thread_families_are_the_same_with_the_memo(tmp_path: Path, channel: str, workers: int, watch_thread: bool,
                                                    reads: bool, delete: bool, reduction: str | None,
                                                    hit: bool) -> None:
    hits = _assert_memo_agrees(load_scenario(_family(tmp_path, channel, workers, watch_thread, reads, delete)),
                               reduction)
    assert (hits > 0) == hit
