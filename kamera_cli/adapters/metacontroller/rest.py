"""The engine's requests: through the routed official client, label selectors, object helpers.

Why through the user-facing ``ApiClient`` rather than the API server object: every request then takes
the path any controller's does (the containment's transport), so the step's journal, its footprint
for memoisation and partial-order reduction, injected conflicts and crash points all apply to the
engine's writes exactly as to a reconcile's.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, urlencode

__all__ = ["ResInfo", "Rest", "controller_of", "label_selector_matches", "status_of"]


@dataclass(frozen=True, slots=True)
class ResInfo:
    """A resource as the engine addresses it (what metacontroller's discovery gives it)."""

    api_version: str
    kind: str
    plural: str
    namespaced: bool
    has_status: bool

    @property
    def group(self) -> str:
        return self.api_version.rpartition("/")[0]

    @property
    def version(self) -> str:
        return self.api_version.rpartition("/")[2]

    def path(self, namespace: str | None, name: str = "", sub: str = "") -> str:
        """The REST path of the collection, of one object (``name``) or of its subresource (``sub``)."""
        parts = ["/apis" if "/" in self.api_version else "/api", self.api_version]
        if self.namespaced and namespace:
            parts += ["namespaces", quote(namespace, safe="")]
        parts += [self.plural, *(p for p in (quote(name, safe="") if name else "", sub) if p)]
        return "/".join(parts)


#: resolves (apiVersion, plural resource) or (apiVersion, Kind) to a resource, None when unknown
Resolver = Callable[[str, str], "ResInfo | None"]


def status_of(exc: BaseException) -> int | None:
    """The HTTP status of an API error answer (the official client's ``ApiException``)."""
    status = getattr(exc, "status", None)
    return status if isinstance(status, int) else None


def _log_warnings(response: Any) -> None:
    """The server's ``Warning`` headers, logged as client-go's default handler logs them (klog, from
    ``warnings.go``): metacontroller's log is where a user learns that a field it wrote was dropped — a
    decorator's status field a Namespace does not have, say."""
    headers = getattr(response, "headers", None)
    if headers is None and callable(getattr(response, "getheaders", None)):
        headers = response.getheaders()
    if headers is None:
        return
    values = headers.getlist("Warning") if hasattr(headers, "getlist") else [headers.get("Warning")]
    for value in values:
        for text in _warning_texts(str(value or "")):
            # without klog's time stamp: reading the clock would make the step depend on the instant
            sys.stderr.write(f"W warnings.go:70] {text}\n")


def _warning_texts(header: str) -> list[str]:
    """The texts of one ``Warning`` header (RFC 7234: ``299 - "text"``, several comma-separated)."""
    texts = []
    for match in re.finditer(r'\d{3} \S+ "((?:[^"\\]|\\.)*)"', header):
        texts.append(re.sub(r"\\(.)", r"\1", match.group(1)))
    return texts


class Rest:
    """JSON requests on the official client's REST layer; an error answer raises its ``ApiException``."""

    def __init__(self, client: Any) -> None:
        self.client = client

    def call(self, method: str, path: str, body: Any = None, *, query: Mapping[str, str] | None = None,
             content_type: str = "application/json") -> Any:
        from kubernetes.client.exceptions import ApiException

        url = str(self.client.configuration.host).rstrip("/") + path
        if query:
            url += "?" + urlencode(sorted(query.items()))
        headers = {"Accept": "application/json", "Content-Type": content_type}
        response = self.client.rest_client.request(method, url, headers=headers, body=body)
        data = getattr(response, "data", None)
        if data is None:
            data = response.read()
        text = data.decode("utf-8") if isinstance(data, bytes) else str(data or "")
        _log_warnings(response)
        if not 200 <= int(response.status) < 300:  # older clients raise by themselves; newer return
            exc = ApiException(status=int(response.status), reason=getattr(response, "reason", ""))
            exc.body = text
            raise exc
        return json.loads(text) if text else None

    def get(self, info: ResInfo, namespace: str | None, name: str) -> dict[str, Any] | None:
        """The object, or None when it does not exist."""
        try:
            found = self.call("GET", info.path(namespace, name))
        except Exception as exc:
            if status_of(exc) == 404:
                return None
            raise
        return found if isinstance(found, dict) else None

    def list(self, info: ResInfo, namespace: str | None) -> list[dict[str, Any]]:
        """Every object of the resource (in ``namespace`` when given), sorted by namespace and name."""
        answer = self.call("GET", info.path(namespace if info.namespaced else None)) or {}
        items = [dict(item) for item in answer.get("items") or []]
        for item in items:  # list items come without apiVersion and kind
            item.setdefault("apiVersion", info.api_version)
            item.setdefault("kind", info.kind)
        return sorted(items, key=lambda o: (meta(o).get("namespace") or "", meta(o).get("name") or ""))


def meta(obj: Mapping[str, Any]) -> dict[str, Any]:
    value = obj.get("metadata")
    return value if isinstance(value, dict) else {}


def controller_of(obj: Mapping[str, Any]) -> dict[str, Any] | None:
    """The object's ownerReference with ``controller: true`` (``metav1.GetControllerOf``)."""
    for ref in meta(obj).get("ownerReferences") or []:
        if isinstance(ref, dict) and ref.get("controller") is True:
            return ref
    return None


def label_selector_matches(selector: Mapping[str, Any] | None, labels: Mapping[str, Any] | None) -> bool:
    """``metav1.LabelSelectorAsSelector(selector).Matches(labels)``; None selects everything.

    Raises ValueError for an operator that is not In, NotIn, Exists or DoesNotExist (the conversion's error).
    """
    if selector is None:
        return True
    labels = labels or {}
    for key, value in sorted((selector.get("matchLabels") or {}).items()):
        if labels.get(key) != value:
            return False
    for expr in selector.get("matchExpressions") or []:
        key = expr.get("key")
        operator = expr.get("operator")
        values = expr.get("values") or []
        if operator == "In":
            if key not in labels or labels[key] not in values:
                return False
        elif operator == "NotIn":
            if key in labels and labels[key] in values:
                return False
        elif operator == "Exists":
            if key not in labels:
                return False
        elif operator == "DoesNotExist":
            if key in labels:
                return False
        else:
            raise ValueError(f"{operator!r} is not a valid label selector operator")
    return True


def parent_selected(label_selector: str, annotation_selector: str, obj: Mapping[str, Any]) -> bool:
    """The manifest's parent selectors (labels; a Decorator's annotations too) match ``obj``."""
    m = meta(obj)
    try:
        return (label_selector_matches(selector_of(label_selector), m.get("labels"))
                and label_selector_matches(selector_of(annotation_selector), m.get("annotations")))
    except ValueError:  # an invalid operator: metacontroller fails to build the selector, selects nothing
        return False


def selector_of(text: str) -> dict[str, Any] | None:
    """A manifest's selector as stored by the manifest parser (JSON text; "" for none)."""
    return json.loads(text) if text else None
