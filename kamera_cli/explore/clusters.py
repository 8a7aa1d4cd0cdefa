"""Clusters of linked units: the grouping the persistent-set choice weighs again (``reduction._choose``).

Why a module of its own: it is plain grouping, independent of futures and footprints; which units
are linked is worked out in ``reduction._free_units`` (docs/semantics.md, "Clusters of linked units").
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping


def linked(units: dict[Hashable, list[Hashable]], free: list[Hashable], links: Mapping[Hashable, set[Hashable]],
            ) -> dict[Hashable, list[Hashable]] | None:
    """The grouping where each cluster of linked units that are not free is one unit (``None`` when
    no cluster holds two units, or the only cluster holds every process: nothing to weigh again).

    Two units are linked when one kept the other from being free: their first steps conflict, the
    search of one's future met the other's first steps, or their futures clash.
    """
    free_set = set(free)
    rest = [u for u in units if u not in free_set]
    root = {u: u for u in rest}

    def find(u: Hashable) -> Hashable:
        while root[u] != u:
            root[u] = root[root[u]]
            u = root[u]
        return u

    for u in rest:
        for v in links.get(u, ()):
            if v in root:
                root[find(v)] = find(u)
    clusters: dict[Hashable, list[Hashable]] = {}
    for u in rest:
        clusters.setdefault(find(u), []).append(u)
    if len(clusters) == len(rest) or (len(clusters) == 1 and not free):
        return None  # nothing merged, or one unit holding every process (only ever chosen whole)
    out: dict[Hashable, list[Hashable]] = {}
    for u in units:
        if u in free_set:
            out[u] = units[u]
            continue
        cluster = clusters.get(find(u))
        if cluster is None:
            continue  # already placed
        del clusters[find(u)]
        key = u if len(cluster) == 1 else ("linked", *cluster)
        out[key] = [p for v in cluster for p in units[v]]
    return out
