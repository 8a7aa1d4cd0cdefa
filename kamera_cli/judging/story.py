"""From explored paths to the stories a user reads: numbered steps, replayed before reporting.

Why replay: a counterexample is only worth showing if running it again gives the same states.  If it
does not, the controllers are not a function of what they read, and that is reported instead.

Why the telling lives here: the search records what each transition did as cheap values
(``sim.labels``); only the few paths that become counterexamples are turned into steps, writes and
diffs, and that turning is part of judging, not of the search.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from kamera_cli.judging.diffs import created, created_as_sent, diff
from kamera_cli.model.result import DiffEntry, Step, Write
from kamera_cli.sim.labels import StepLabel, WriteRec
from kamera_cli.sim.model import KubeModel


def steps_of(labels: Sequence[Any], start: int = 1) -> tuple[Step, ...]:
    out = []
    for i, label in enumerate(labels):
        if isinstance(label, StepLabel):
            out.append(step_of(label, start + i))
        else:  # pragma: no cover - every transition of KubeModel carries a StepLabel
            out.append(Step(index=start + i, kind="step", actor=str(label)))
    return tuple(out)


def step_of(label: StepLabel, index: int) -> Step:
    """The ``index``-th step of a story: the label's writes as diffs, its reads as text."""
    return Step(
        index=index,
        kind=label.kind,
        actor=label.actor,
        request=label.request,
        writes=tuple(write_of(w) for w in label.writes),
        note=label.note,
        error=label.error,
        log=label.log,
        reads=tuple(text for text in (region_text(r) for r in label.reads) if text),
    )


def story_verb(rec: WriteRec) -> str:
    """The past-tense verb a story uses for a write ("created", "patched", "marked for deletion")."""
    if rec.refused:
        return {"create": "create", "delete": "delete"}.get(rec.verb, rec.verb)
    if rec.after is None:
        return "deleted" if rec.verb == "delete" else "removed"
    if rec.subresource == "binding":
        return "bound"
    if rec.before is None:
        return "created" if rec.verb != "apply" else "applied"
    if rec.verb == "delete":
        return "marked for deletion"
    return {"update": "updated", "patch": "patched", "apply": "applied"}.get(rec.verb, rec.verb)


def write_of(rec: WriteRec) -> Write:
    """A recorded write as the story shows it: its verb and what changed (a create folds defaults)."""
    defaulted = 0
    if rec.refused or rec.after is None:
        changes: tuple[DiffEntry, ...] = ()
    elif rec.before is None:
        if rec.sent is not None:
            changes, defaulted = created_as_sent(rec.after, rec.sent)
        else:
            changes = created(rec.after)
    else:
        changes = diff(rec.before, rec.after)
    return Write(verb=story_verb(rec), ref=rec.ref, subresource=rec.subresource, diff=changes,
                 refused=rec.refused, defaulted=defaulted)


def region_text(region: tuple[Any, ...]) -> str:
    """``v1/ConfigMap default/web`` for an object, ``list /api/v1/...?labelSelector=app%3Dweb`` for a
    collection; "" for server bookkeeping (generateName counters), which a reader has no use for."""
    if region and region[0] == "obj":
        return str(region[1])
    if region and region[0] == "index":
        return f"the index of list {region[1]}"
    if region and region[0] == "list":
        query = "&".join(f"{k}={v}" for k, v in region[2])
        return f"list {region[1]}" + (f"?{query}" if query else "")
    return ""


def replay_path(model: KubeModel, actions: Sequence[Any], fingerprints: Sequence[str],
                recorded: Sequence[Any] | None = None) -> tuple[int | None, list[Any]]:
    """Re-run a path: the 1-based step where a state differs from the recorded one (None when none
    does) and the labels of the steps replayed. With ``recorded`` (the state each action was taken
    from), an action is first translated to the replayed state, which may be the recorded one up to a
    renaming of generated names (``KubeModel.translate``, docs/semantics.md "Symmetry")."""
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
