"""Whether a scenario lets fingerprints leave out the instants no step can see.

Why a check: a converged state's timers and the distance to the instant the clock jumps to are
left out of the fingerprint (``KubeModel.fingerprint``; docs/semantics.md, "Instants no step can
see"), which merges states whose clocks differ. No step can tell them apart, but the timestamps
their objects carry were written at different instants, and an invariant reads the one state kept.
Fingerprints already leave timestamps out, so that is no new kind of merge; still, an invariant that
names a time is told apart rather than evaluated on fewer states than before. And an instant an
object stores inside a text (kopf's progress) is held by the fingerprint as it is, so where one is
stored the jump's distance is kept (``stores_instants``).
"""

from __future__ import annotations

import re

from kamera_cli.apiserver import Snapshot
from kamera_cli.apiserver.storage.snapshot import digest_text
from kamera_cli.model.scenario import InvariantSpec, Scenario

#: the snapshot's derived value: whether an object holds an instant inside a text (``stores_instants``)
STORED_INSTANTS = "kamera.sim.stored-instants"
#: an instant left in an object's fingerprint text: not a timestamp field (those are blanked), but
#: one inside a string (kopf's progress annotation: ``{"started": "…", "delayed": "…"}``)
_STORED = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}")


def stores_instants(snapshot: Snapshot) -> bool:
    """Whether an object of the snapshot holds an instant that its fingerprint keeps as text.

    Why: the fingerprint holds such an instant as it is, not as a distance from the clock, and kopf
    compares it with the instant its step runs at (``delayed > now``). Where one is stored, the
    distance from the clock to the instant it jumps to is seen after all: a state waiting for the
    retry and the state where it is ready take one fingerprint once delays count from the jump
    (docs/semantics.md, "Instants no step can see")."""
    return any(_STORED.search(digest_text(obj)) for obj in snapshot.objects())

#: a field that holds a time (``creationTimestamp``, ``lastTransitionTime``, ``startTime``,
#: ``startedAt``, ``renewTime``…)
_FIELD = r"[A-Za-z]*(?:[Tt]ime|[Ss]tamp|[Dd]ate|[a-z]At)[A-Za-z]*"
#: such a field compared with something, in a filter (its existence alone, ``@.metadata.deletionTimestamp``,
#: is the same at every instant)
_COMPARED = re.compile(rf"{_FIELD}['\"\]]*\s*(?:==|!=|<=|>=|<|>)|(?:==|!=|<=|>=|<|>)\s*@[\w.\[\]'\"-]*?{_FIELD}")
_DATE = re.compile(r"\d{4}-\d{2}-\d{2}T")
#: a path that ends at a time field
_ENDS_AT_TIME = re.compile(rf"(?:\.{_FIELD}|\[['\"]{_FIELD}['\"]\])\s*$")


def reads_time(invariant: InvariantSpec) -> bool:
    """Whether the invariant may compare a timestamp's value: it compares one in a filter, names a
    date, or compares by value (``equals``, ``unique``, ``matches``) what ends at a time field or may
    be whole objects (a selection that ends at objects, not at a named field, or descends with
    ``..``); a ``forEach`` that ends at a time field hands its value to the selection."""
    texts = (invariant.select, invariant.for_each or "", repr(invariant.expect.equals), invariant.expect.matches or "")
    if any(_COMPARED.search(t) or _DATE.search(t) for t in texts):
        return True
    if invariant.for_each and _ENDS_AT_TIME.search(invariant.for_each):
        return True
    e = invariant.expect
    if not (e.has_equals or e.unique or e.matches is not None):
        return False
    return bool(_ENDS_AT_TIME.search(invariant.select)) or _ends_at_objects(invariant.select)


def _ends_at_objects(select: str) -> bool:
    """Whether a selection may end at whole objects: ``..``, or a last step that is no field name
    (a filter, ``*`` or an index)."""
    path = select.rstrip()
    if ".." in path or path.endswith("*"):
        return True
    if not path.endswith("]"):
        return False
    inner = path[path.rfind("[") + 1:-1].strip()
    return not inner.startswith(("'", '"'))


def unclocked_notes(scenario: Scenario) -> list[str]:
    """The invariants that keep every instant in the fingerprint, as the run's notes ([]: none)."""
    return [f"invariant {inv.name!r} may read a timestamp: states whose clocks differ are kept apart "
            "(docs/semantics.md, \"Instants no step can see\")"
            for inv in scenario.invariants if reads_time(inv)]
