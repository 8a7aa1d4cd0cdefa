"""``@kopf.timer`` and ``@kopf.daemon`` handlers as controllers of their own, on the virtual clock.

Pinned here: a tick runs kopf's own timer loop (results stored in ``status.<id>``, failures retried
with kopf's backoff, filters honoured), the first tick comes when kopf's loop would run it (at once,
after ``initial_delay``, after ``idle``), a timer without interval and idle runs once, deletion ends a
timer; a daemon wake-up runs the handler until its first sleep (sync, async, or ignoring ``stopped``).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from kamera_cli.adapters.kopf.events import supported
from kamera_cli.model.result import ScenarioResult, Verdict
from tests.e2e.test_kopf import checks, run, widget

reason = supported()
pytestmark = pytest.mark.skipif(reason is not None, reason=reason or "")

TIMER = "op/timer:tick"


def ticks(result: ScenarioResult, index: int = 0) -> list[str]:
    """The notes of the timer's steps on the path to a converged state."""
    return [s.note for s in result.converged[index].path if s.actor == TIMER]


def test_an_interval_timer_ticks_at_once_and_stores_its_result(tmp_path: Path) -> None:
    result = run(tmp_path, """
        import kopf
        @kopf.timer("example.com", "v1", "widgets", interval=60)
        def tick(spec, **_):
            return {"seen": spec["message"]}
    """)
    assert result.verdict is Verdict.PASSED, result.checks
    assert widget(result)["status"]["tick"] == {"seen": "hello"}
    assert "requeue after 60s" in ticks(result)
    # its own status patch does not start it again (kopf: spawn_daemons is idempotent per handler id);
    # 9 states with the exact fingerprint: two differ only in how far the clock has got before the next
    # tick, which no step can see (docs/semantics.md, "Instants no step can see")
    assert (result.stats.states, result.stats.converged_states) == (8, 1)


def test_initial_delay_comes_before_the_first_tick(tmp_path: Path) -> None:
    result = run(tmp_path, """
        import kopf
        @kopf.timer("example.com", "v1", "widgets", interval=60, initial_delay=30)
        def tick(**_):
            return {"ran": True}
    """)
    assert result.verdict is Verdict.PASSED, result.checks
    notes = ticks(result)
    assert notes[0] == "requeue after 30s", notes  # armed by the first event, nothing run yet
    # then the tick that stored its result and one `interval` later that changed nothing: the
    # timer's own patch does not restart it with its initial_delay (kopf's spawn_daemons is
    # idempotent per handler id)
    assert notes == ["requeue after 30s", "requeue after 60s", "requeue after 60s"], notes
    assert widget(result)["status"]["tick"] == {"ran": True}


def test_an_idle_timer_waits_for_idle_seconds_without_essential_changes(tmp_path: Path) -> None:
    result = run(tmp_path, """
        import kopf
        @kopf.timer("example.com", "v1", "widgets", idle=45)
        def tick(**_):
            return {"ran": True}
    """)
    assert result.verdict is Verdict.PASSED, result.checks
    notes = ticks(result)
    assert notes[0] == "requeue after 45s", notes
    assert widget(result)["status"]["tick"] == {"ran": True}
    # an idle-only timer waits for the next essential change after it ran: no tick is pending
    assert notes[-1] == "", notes


def test_a_timer_without_interval_or_idle_runs_once(tmp_path: Path) -> None:
    result = run(tmp_path, """
        import kopf
        @kopf.timer("example.com", "v1", "widgets")
        def tick(**_):
            return {"ran": True}
    """)
    assert result.verdict is Verdict.PASSED, result.checks
    assert ticks(result) == [""]
    assert widget(result)["status"]["tick"] == {"ran": True}


def test_a_timer_whose_filter_does_not_match_never_runs(tmp_path: Path) -> None:
    result = run(tmp_path, """
        import kopf
        @kopf.timer("example.com", "v1", "widgets", interval=60, labels={"timed": "yes"})
        def tick(**_):
            return {"ran": True}
    """)
    assert result.verdict is Verdict.PASSED, result.checks
    assert "tick" not in widget(result).get("status", {})


def test_a_failing_tick_is_a_finding_named_after_the_timer(tmp_path: Path) -> None:
    result = run(tmp_path, """
        import kopf
        @kopf.timer("example.com", "v1", "widgets", interval=60)
        def tick(**_):
            raise RuntimeError("the backend is down")
    """)
    assert checks(result)["no controller errors"] is Verdict.FAILED
    (check,) = [c for c in result.checks if c.name == "no controller errors"]
    assert TIMER in check.message and "the backend is down" in check.counterexamples[0].steps[-1].error


def test_a_temporary_error_in_a_tick_is_a_retry_that_blocks_convergence(tmp_path: Path) -> None:
    result = run(tmp_path, """
        import kopf
        @kopf.timer("example.com", "v1", "widgets", interval=60)
        def tick(retry, **_):
            if retry < 1:
                raise kopf.TemporaryError("not yet", delay=20)
            return {"retries": retry}
    """)
    assert result.verdict is Verdict.PASSED, result.checks
    assert "retry after 20s" in ticks(result)
    assert widget(result)["status"]["tick"] == {"retries": 1}


def test_deleting_the_object_ends_its_timer(tmp_path: Path) -> None:
    result = run(tmp_path, """
        import kopf
        @kopf.timer("example.com", "v1", "widgets", interval=60)
        def tick(**_):
            return {"ran": True}
    """, extra="""
        actions:
          - name: delete it
            at: converged
            delete: {apiVersion: example.com/v1, kind: Widget, namespace: default, name: demo}
    """)
    assert result.verdict is Verdict.PASSED, result.checks
    for state in result.converged:
        assert not [o for o in state.objects if o["kind"] == "Widget"]


def daemon_steps(result: ScenarioResult, name: str) -> list[str]:
    return [s.note for s in result.converged[0].path if s.actor == f"op/daemon:{name}"]


def test_a_sync_daemon_runs_until_it_waits_and_wakes_up_after_the_wait(tmp_path: Path) -> None:
    result = run(tmp_path, """
        import kopf
        @kopf.daemon("example.com", "v1", "widgets")
        def watcher(stopped, patch, **_):
            while not stopped:
                patch.status["watched"] = True
                stopped.wait(30)
    """)
    assert result.verdict is Verdict.PASSED, result.checks
    assert widget(result)["status"]["watched"] is True
    assert daemon_steps(result, "watcher")[0] == "requeue after 30s"


def test_an_async_daemon_parks_at_asyncio_sleep(tmp_path: Path) -> None:
    result = run(tmp_path, """
        import asyncio, kopf
        @kopf.daemon("example.com", "v1", "widgets", initial_delay=5)
        async def watcher(stopped, patch, **_):
            while not stopped:
                patch.status["async"] = "yes"
                await asyncio.sleep(20)
    """)
    assert result.verdict is Verdict.PASSED, result.checks
    assert widget(result)["status"]["async"] == "yes"
    notes = daemon_steps(result, "watcher")
    assert notes[:2] == ["requeue after 5s", "requeue after 20s"], notes


def test_a_daemon_that_ignores_stopped_is_ended_at_its_second_sleep(tmp_path: Path) -> None:
    result = run(tmp_path, """
        import time, kopf
        @kopf.daemon("example.com", "v1", "widgets")
        def stubborn(patch, **_):
            while True:
                patch.status["ran"] = True
                time.sleep(15)
    """)
    assert result.verdict is Verdict.PASSED, result.checks
    assert daemon_steps(result, "stubborn")[0] == "requeue after 15s"


def test_a_failing_daemon_is_a_finding_and_a_retry(tmp_path: Path) -> None:
    result = run(tmp_path, """
        import kopf
        @kopf.daemon("example.com", "v1", "widgets", backoff=40)
        def broken(stopped, **_):
            raise RuntimeError("cannot watch")
    """)
    assert checks(result)["no controller errors"] is Verdict.FAILED
    (check,) = [c for c in result.checks if c.name == "no controller errors"]
    assert "op/daemon:broken" in check.message and "cannot watch" in check.message


def test_a_timer_is_not_spawned_for_an_object_its_filters_do_not_select(tmp_path: Path) -> None:
    result = run(tmp_path, """
        import kopf
        @kopf.on.create("example.com", "v1", "widgets")
        def hello(**_):
            return {"said": "hi"}
        @kopf.timer("example.com", "v1", "widgets", interval=60, labels={"tick": "yes"})
        def tick(**_):
            return {"ran": True}
    """)
    assert result.verdict is Verdict.PASSED, result.checks
    assert not [s for c in result.converged for s in c.path if s.actor == TIMER]


def test_a_when_filter_that_excludes_the_object_spawns_no_timer(tmp_path: Path) -> None:
    result = run(tmp_path, """
        import kopf
        @kopf.on.create("example.com", "v1", "widgets")
        def hello(**_):
            return {"said": "hi"}
        @kopf.timer("example.com", "v1", "widgets", interval=60, when=lambda name, **_: name != "demo")
        def tick(**_):
            return {"ran": True}
    """)
    assert result.verdict is Verdict.PASSED, result.checks
    assert not [s for c in result.converged for s in c.path if s.actor == TIMER]
    assert "tick" not in widget(result)["status"]


PAUSABLE = """
    import kopf
    @kopf.timer("example.com", "v1", "widgets", interval=60, initial_delay=30, labels={"paused": kopf.ABSENT})
    def tick(**_):
        return {"ran": True}
"""


def _label(name: str, at: str, value: str | None) -> str:
    shown = "null" if value is None else f'"{value}"'
    return f"""
      - name: {name}
        at: {at}
        patch:
          target: {{apiVersion: example.com/v1, kind: Widget, namespace: default, name: demo}}
          patch: {{metadata: {{labels: {{paused: {shown}}}}}}}
    """


def test_a_timer_stops_at_the_event_its_filters_stop_matching(tmp_path: Path) -> None:
    result = run(tmp_path, PAUSABLE, extra="actions:" + _label("pause it", "any", "yes"))
    assert result.verdict is Verdict.PASSED or checks(result)["deterministic"] is Verdict.FAILED, result.checks
    for state in result.converged:
        steps = [s.actor for s in state.path]
        after = steps[steps.index("action 'pause it'") + 1:]
        # kopf's match_daemons stops the timer at the pause: its pending tick (armed, or due in
        # `interval`) never comes; before, it ran on to that tick and ended there
        assert TIMER not in after, steps


def test_a_timer_whose_filters_match_again_starts_afresh_with_its_initial_delay(tmp_path: Path) -> None:
    result = run(tmp_path, PAUSABLE, extra="actions:" + _label("pause it", "converged", "yes")
                 + _label("resume it", "converged", None))
    assert result.verdict is Verdict.PASSED, result.checks
    (state,) = result.converged
    steps = [s.actor for s in state.path]
    resumed = [s.note for s in state.path[steps.index("action 'resume it'") + 1:] if s.actor == TIMER]
    # spawned again: the first tick waits `initial_delay` again (a timer kept running would tick on
    # its old schedule, in `interval`)
    assert resumed[:1] == ["requeue after 30s"], resumed


def test_a_tick_whose_own_result_ends_its_filters_match_is_the_last(tmp_path: Path) -> None:
    result = run(tmp_path, """
        import kopf
        @kopf.timer("example.com", "v1", "widgets", interval=60, when=lambda status, **_: "once" not in status)
        def once(**_):
            return {"ran": True}
    """)
    assert result.verdict is Verdict.PASSED, result.checks
    assert widget(result)["status"]["once"] == {"ran": True}
    steps = [s for s in result.converged[0].path if s.actor == "op/timer:once"]
    assert [s.note for s in steps] == ["stopped: its filters no longer match"]  # no next tick is due


def test_a_daemon_stops_at_the_event_its_filters_stop_matching(tmp_path: Path) -> None:
    result = run(tmp_path, """
        import kopf
        @kopf.daemon("example.com", "v1", "widgets", labels={"paused": kopf.ABSENT})
        def watcher(stopped, patch, **_):
            while not stopped:
                patch.status["watched"] = True
                stopped.wait(30)
    """, extra="actions:" + _label("pause it", "any", "yes"))
    for state in result.converged:
        steps = [s.actor for s in state.path]
        assert "op/daemon:watcher" not in steps[steps.index("action 'pause it'") + 1:], steps
