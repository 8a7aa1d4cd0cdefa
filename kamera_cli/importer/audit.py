"""A Kubernetes audit log turned into a scenario's timeline of user actions.

Why replay only some events: an audit ``Event`` (``audit.k8s.io/v1``, one JSON object per line as
the API server's log backend writes them) records a request, not its effect. Only a write that
completed (stage ``ResponseComplete``) with a 2xx status and whose body was recorded (level
``Request`` or ``RequestResponse``) says what the user sent, which is what an action replays; and
only users' writes belong in the timeline, since the controllers' own writes are what kamera
explores. Everything left out is said, per event, in warnings and in the scenario's comments.
"""

from __future__ import annotations

import fnmatch
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal
from urllib.parse import parse_qs, urlsplit

from kamera_cli.apiserver import Registry, ResourceInfo
from kamera_cli.errors import Problem, ScenarioError
from kamera_cli.importer.auditlog import Event, in_recorded_order, read_events
from kamera_cli.importer.cleaning import LAST_APPLIED, SERVER_METADATA, Options, clean
from kamera_cli.model.objects import ObjectRef

_WRITES = ("create", "update", "patch", "delete", "deletecollection")
_BODY_LEVELS = ("Request", "RequestResponse")
#: the default notion of a non-user: the API server's and controllers' identities
SYSTEM_PREFIX = "system:"
#: past this many actions at ``at: any``, a note says how to narrow the timeline
MANY_ACTIONS = 50


@dataclass(frozen=True, slots=True)
class AuditOptions:
    """Which events become actions, and when each may happen."""

    files: tuple[str, ...]
    #: fnmatch patterns of users to replay as well as every user whose name does not start with system:
    users: tuple[str, ...] = ()
    #: fnmatch patterns of users never to replay, unless ``users`` names them
    exclude_users: tuple[str, ...] = ()
    namespaces: tuple[str, ...] = ()
    at: Literal["any", "converged"] = "any"
    keep_status: bool = False
    #: replay only events that completed in this window (inclusive; UTC)
    since: datetime | None = None
    until: datetime | None = None


@dataclass
class Replay:
    """What a log gives the scenario, accumulated as the events are read (hence not frozen)."""

    actions: list[dict[str, Any]] = field(default_factory=list)
    #: one line per user write not replayed, and the summaries (become comments in scenario.yaml)
    comments: list[str] = field(default_factory=list)
    warnings: list[Problem] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


class _Skip(Exception):
    """This user write cannot be replayed; the message says why."""

    def __init__(self, message: str, path: str = "$", *, warn: bool = True) -> None:
        super().__init__(message)
        self.message = message
        self.path = path
        self.warn = warn


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def user_of(event: Mapping[str, Any]) -> str:
    """Who acted: the impersonated user when there is one (that is whose permissions the write used)."""
    impersonated = _dict(event.get("impersonatedUser")).get("username")
    if isinstance(impersonated, str) and impersonated:
        return impersonated
    return str(_dict(event.get("user")).get("username") or "")


def is_user(name: str, options: AuditOptions) -> bool:
    """Whether ``name``'s writes are replayed: ``--user`` wins, then ``--exclude-user``, then not ``system:``.

    Why this precedence: the common cases are "people plus the CI robot" (``--user`` adds a service
    account), "people but not my controller's own non-system identity" (``--exclude-user``) and "only
    alice" (``--exclude-user '*' --user alice``); each is one or two options.
    """
    if any(fnmatch.fnmatchcase(name, p) for p in options.users):
        return True
    if any(fnmatch.fnmatchcase(name, p) for p in options.exclude_users):
        return False
    return not name.startswith(SYSTEM_PREFIX)


def _has_directive(value: Any) -> bool:
    """A strategic-merge-patch directive (``$patch``, ``$setElementOrder/...``, ``$retainKeys``...)."""
    if isinstance(value, dict):
        return any(str(k).startswith("$") or _has_directive(v) for k, v in value.items())
    if isinstance(value, list):
        return any(_has_directive(v) for v in value)
    return False


def _is_apply(body: Mapping[str, Any], target: ObjectRef, query: Mapping[str, list[str]]) -> bool:
    """Whether a patch was a server-side apply, told from what the log keeps (not its content type).

    The server refuses ``force`` on any other patch type, so ``force`` in the query settles it.
    Otherwise an apply body carries ``apiVersion``, ``kind`` and the target's name (the server
    refuses it else), and a ``fieldManager`` is in the query (the server requires one for apply).
    """
    if "force" in query:
        return True
    named = body.get("apiVersion") and body.get("kind") and _dict(body.get("metadata")).get("name") == target.name
    return bool(named and (query.get("fieldManager") or [""])[0])


def _strip_patch_metadata(body: dict[str, Any]) -> dict[str, Any]:
    """A patch keeps what the user sent, minus server bookkeeping and the last-applied copy."""
    meta = body.get("metadata")
    if not isinstance(meta, dict):
        return body
    meta = {k: v for k, v in meta.items() if k not in SERVER_METADATA}
    annotations = meta.get("annotations")
    if isinstance(annotations, dict) and LAST_APPLIED in annotations:
        annotations = {k: v for k, v in annotations.items() if k != LAST_APPLIED}
        if annotations:
            meta["annotations"] = annotations
        else:
            meta.pop("annotations")
    out = {**body, "metadata": meta}
    if not meta:
        out.pop("metadata")
    return out


class _Replayer:
    def __init__(self, options: AuditOptions, registry: Registry, seeded: set[ObjectRef]) -> None:
        self.options = options
        self.registry = registry
        #: (group, kind, namespace, name) of every object the seed or an earlier action creates
        self.exists = {_key(r) for r in seeded}
        self.timeline = Replay()
        self.counts: dict[str, int] = {}
        self.system: dict[str, int] = {}

    def count(self, what: str) -> None:
        self.counts[what] = self.counts.get(what, 0) + 1

    def screen(self, ev: Event) -> Event | None:
        """The event when it is a user's write to replay (or to say why not), else ``None``, counted.

        Called as the log is read, so only these events are kept: a log's reads and controllers'
        writes, most of it, cost no memory. Their response body is dropped but for the name a
        ``generateName`` create was given.
        """
        data = ev.data
        if data.get("stage") != "ResponseComplete":
            self.count("events at other stages than ResponseComplete (each request is taken once, when complete)")
            return None
        if self.options.since is not None or self.options.until is not None:
            if ev.when is None:
                self.count("events without a stageTimestamp (--since/--until cannot place them)")
                return None
            if (self.options.since is not None and ev.when < self.options.since) or (
                    self.options.until is not None and ev.when > self.options.until):
                self.count("events outside --since/--until")
                return None
        verb = data.get("verb")
        ref_raw = _dict(data.get("objectRef"))
        if verb not in _WRITES or not ref_raw.get("resource"):
            self.count("reads and non-resource requests (nothing to replay)")
            return None
        user = user_of(data)
        if not is_user(user, self.options):
            self.system[user] = self.system.get(user, 0) + 1
            return None
        namespace = str(ref_raw.get("namespace") or "")
        if self.options.namespaces and namespace and namespace not in self.options.namespaces:
            self.count("user writes in namespaces not named by --namespace")
            return None
        if "responseObject" not in data:
            return ev
        chosen = _dict(_dict(data.get("responseObject")).get("metadata")).get("name")
        slim = {k: v for k, v in data.items() if k != "responseObject"}
        if chosen:
            slim["responseObject"] = {"metadata": {"name": chosen}}
        return Event(ev.file, ev.line, slim, ev.when)

    def event(self, ev: Event) -> None:
        """Turn a screened event into an action, or say why it cannot be one."""
        data = ev.data
        verb = data.get("verb")
        ref_raw = _dict(data.get("objectRef"))
        user = user_of(data)
        label = self._label(user, str(verb), ref_raw, data.get("requestObject"))
        try:
            action = self._action(ev, str(verb), ref_raw, label)
        except _Skip as skip:
            if skip.warn:
                self.timeline.comments.append(f"not replayed: {ev.file}:{ev.line}: {label}: {skip.message}")
                self.timeline.warnings.append(ev.problem(skip.path, f"{label}: not replayed: {skip.message}"))
            else:
                self.count(skip.message)
            return
        self.timeline.actions.append(action)

    def _label(self, user: str, verb: str, ref_raw: Mapping[str, Any], body: Any) -> str:
        """``alice create ConfigMap shop/extra``: who did what to which object, as the report shows it."""
        group, version = str(ref_raw.get("apiGroup") or ""), str(ref_raw.get("apiVersion") or "")
        info = self.registry.lookup_plural(group, version, str(ref_raw.get("resource")))
        what = info.kind if info is not None else str(ref_raw.get("resource"))
        if ref_raw.get("subresource"):
            what += f"/{ref_raw.get('subresource')}"
        name = str(ref_raw.get("name") or _dict(_dict(body).get("metadata")).get("name") or "")
        namespace = str(ref_raw.get("namespace") or "")
        where = f"{namespace}/{name}" if namespace and name else name or (f"in {namespace}" if namespace else "")
        return f"{user or '(no user)'} {verb} {what} {where}".rstrip()

    def _info(self, ref_raw: Mapping[str, Any]) -> ResourceInfo:
        group, version = str(ref_raw.get("apiGroup") or ""), str(ref_raw.get("apiVersion") or "")
        resource = str(ref_raw.get("resource"))
        info = self.registry.lookup_plural(group, version, resource)
        if info is None:
            where = f"{group}/{version}" if group else version
            raise _Skip(f"unknown resource {resource!r} in {where or 'no API version'}: import its "
                        "CustomResourceDefinition with the cluster dump", "$.objectRef")
        return info

    def _action(self, ev: Event, verb: str, ref_raw: Mapping[str, Any], label: str) -> dict[str, Any]:
        data = ev.data
        code = _dict(data.get("responseStatus")).get("code")
        if not isinstance(code, int) or not 200 <= code < 300:
            raise _Skip("failed requests (not 2xx) changed nothing", warn=False)
        query = parse_qs(urlsplit(str(data.get("requestURI") or "")).query)
        if "dryRun" in query:
            raise _Skip("dry-run requests changed nothing", warn=False)
        if verb == "deletecollection":
            raise _Skip("deletecollection: the log does not say which objects it removed", "$.verb")
        info = self._info(ref_raw)
        namespace = str(ref_raw.get("namespace") or "") if info.namespaced else ""
        name = str(ref_raw.get("name") or "")
        subresource = str(ref_raw.get("subresource") or "")
        if subresource and (verb not in ("update", "patch") or subresource not in ("status", "scale")):
            raise _Skip(f"subresource {subresource!r} of a {verb}: scenario actions write objects, their status "
                        "and scale only", "$.objectRef.subresource")
        if verb != "create" and not name:
            raise _Skip(f"a {verb} that names no object (objectRef.name)", "$.objectRef.name")
        body = data.get("requestObject")
        if verb != "delete" and data.get("level") not in _BODY_LEVELS:
            raise _Skip(f"logged at level {data.get('level')!r}: the request body was not recorded (an audit policy "
                        "at level Request or RequestResponse records it)", "$.level")
        if verb != "delete" and body is None:
            raise _Skip("the event has no requestObject: the request body was not recorded", "$.requestObject")
        target = ObjectRef(info.api_version, info.kind, namespace, name)
        # the log's file and line in the name: reports show it, and it tells apart repeated writes
        where = f"{os.path.basename(ev.file)}:{ev.line}"
        base: dict[str, Any] = {"name": f"{label} ({where})", "at": self.options.at}
        if verb == "create":
            return {**base, "apply": self._created(body, info, namespace, name, data)}
        if verb == "delete":
            self._needs(target, ev, label)
            self._delete_options(body, ev, label)
            self.exists.discard(_key(target))
            return {**base, "delete": _target(target)}
        patch = self._patch(body, info, target, subresource, query) if verb == "patch" else None
        if patch is not None and patch["type"] == "apply":
            self.exists.add(_key(target))  # a server-side apply creates what is missing
        else:
            self._needs(target, ev, label)
        if patch is not None:
            return {**base, "patch": patch}
        return {**base, **self._update(body, info, target, subresource)}

    def _needs(self, target: ObjectRef, ev: Event, label: str) -> None:
        if target.name and _key(target) not in self.exists:
            self.timeline.warnings.append(ev.problem(
                "$.objectRef", f"{label}: neither the seed nor an earlier action has {target}: unless a controller "
                               "creates it first, the replay is refused (404)",
                "import the cluster as it was before the log starts"))
            self.exists.add(_key(target))  # warn once per object

    def _delete_options(self, body: Any, ev: Event, label: str) -> None:
        options = _dict(body)
        policy = options.get("propagationPolicy")
        if options.get("orphanDependents") is True or policy not in (None, "Background"):
            policy = "Orphan" if options.get("orphanDependents") is True else policy
            self.timeline.warnings.append(ev.problem(
                "$.requestObject.propagationPolicy",
                f"{label}: replayed with background propagation (was {policy}; scenario deletes have no options)"))

    def _created(self, body: Any, info: ResourceInfo, namespace: str, name: str,
                 data: Mapping[str, Any]) -> dict[str, Any]:
        if not isinstance(body, dict):
            raise _Skip("the recorded request body is not an object", "$.requestObject")
        obj = clean(body, Options(keep_status=self.options.keep_status))
        obj.setdefault("apiVersion", info.api_version)
        obj.setdefault("kind", info.kind)
        meta = obj.setdefault("metadata", {})
        if not isinstance(meta, dict):
            raise _Skip("the recorded object's metadata is not a mapping", "$.requestObject.metadata")
        if namespace:
            meta["namespace"] = namespace
        if not meta.get("name"):
            # generateName: the name the server chose, so later events on that name find the object
            chosen = name or str(_dict(_dict(data.get("responseObject")).get("metadata")).get("name") or "")
            if not chosen:
                raise _Skip("created with generateName and the log does not say which name it got (level "
                            "RequestResponse records it)", "$.requestObject.metadata")
            meta["name"] = chosen
            meta.pop("generateName", None)
        self.exists.add(_key(ObjectRef(info.api_version, info.kind, namespace, str(meta["name"]))))
        return obj

    def _update(self, body: Any, info: ResourceInfo, target: ObjectRef, subresource: str) -> dict[str, Any]:
        if not isinstance(body, dict):
            raise _Skip("the recorded request body is not an object", "$.requestObject")
        if subresource == "scale":  # a PUT of a Scale: only its spec.replicas is written through
            replicas = _dict(body.get("spec")).get("replicas")
            return {"patch": {"target": _target(target), "subresource": "scale", "type": "merge",
                              "patch": {"spec": {"replicas": replicas}}}}
        if subresource:  # a PUT of status: the whole status becomes the request's, as a JSON patch says it
            status = body.get("status")
            whole = [{"op": "add", "path": "/status", "value": status if status is not None else {}}]
            return {"patch": {"target": _target(target), "subresource": "status", "type": "json", "patch": whole}}
        obj = clean(body, Options(keep_status=True))
        obj.setdefault("apiVersion", info.api_version)
        obj.setdefault("kind", info.kind)
        meta = obj.setdefault("metadata", {})
        if not isinstance(meta, dict):
            raise _Skip("the recorded object's metadata is not a mapping", "$.requestObject.metadata")
        if target.namespace:
            meta["namespace"] = target.namespace
        if not meta.get("name"):
            meta["name"] = target.name  # the object the request's URL named (objectRef.name)
        return {"replace": obj}

    def _patch(self, body: Any, info: ResourceInfo, target: ObjectRef, subresource: str,
               query: Mapping[str, list[str]]) -> dict[str, Any]:
        patch: dict[str, Any] = {"target": _target(target)}
        if subresource:
            patch["subresource"] = subresource
        if isinstance(body, list):
            return {**patch, "type": "json", "patch": body}
        if not isinstance(body, dict):
            raise _Skip("the recorded patch is neither an object nor a JSON patch list", "$.requestObject")
        if _is_apply(body, target, query):
            manager = (query.get("fieldManager") or ["kamera-user"])[0]
            obj = {**_strip_patch_metadata(body), "apiVersion": target.api_version}
            obj["metadata"] = {**_dict(obj.get("metadata")), "name": target.name}
            obj["metadata"].pop("namespace", None)
            obj.setdefault("kind", target.kind)
            return {**patch, "type": "apply", "fieldManager": manager,
                    "force": (query.get("force") or ["false"])[0] == "true", "patch": obj}
        body = _strip_patch_metadata(body)
        # custom resources refuse strategic patches, so a successful one was a merge patch; kubectl
        # scale sends a merge patch of the Scale; otherwise kubectl's default for built-in kinds
        strategic = not info.custom and (subresource != "scale" or _has_directive(body))
        kind = "strategic" if strategic else "merge"
        return {**patch, "type": kind, "patch": body}

    def finish(self) -> Replay:
        if self.options.at == "any" and len(self.timeline.actions) > MANY_ACTIONS:
            self.timeline.notes.append(
                f"{len(self.timeline.actions)} actions at `at: any`: every placement of each among the controllers' "
                "steps is explored, so the states grow with every action; --since/--until narrow the window, "
                "--at converged places each action once")
        if self.system:
            top = sorted(self.system.items(), key=lambda kv: (-kv[1], kv[0]))
            users = ", ".join(f"{u} ({n})" for u, n in top[:5]) + (", ..." if len(top) > 5 else "")
            total = sum(self.system.values())
            line = (f"{total} write(s) by controllers and system users not replayed (they are what kamera explores; "
                    f"--user adds users): {users}")
            self.timeline.notes.append(line)
            self.timeline.comments.append(line)
        for what, n in sorted(self.counts.items()):
            line = f"{n} {'event' if n == 1 else 'events'} not replayed: {what}"
            self.timeline.notes.append(line)
            if "reads" not in what and "stages" not in what:
                self.timeline.comments.append(line)
        return self.timeline


def _key(ref: ObjectRef) -> tuple[str, str, str, str]:
    return (ref.kind_ref.group, ref.kind, ref.namespace, ref.name)


def _target(ref: ObjectRef) -> dict[str, str]:
    out = {"apiVersion": ref.api_version, "kind": ref.kind}
    if ref.namespace:
        out["namespace"] = ref.namespace
    out["name"] = ref.name
    return out


def replay(options: AuditOptions, registry: Registry, seeded: Sequence[ObjectRef]) -> Replay:
    """The actions for ``spec.actions`` in recorded order; ``ScenarioError`` for a malformed log."""
    problems: list[Problem] = []
    replayer = _Replayer(options, registry, set(seeded))
    kept = [e for path in options.files for ev in read_events(path, problems) if (e := replayer.screen(ev))]
    if problems:
        raise ScenarioError(problems)
    for event in in_recorded_order(kept, replayer.timeline.notes):
        replayer.event(event)
    return replayer.finish()
