"""From explored paths to the stories a user reads: numbered steps, replayed before reporting.

Why replay: a counterexample is only worth showing if running it again gives the same states.  If it
does not, the controllers are not a function of what they read, and that is reported instead.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from kamera_cli.model.result import Step
from kamera_cli.sim.labels import StepLabel
from kamera_cli.sim.model import KubeModel


def steps_of(labels: Sequence[Any], start: int = 1) -> tuple[Step, ...]:
    out = []
    for i, label in enumerate(labels):
        if isinstance(label, StepLabel):
            out.append(label.to_step(start + i))
        else:  # pragma: no cover - every transition of KubeModel carries a StepLabel
            out.append(Step(index=start + i, kind="step", actor=str(label)))
    return tuple(out)


def replay_diverges(model: KubeModel, actions: Sequence[Any], fingerprints: Sequence[str]) -> int | None:
    """Re-run a path; return the 1-based step where a state differs from the recorded one, or None."""
    state = model.initial_states()[0]
    for i, (act, expected) in enumerate(zip(actions, fingerprints)):
        state = model.successor(state, act).state
        if model.fingerprint(state) != expected:
            return i + 1
    return None
