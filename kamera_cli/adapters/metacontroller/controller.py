"""A metacontroller manifest with its hooks mapped to Python, loaded as one kamera controller.

Why a :class:`ReconcilerFactory`: the hooks are the user's code, so they get everything a reconcile
gets — their own module set (re-imported after a simulated crash), the sandbox (virtual time,
seeded randomness, the network fence), the step's budget, and tracebacks that show only their
frames.  The engine around them is kamera's emulation of metacontroller (``sync.py``): one step is
one sync of one parent, run inside the same sandboxed call, with its requests made through the
routed official client.
"""

from __future__ import annotations

import inspect
import json
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from types import ModuleType
from typing import Any

from kamera_cli.adapters.metacontroller.apps import is_asgi, is_wsgi
from kamera_cli.adapters.metacontroller.hooks import HookTarget, is_handler, neutered_servers
from kamera_cli.adapters.metacontroller.manifest import MetaSpec
from kamera_cli.adapters.metacontroller.rest import ResInfo, Rest, controller_of, meta, parent_selected
from kamera_cli.adapters.metacontroller.ssa import DEFAULT_FIELD_MANAGER, SsaApplier
from kamera_cli.adapters.metacontroller.sync import Engine
from kamera_cli.adapters.sandbox.entrypoints import parse_entrypoint
from kamera_cli.adapters.sandbox.fence import VirtualClock, sandboxed
from kamera_cli.adapters.sandbox.loading import (
    IMPORT_EPOCH,
    IMPORT_SEED,
    ReconcilerFactory,
    ReconcileShape,
    arity_of,
    package_chain,
)
from kamera_cli.adapters.sandbox.values import Remembering, Request, Result, retry_failure
from kamera_cli.errors import EntrypointError
from kamera_cli.model.objects import KindRef

__all__ = ["MetacontrollerController", "ParentView"]

_HOOK_HINT = ("map each hook to `def hook(request: dict) -> dict`, to the hook server's "
              "http.server.BaseHTTPRequestHandler subclass, or to its WSGI (Flask) or ASGI (FastAPI) application, "
              "or to a no-argument function that builds and starts the server")
_FACTORY_HINT = ("a no-argument hook entry point builds and starts the hook server (HTTPServer(...).serve_forever(), "
                 "make_server(...), uvicorn.run(app)); kamera calls it once, with servers that bind nothing")


def _builds_a_server(value: Any) -> bool:
    """A plain function that needs no argument: it cannot take the request, so it builds the server."""
    if inspect.isclass(value) or not inspect.isfunction(value) or inspect.iscoroutinefunction(value):
        return False
    arity = arity_of(value)
    return arity is not None and arity.accepts(0) and not arity.accepts(1)


class MetacontrollerController(ReconcilerFactory):
    """The manifest's engine plus its hooks; ``step`` syncs one parent of one parent resource."""

    def __init__(self, spec: MetaSpec, manifest: Mapping[str, Any], hooks: Mapping[str, str], base_dir: Any, *,
                 scenario: str, controller: str, env: Any = None, apply_strategy: str = "dynamic-apply",
                 field_manager: str = DEFAULT_FIELD_MANAGER) -> None:
        self.meta = spec
        #: metacontroller's ``--apply-strategy`` and ``--apply-strategy-ssa-field-manager``
        self.apply_strategy = apply_strategy
        self.field_manager = field_manager
        self.manifest = json.loads(json.dumps(dict(manifest)))
        self.manifest.setdefault("status", {})
        self.hook_entries = {h: e for h, e in sorted(hooks.items()) if spec.hook_path(h) is not None}
        self.targets: dict[str, HookTarget] = {}
        self.resolve: Callable[[str, str], ResInfo | None] = lambda _a, _b: None
        self.parents: list[ResInfo] = []
        #: the servers the hook modules started at import (handlers get theirs as ``self.server``)
        self.servers: list[Any] = []
        #: the hook modules by their entry point's module part; the hook whose target is being resolved
        self._modules: dict[str, ModuleType] = {}
        self._current_hook = "sync"
        #: what each no-argument hook entry point started (its server's handler class or application)
        self._built: dict[Any, Any] = {}
        super().__init__(self.hook_entries["sync"], base_dir, scenario=scenario, controller=controller, env=env)

    def _tried(self) -> str:
        return f"metacontroller hook {self.entrypoint!r}"

    # -- loading: every hook's module, in one module set -------------------------------------------------------
    def _load(self) -> Any:
        extra = []
        for entry in self.hook_entries.values():
            parsed = parse_entrypoint(entry, self.base_dir)
            if parsed.file is not None:
                extra.append(str(parsed.file.parent))
        ms = self.module_set
        ms.path_entries = tuple(dict.fromkeys([*ms.path_entries, *extra]))
        return super()._load()

    def _import(self) -> ModuleType:
        with neutered_servers() as started:  # a hook server started at import must not bind or block
            module = super()._import()
        self.servers = started
        return module

    def _exec_entry_module(self) -> ModuleType:
        """Every hook's module (each file once); the sync hook's is the loader's ``module``."""
        self._modules = {}
        first: ModuleType | None = None
        for hook, entry in self.hook_entries.items():
            module_part = entry.rpartition(":")[0]
            if module_part not in self._modules:
                self._use(entry)
                self._modules[module_part] = self._exec_one()
            if hook == "sync":
                first = self._modules[module_part]
        self._use(self.hook_entries["sync"])
        assert first is not None
        return first

    def _use(self, entry: str) -> None:
        """Make ``entry`` the one the loader's messages and imports are about."""
        self.entrypoint = entry
        self.parsed = parse_entrypoint(entry, self.base_dir)
        chain = package_chain(self.parsed.file.parent) if self.parsed.file is not None else []
        self._package = ".".join(chain)

    def _exec_one(self) -> ModuleType:
        return super()._exec_entry_module()

    def _resolve(self, module: ModuleType) -> Any:
        for hook, entry in self.hook_entries.items():
            self._use(entry)
            self._current_hook = hook
            super()._resolve(self._modules[entry.rpartition(":")[0]])
        self._use(self.hook_entries["sync"])
        self._shape = ReconcileShape("function", 2, False)
        return self.step

    def _check_shape(self, value: Any, where: str) -> Any:
        hook = self._current_hook
        path = self.meta.hook_path(hook) or "/"
        name = self.parsed.attr
        if is_handler(value):
            if not callable(getattr(value, "do_POST", None)):
                raise self._error(f"{self._tried()}: handler {name!r} in {where} has no do_POST method",
                                  "metacontroller POSTs the hook request; define do_POST")
            server = next((s for s in self.servers if getattr(s, "RequestHandlerClass", None) is value), None)
            self.targets[hook] = HookTarget(hook, self.entrypoint, "handler", value, path, server)
            return value
        if inspect.isclass(value) or not callable(value):
            raise self._error(f"{self._tried()}: {name!r} in {where} is neither a function, a "
                              "BaseHTTPRequestHandler subclass nor a WSGI or ASGI application", _HOOK_HINT)
        if _builds_a_server(value):  # called once, however many hooks it serves
            if value not in self._built:
                self._built[value] = self._started_server(value, where)
            return self._check_shape(self._built[value], where)
        for shape, test in (("asgi", is_asgi), ("wsgi", is_wsgi)):
            if test(value):
                self.targets[hook] = HookTarget(hook, self.entrypoint, shape, value, path)  # type: ignore[arg-type]
                return value
        if inspect.iscoroutinefunction(value) or inspect.isasyncgenfunction(value) \
                or inspect.iscoroutinefunction(getattr(value, "__call__", None)):  # noqa: B004
            raise self._error(f"{self._tried()}: {name!r} in {where} is async; a hook function returns its "
                              "response dict (an ASGI application takes (scope, receive, send))", _HOOK_HINT)
        arity = arity_of(value)
        if arity is not None and not arity.accepts(1):
            raise self._error(f"{self._tried()}: function {name!r} in {where} takes {arity.text}; a hook takes "
                              "the request dict", _HOOK_HINT)
        self.targets[hook] = HookTarget(hook, self.entrypoint, "function", value, path)
        return value

    def _started_server(self, build: Callable[[], Any], where: str) -> Any:
        """Call a no-argument entry point that builds and starts the hook server (``main()`` calling
        ``server_factory(**settings).serve_forever()``), as at import: in the sandbox, with the
        controller's env, argv and files, servers binding nothing and ``serve_forever`` returning at
        once. What it serves is the started server's ``RequestHandlerClass`` (a WSGI server's application,
        an ``uvicorn.run`` application)."""
        name = self.parsed.attr
        with self.module_set.importing(), self.scope(), neutered_servers() as started, \
                sandboxed(VirtualClock(IMPORT_EPOCH), IMPORT_SEED, importing=True) as run:
            try:
                build()
            except (KeyboardInterrupt, EntrypointError):
                raise
            except SystemExit as exc:
                raise self._error(f"{self._tried()}: calling {name}() in {where} called sys.exit({exc.code!r})",
                                  _FACTORY_HINT) from None
            except BaseException as exc:
                raise self._error(f"{self._tried()}: calling {name}() in {where} raised {type(exc).__name__}: {exc}",
                                  _FACTORY_HINT) from None
        if run.network:
            raise self._error(f"{self._tried()}: calling {name}() in {where} tried to open a network connection "
                              f"to {run.network[0].address}", _FACTORY_HINT)
        self.servers.extend(s for s in started if s not in self.servers)
        if not started:
            raise self._error(f"{self._tried()}: {name}() in {where} takes no request and started no server",
                              _FACTORY_HINT)
        server = started[-1]
        app = server.get_app() if callable(getattr(server, "get_app", None)) else None
        if app is not None:  # wsgiref's make_server(...): the application behind its generic handler
            return app
        return getattr(server, "RequestHandlerClass", server)

    # -- binding to the cluster --------------------------------------------------------------------------------
    def bind(self, resolve: Callable[[str, str], ResInfo | None]) -> list[ResInfo]:
        """Resolve the manifest's resources in the cluster's discovery; the parent resources, in order."""
        self.resolve = resolve
        self.parents = []
        for rule in self.meta.parents:
            info = resolve(rule.api_version, rule.resource)
            if info is None:
                raise self._error(f"the manifest's parent resource {rule.resource!r} in apiVersion "
                                  f"{rule.api_version!r} is not served by the cluster",
                                  "add its CustomResourceDefinition to spec.crds")
            self.parents.append(info)
        for child in self.meta.children:
            if resolve(child.api_version, child.resource) is None:
                raise self._error(f"the manifest's child resource {child.resource!r} in apiVersion "
                                  f"{child.api_version!r} is not served by the cluster",
                                  "add its CustomResourceDefinition to spec.crds")
        if any(c.rolling for c in self.meta.children) and \
                resolve("metacontroller.k8s.io/v1alpha1", "controllerrevisions") is None:
            raise self._error("the manifest's rolling update strategy needs metacontroller's ControllerRevision "
                              "resource, which the cluster does not serve",
                              "add metacontroller's CRD controllerrevisions.metacontroller.k8s.io to spec.crds")
        return list(self.parents)

    def parent_events(self, index: int) -> Callable[[Mapping[str, Any] | None, Mapping[str, Any] | None], str]:
        """Which changes of a parent enqueue it (``enqueueParentObject``/``updateParentObject``):
        "reset" (enqueue, as any event) or "" (not at all)."""
        rule = self.meta.parents[index]
        finalizer = self.meta.finalizer

        def events(before: Mapping[str, Any] | None, after: Mapping[str, Any] | None) -> str:
            obj = after if after is not None else before
            if obj is None:
                return ""
            if rule.ignore_status_changes and before is not None and after is not None:
                old, new = meta(before), meta(after)
                if all(old.get(k) == new.get(k) for k in ("generation", "labels", "annotations")) \
                        and not new.get("deletionTimestamp"):
                    return ""
            if finalizer in (meta(obj).get("finalizers") or []):
                return "reset"
            return "reset" if parent_selected(rule.label_selector, rule.annotation_selector, obj) else ""

        return events

    def orphan_parents(self, index: int) -> Any:
        """A watch mapper for the child kinds: an orphan (no controller ownerReference) enqueues the
        parents of its namespace, which may adopt it (``findPotentialParents``, whose selector test the
        sync repeats); children with a controller are the ``owns`` wiring's."""

        def parents(obj: Mapping[str, Any], lister: Any) -> list[tuple[str, str]]:
            if controller_of(obj) is not None or not self.meta.composite:
                return []
            info = self.parents[index]
            namespace = meta(obj).get("namespace") if info.namespaced else None
            return list(lister(KindRef(info.group, info.version, info.kind), namespace))

        parents.lists = True  # type: ignore[attr-defined]
        return parents

    # -- one step ----------------------------------------------------------------------------------------------
    def step(self, request: Request, client: Any, index: int = 0) -> Result:
        """One sync of the parent ``request`` names, of the ``index``-th parent resource.

        A failed sync is retried through the work queue's rate limiter (``processNextWorkItem``'s
        ``AddRateLimited``): its exception is raised as any controller's, with the retry's delay and
        the parent's failure count attached (``reconcile.retry_failure``); a sync that succeeds
        forgets the count (``queue.Forget``), a hook's 429 leaves it as it is (``AddAfter``).
        """
        rule = self.meta.parents[index]
        kept = json.loads(request.remembered) if request.remembered else {}
        cache = kept.get("customize")
        failures = int(kept.get("requeues") or 0)
        rest = Rest(client)
        ssa = SsaApplier(rest, self.field_manager, dict(kept.get("ssa") or {})) \
            if self.apply_strategy == "server-side-apply" else None
        engine = Engine(self.meta, self.manifest, rest, self.targets, self.parents[index], self.resolve,
                        rule.label_selector, rule.annotation_selector, cache, ssa)
        try:
            outcome = engine.sync(request.namespace, request.name)
        except Exception as exc:  # metacontroller records a Warning event on the parent, then retries
            sync_error_event(engine.rest, self.parents[index], request.namespace, request.name, exc)
            # a failed sync keeps no new customize answer (docs/controllers.md)
            retry_failure(exc, Remembering(requeue_after=rate_limited_delay(failures), retry=True,
                                           memory=_memory(kept, cache, min(failures + 1, MAX_REQUEUES), ssa)))
            raise
        # the customize cache and the failure count live in the explored state (``SimState.memory``),
        # as kopf's memos do
        memory = _memory(kept, engine.customize_cache, failures if outcome.retry_after else 0, ssa)
        if outcome.retry_after:
            return Remembering(requeue_after=outcome.retry_after, retry=True, memory=memory)
        if outcome.ignored:
            return Remembering(requeue_after=None, memory=memory)
        periods = [p for p in (outcome.resync_after, self.meta.resync_period_seconds) if p > 0]
        return Remembering(requeue_after=min(periods) if periods else None, memory=memory)


#: ``workqueue.DefaultTypedControllerRateLimiter``'s per-item exponential limiter (client-go
#: ``util/workqueue/default_rate_limiters.go``): 5 ms doubled per failure, at most 1000 s
BASE_DELAY = 0.005
MAX_DELAY = 1000.0
#: the failure count from which the delay is MAX_DELAY (5 ms * 2**18 > 1000 s): counting further
#: would tell states apart that behave alike
MAX_REQUEUES = 18


def rate_limited_delay(failures: int) -> float:
    """``ItemExponentialFailureRateLimiter.When``: the delay of the retry after ``failures`` earlier ones."""
    return min(BASE_DELAY * 2.0 ** min(failures, MAX_REQUEUES), MAX_DELAY)


def _memory(kept: Mapping[str, Any], cache: Any, failures: int, ssa: SsaApplier | None) -> str | None:
    """What the step keeps for the parent — the customize answer, the failure count, the server-side
    apply cache (which a failed sync keeps: metacontroller's is updated apply by apply) — as canonical
    JSON ("" for nothing); None when unchanged."""
    applied = ssa.cache if ssa is not None else None
    new = {k: v for k, v in (("customize", cache), ("requeues", failures), ("ssa", applied)) if v}
    if new == dict(kept):
        return None
    return json.dumps(new, sort_keys=True) if new else ""


def sync_error_event(rest: Rest, info: ResInfo, namespace: str | None, name: str, error: Exception) -> None:
    """The ``SyncError`` Warning event metacontroller's recorder posts about the parent (best effort,
    like the recorder; an Event is a record, not state: docs/semantics.md)."""
    try:
        parent = rest.get(info, namespace, name)
        if parent is None:
            return
        m = meta(parent)
        now = time.time_ns()  # the step's virtual clock
        stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(now // 1_000_000_000))
        where = str(m.get("namespace") or "default")
        event = {"apiVersion": "v1", "kind": "Event", "metadata": {"name": f"{name}.{now:x}", "namespace": where},
                 "involvedObject": {"apiVersion": parent.get("apiVersion"), "kind": parent.get("kind"),
                                    "namespace": m.get("namespace"), "name": name, "uid": m.get("uid"),
                                    "resourceVersion": m.get("resourceVersion")},
                 "reason": "SyncError", "message": f"Sync error: {error}", "type": "Warning", "count": 1,
                 "firstTimestamp": stamp, "lastTimestamp": stamp, "source": {"component": "metacontroller"}}
        rest.call("POST", f"/api/v1/namespaces/{where}/events", event)
    except Exception:  # the recorder drops what it cannot post
        return


class ParentView:
    """The controller as the runtime of one parent resource sees it (a Decorator may have several)."""

    def __init__(self, controller: MetacontrollerController, index: int) -> None:
        self._controller = controller
        self._index = index

    def __getattr__(self, name: str) -> Any:
        return getattr(self._controller, name)

    def invoke(self, request: Request, client: object) -> Any:
        return self._controller.step(request, client, self._index)


def load_metacontroller(spec: MetaSpec, manifest: Mapping[str, Any], hooks: Mapping[str, str], base_dir: Any, *,
                        scenario: str, controller: str, env: Any = None, apply_strategy: str = "dynamic-apply",
                        field_manager: str = DEFAULT_FIELD_MANAGER) -> MetacontrollerController:
    """Import the hooks' modules (servers started at import are neutered) and check their shapes."""
    return MetacontrollerController(spec, manifest, hooks, Path(base_dir), scenario=scenario,
                                    controller=controller, env=env, apply_strategy=apply_strategy,
                                    field_manager=field_manager)

