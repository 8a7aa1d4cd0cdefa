"""Counterexamples and verdicts: what an explored graph says, told as stories a user can follow.

Owns: the verdict of every check (``verdicts``), the numbered steps of a path and their replay
(``story``), and the bounded, reporter-ready copy of the explored graph (``statemap``).

May import: ``sim`` (the Kubernetes model whose graph it judges), ``invariants``, ``explore``,
``apiserver``, ``model``, ``errors``. Imported by ``runner`` only. See docs/architecture.md.
"""

from __future__ import annotations

from kamera_cli.judging.verdicts import Judge, outcome_key, properties_of, scenario_verdict

__all__ = ["Judge", "outcome_key", "properties_of", "scenario_verdict"]
