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


def replay_path(model: KubeModel, actions: Sequence[Any], fingerprints: Sequence[str],
                recorded: Sequence[Any] | None = None) -> tuple[int | None, list[Any]]:
    """Re-run a path: the 1-based step where a state differs from the recorded one (None when none
    does) and the labels of the steps replayed. With ``recorded`` (the state each action was taken
    from), an action is first translated to the replayed state, which may be the recorded one up to a
    renaming of generated names (``KubeModel.translate``)."""
    state = model.initial_states()[0]
    labels = []
    for i, (act, expected) in enumerate(zip(actions, fingerprints)):
        if recorded is not None:
            act = model.translate(act, recorded[i], state)
        transition = model.successor(state, act)
        state = transition.state
        labels.append(transition.label)
        if model.fingerprint(state) != expected:
            return i + 1, labels
    return None, labels
