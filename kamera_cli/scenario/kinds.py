"""Which kinds exist and which are namespaced, as far as the loader can tell without a cluster.

Why an oracle with three answers: the loader must not depend on the API server layer being present
(it is imported lazily, and tests inject their own callback). When nothing can tell, the loader says
nothing rather than guess wrong.
"""

from __future__ import annotations

import contextlib
import difflib
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from kamera_cli.model.objects import KindRef, Manifest

KnownKind = Callable[[KindRef], bool]

#: built-in cluster-scoped kinds, used only when the API server's registry cannot be imported
_CLUSTER_SCOPED = frozenset(
    {
        "Namespace", "Node", "PersistentVolume", "ComponentStatus", "ClusterRole", "ClusterRoleBinding",
        "CustomResourceDefinition", "APIService", "StorageClass", "CSIDriver", "CSINode", "VolumeAttachment",
        "PriorityClass", "RuntimeClass", "IngressClass", "MutatingWebhookConfiguration",
        "ValidatingWebhookConfiguration", "ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding",
        "CertificateSigningRequest", "FlowSchema", "PriorityLevelConfiguration", "TokenReview",
        "SelfSubjectAccessReview", "SelfSubjectRulesReview", "SubjectAccessReview", "SelfSubjectReview",
    }
)  # fmt: skip


def _crd_kinds(crds: Sequence[Manifest]) -> dict[KindRef, bool]:
    """(group, version, kind) -> namespaced, for every served version of every CRD."""
    found: dict[KindRef, bool] = {}
    for crd in crds:
        spec = crd.get("spec")
        if not isinstance(spec, Mapping):
            continue
        names = spec.get("names")
        kind = names.get("kind") if isinstance(names, Mapping) else None
        group = spec.get("group")
        versions = spec.get("versions")
        if not isinstance(kind, str) or not isinstance(group, str) or not isinstance(versions, list):
            continue
        for version in versions:
            if isinstance(version, Mapping) and isinstance(version.get("name"), str):
                found[KindRef(group, version["name"], kind)] = spec.get("scope", "Namespaced") != "Cluster"
    return found


class KindOracle:
    """``known(kind)`` and ``namespaced(kind)``: True, False, or None when it cannot tell."""

    def __init__(self, crds: Sequence[Manifest], known_kind: KnownKind | None) -> None:
        self._crds = _crd_kinds(crds)
        self._known_kind = known_kind
        self._registry: Any = None
        #: index in ``crds`` -> why the API server refuses that CRD
        self.crd_errors: dict[int, str] = {}
        try:
            from kamera_cli.apiserver import (  # type: ignore[attr-defined, unused-ignore]  # layer 2, optional
                Registry,
            )
        except ImportError:
            return
        from kamera_cli.errors import KameraError

        try:
            builtin = Registry.builtin()
        except Exception:
            return
        try:
            self._registry = builtin.with_crds(list(crds))
        except KameraError:
            self._registry = builtin
            for i, crd in enumerate(crds):
                try:
                    builtin.with_crds([crd])
                except Exception as exc:  # a KameraError normally; anything else is still this CRD's fault
                    self.crd_errors[i] = " ".join(str(exc).split()) or type(exc).__name__
            if not self.crd_errors:
                self.crd_errors[0] = "the CRDs conflict with each other or with a built-in kind"
        except Exception:
            self._registry = builtin

    def _info(self, kind: KindRef) -> Any:
        if self._registry is None:
            return None
        try:
            return self._registry.lookup(kind.api_version, kind.kind)
        except Exception:
            return None

    def known(self, kind: KindRef) -> bool | None:
        if self._known_kind is not None:
            return bool(self._known_kind(kind)) or kind in self._crds
        if kind in self._crds:
            return True
        if self._registry is None:
            return None
        return self._info(kind) is not None

    def _all_kinds(self) -> list[KindRef]:
        kinds = set(self._crds)
        listing = getattr(self._registry, "resources", None)  # optional: not every registry can list
        if callable(listing):
            with contextlib.suppress(Exception):
                kinds.update(
                    info.kind_ref for info in listing() if isinstance(getattr(info, "kind_ref", None), KindRef)
                )
        return sorted(kinds)

    def suggest(self, kind: KindRef) -> str:
        """``did you mean 'apps/v1/Deployment'?`` for a kind in the wrong group or misspelt; else ""."""
        known = [k for k in self._all_kinds() if k != kind]
        same_name = [k for k in known if k.kind.lower() == kind.kind.lower()]
        if same_name:
            preferred = [k for k in same_name if k.group == kind.group] or same_name
            return f"did you mean {str(preferred[0])!r}?"
        close = difflib.get_close_matches(str(kind), [str(k) for k in known], n=1, cutoff=0.8)
        return f"did you mean {close[0]!r}?" if close else ""

    def namespaced(self, kind: KindRef) -> bool:
        info = self._info(kind)
        if info is not None:
            return bool(info.namespaced)
        if kind in self._crds:
            return self._crds[kind]
        return kind.kind not in _CLUSTER_SCOPED
