"""``load_scenario``: one YAML file in, one validated ``Scenario`` (or every problem found) out.

Why collect instead of failing fast: a user fixing a scenario wants the whole list in one run, each
problem pointing at its line. So every step below records problems and carries on with whatever is
still usable; the model is built only when nothing was found. No controller code is imported here.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any, cast

from kamera_cli.apiserver.registry.crd_v1beta1 import from_v1beta1, is_v1beta1
from kamera_cli.errors import KameraError, Problem, ScenarioError
from kamera_cli.invariants import (
    InvariantSyntaxError,
    ValueTemplateError,
    compile_invariant,
    compile_query,
    parse_template,
    parse_value_template,
)
from kamera_cli.model.objects import KindRef, Manifest, ObjectRef
from kamera_cli.model.scenario import (
    ControllerSpec,
    Expectations,
    ExpectSpec,
    ExploreBounds,
    InvariantSpec,
    Position,
    Scenario,
    WatchSpec,
)
from kamera_cli.scenario.actions import read_actions
from kamera_cli.scenario.cluster import parse_cluster
from kamera_cli.scenario.durations import parse_duration
from kamera_cli.scenario.fakes import parse_fakes
from kamera_cli.scenario.kinds import KindOracle, KnownKind
from kamera_cli.scenario.manifests import Located, Sources, check_manifest
from kamera_cli.scenario.metacontroller import read_metacontroller
from kamera_cli.scenario.paths import Path_
from kamera_cli.scenario.perturbations import read_perturbations
from kamera_cli.scenario.process import with_process
from kamera_cli.scenario.programs import program_key_problems
from kamera_cli.scenario.reading import Reader
from kamera_cli.scenario.schema import json_type, schema_problems
from kamera_cli.scenario.values import as_dict as _dict
from kamera_cli.scenario.values import as_int as _int
from kamera_cli.scenario.values import as_list as _list
from kamera_cli.scenario.values import as_str as _str
from kamera_cli.scenario.yamldoc import read_documents

API_VERSION = "kamera.dev/v1alpha1"
KIND = "Scenario"
#: namespaces the simulated cluster always has; seeds must not create them, but may use them
BUILTIN_NAMESPACES = ("default", "kube-node-lease", "kube-public", "kube-system")
_MAPPERS = frozenset({"owner", "sameName", "namespace", "all"})
#: a program's script form: a .py file whose top level is the program (no ``:function``)
_SCRIPT = re.compile(r"^[^:\s][^:]*\.py$")
#: the schema's entry-point pattern (``$defs.entrypoint``)
_ENTRYPOINT = re.compile(r"^[^:\s][^:]*:[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$")
#: the schema's duration string pattern (``$defs.duration``)
_DURATION = re.compile(r"^([0-9]+(\.[0-9]+)?(ms|h|m|s))+$")

CheckEntrypoint = Callable[[str, str], "str | None"]


def load_scenario(
    path: str | os.PathLike[str],
    *,
    known_kind: KnownKind | None = None,
    check_entrypoint: CheckEntrypoint | None = None,
) -> Scenario:
    """Load and validate one scenario file; raises ``ScenarioError`` listing every problem found."""
    problems: list[Problem] = []
    scenario = _Loader(str(path), problems, known_kind, _entrypoint_checker(check_entrypoint)).load()
    if problems or scenario is None:
        raise ScenarioError(problems or [Problem(str(path), 0, 0, "$", "cannot load this scenario")])
    return scenario


def _entrypoint_checker(given: CheckEntrypoint | None) -> CheckEntrypoint | None:
    if given is not None:
        return given
    try:
        from kamera_cli.adapters import (  # type: ignore[attr-defined, unused-ignore]  # layer 2, optional
            check_entrypoint,
        )
    except ImportError:
        return None
    return cast(CheckEntrypoint, check_entrypoint)


class _Loader(Reader):
    def __init__(
        self,
        file: str,
        problems: list[Problem],
        known_kind: KnownKind | None,
        check_entrypoint: CheckEntrypoint | None,
    ) -> None:
        super().__init__(file, problems)
        self.known_kind = known_kind
        self.check_entrypoint = check_entrypoint
        self.base_dir = str(Path(file).resolve().parent)
        self.display_dir = os.path.dirname(file)
        self.seed_items: list[Located] = []
        #: what the result should say about how the scenario was read (``Scenario.notes``)
        self.notes: list[str] = []

    # -- helpers -------------------------------------------------------------------------------
    def _kopf_module(self, value: str, path: Path_) -> None:
        """A kopf operator file must exist (its import, like an entry point's, waits for the run)."""
        if not value.endswith(".py"):
            return
        target = Path(self.base_dir) / value
        try:
            found = target.is_file()
        except OSError as exc:  # a name the file system refuses (too long, for one): a problem, not a crash
            self.add(path, f"kopf operator file {value!r} cannot be looked up: {exc.strerror or exc}")
            return
        if not found:
            self.add(path, f"kopf operator file {value!r} not found (looked for {target})",
                     "paths are relative to the scenario file's folder")

    def _reporter(self, at: Path_) -> Callable[[str, str, str], None]:
        """Reports problems at keys of the node at ``at``."""
        def report(key: str, message: str, hint: str) -> None:
            self.add((*at, key), message, hint)
        return report

    def script(self, value: str, path: Path_) -> None:
        """A program's script form names a file; nothing is imported or run to check it."""
        target = Path(value) if Path(value).is_absolute() else Path(self.base_dir) / value
        if not target.is_file():
            self.add(path, f"program script {value!r} not found (looked for {target})",
                     "paths are relative to the scenario file's folder; for a function write 'path.py:main'")

    def entrypoint(self, value: Any, path: Path_) -> None:
        if not isinstance(value, str) or self.check_entrypoint is None or not _ENTRYPOINT.match(value):
            return  # malformed ones are the schema's to report, once
        try:
            message = self.check_entrypoint(value, self.base_dir)
        except KameraError as exc:
            message = " ".join(str(exc).split())
        if message:
            self.add(path, message)

    # -- the document --------------------------------------------------------------------------
    def load(self) -> Scenario | None:
        documents = read_documents(self.file, self.file, self.problems)
        if documents is None:
            return None
        if not documents:
            self.problems.append(
                Problem(
                    self.file, 0, 0, "$", f"empty file: expected a document with apiVersion {API_VERSION}, kind {KIND}"
                )
            )
            return None
        for extra in documents[1:]:
            line, column = extra.start
            self.problems.append(
                Problem(
                    self.file, line, column, "$", "a scenario file holds exactly one document",
                    "put each scenario in its own file",
                )
            )  # fmt: skip
        self.doc = documents[0]
        data = self.doc.data
        if not isinstance(data, dict):
            self.add((), f"expected a Scenario (a mapping), got {json_type(data)}")
            return None
        if not self._dispatch(data):
            return None
        self.problems.extend(schema_problems(self.doc))
        return self._build(data)

    def _dispatch(self, data: dict[str, Any]) -> bool:
        api_version, kind = data.get("apiVersion"), data.get("kind")
        ok = True
        if api_version != API_VERSION:
            ok = False
            if api_version is None:
                self.add((), f"missing apiVersion: a scenario starts with apiVersion: {API_VERSION}")
            elif isinstance(api_version, str) and api_version.startswith("kamera.dev/"):
                self.add(("apiVersion",), f"unsupported version {api_version!r}: this kamera reads {API_VERSION}")
            else:
                self.add(("apiVersion",), f"not a kamera scenario: apiVersion {api_version!r} (expected {API_VERSION})")
        if kind != KIND:
            ok = False
            if kind is None:
                self.add((), f"missing kind: a scenario has kind: {KIND}")
            else:
                self.add(("kind",), f"unsupported kind {kind!r}: kamera reads kind {KIND}")
        return ok

    def _build(self, data: dict[str, Any]) -> Scenario | None:
        meta = _dict(data.get("metadata"))
        spec = _dict(data.get("spec"))
        sources = Sources(self.doc, self.base_dir, self.display_dir, self.problems)

        crds = self._crds(sources, spec)
        self.oracle = KindOracle([c.obj for c in crds], self.known_kind)
        for index, message in sorted(self.oracle.crd_errors.items()):
            if index < len(crds):
                self.problems.append(crds[index].problem((), f"invalid CustomResourceDefinition: {message}"))
        controllers = self._controllers(spec)
        seed = self._seed(sources, spec)
        controllers = with_process(_list(spec.get("controllers")), controllers, seed, self.base_dir,
                                   lambda path, msg, hint: self.add(path, msg, hint))
        explore = self._explore(_dict(spec.get("explore")))
        expect = _dict(spec.get("expect"))
        expectations = Expectations(
            converges=expect.get("converges", True) is not False,
            deterministic=expect.get("deterministic", True) is not False,
            controller_errors=expect.get("controllerErrors", False) is True,
        )
        invariants = self._invariants(spec)
        actions = read_actions(self, sources, spec)
        perturbations = read_perturbations(self, _dict(spec.get("perturbations")))
        cluster = parse_cluster(_dict(spec.get("cluster")), add=lambda path, msg, hint: self.add(path, msg, hint),
                                position=self.position, controller_names=self.controller_names)
        fakes = parse_fakes(spec.get("fakes"), base_dir=self.base_dir, position=self.position,
                            add=lambda path, msg, hint: self.add(path, msg, hint),
                            check_entrypoint=self.check_entrypoint, entry_packages=_entry_packages(controllers))
        if spec.get("controllers") == [] and not cluster.builtins:
            self.add(("spec", "controllers"), "no controllers to check",
                     "name at least one controller (or built-ins under spec.cluster.builtins)")
        if self.problems:
            return None
        return Scenario(
            name=_str(meta.get("name")),
            file=self.file,
            base_dir=self.base_dir,
            controllers=controllers,
            seed=seed,
            crds=tuple(c.obj for c in crds),
            notes=tuple(self.notes),
            description=_str(meta.get("description")),
            explore=explore,
            expect=expectations,
            invariants=invariants,
            actions=actions,
            perturbations=perturbations,
            cluster=cluster,
            fakes=fakes,
            positions=self._positions(spec),
            position=self.position(()),
        )

    def _positions(self, spec: dict[str, Any]) -> dict[str, Position]:
        positions = {
            "$": self.position(()),
            "$.metadata.name": self.position(("metadata", "name"), key=True),
            "$.spec.expect.converges": self.position(("spec", "expect", "converges"), key=True),
            "$.spec.expect.deterministic": self.position(("spec", "expect", "deterministic"), key=True),
            "$.spec.expect.controllerErrors": self.position(("spec", "expect", "controllerErrors"), key=True),
        }
        for section in ("controllers", "invariants", "actions", "seed", "crds"):
            positions[f"$.spec.{section}"] = self.position(("spec", section), key=True)
        for section in ("controllers", "invariants", "actions"):
            for i in range(len(_list(spec.get(section)))):
                positions[f"$.spec.{section}[{i}]"] = self.position(("spec", section, i))
        # Scenario.seed[i] -> where that object was written (possibly in a manifest file)
        for i, item in enumerate(self.seed_items):
            line, column = item.doc.at(item.path)
            positions[f"seed[{i}]"] = Position(item.doc.file, line, column)
            # each field's key, as "seed[i]:spec.template[0].name": a dropped unknown field is
            # reported where it was written, not at its object
            depth = len(item.path)
            for sub, (kline, kcolumn) in item.doc.keys.items():
                if sub[:depth] == item.path and len(sub) > depth:
                    positions[f"seed[{i}]:{_dotted(sub[depth:])}"] = Position(item.doc.file, kline, kcolumn)
        return positions

    # -- manifests -----------------------------------------------------------------------------
    def _crds(self, sources: Sources, spec: dict[str, Any]) -> list[Located]:
        crds: list[Located] = []
        for i, entry in enumerate(_list(spec.get("crds"))):
            for item in sources.resolve(entry, ("spec", "crds", i)):
                if check_manifest(item, self.problems) is None:
                    continue
                is_crd = _str(item.obj.get("apiVersion")).startswith("apiextensions.k8s.io/")
                if item.obj.get("kind") != "CustomResourceDefinition" or not is_crd:
                    item_kind = f"{item.obj.get('apiVersion')}/{item.obj.get('kind')}"
                    self.problems.append(
                        item.problem(
                            ("kind",),
                            f"spec.crds takes CustomResourceDefinitions, got {item_kind}",
                            "put other objects in spec.seed",
                        )
                    )
                    continue
                if is_v1beta1(item.obj):
                    item.obj, note = from_v1beta1(item.obj)
                    self.notes.append(item.problem((), note).render())
                crds.append(item)
        return crds

    def _seed(self, sources: Sources, spec: dict[str, Any]) -> tuple[Manifest, ...]:
        items: list[Located] = []
        for i, entry in enumerate(_list(spec.get("seed"))):
            items.extend(sources.resolve(entry, ("spec", "seed", i)))
        objects = self.objects(items)
        namespaces = set(BUILTIN_NAMESPACES)
        seen: dict[tuple[str, str, str, str], Located] = {}
        for item, obj in objects:
            ref = ObjectRef.of(obj)
            if ref.api_version == "v1" and ref.kind == "Namespace" and ref.name:
                if ref.name in BUILTIN_NAMESPACES:
                    self.problems.append(
                        item.problem(
                            ("metadata", "name"),
                            f"namespace {ref.name!r} always exists in the simulated cluster",
                            "remove it from seed",
                        )
                    )
                namespaces.add(ref.name)
            if ref.name:
                group = ref.api_version.rpartition("/")[0]
                key = (group, ref.kind, ref.namespace, ref.name)
                first = seen.get(key)
                if first is not None:
                    line = first.doc.at(first.path)[0]
                    self.problems.append(
                        item.problem(
                            ("metadata", "name"),
                            f"duplicate object {ref.kind} {ref.key}: already seeded at {first.doc.file}:{line}",
                        )
                    )
                else:
                    seen[key] = item
        for item, obj in objects:
            namespace = _str(_dict(obj.get("metadata")).get("namespace"))
            if namespace and namespace not in namespaces:
                self.problems.append(
                    item.problem(
                        ("metadata", "namespace"),
                        f"namespace {namespace!r} does not exist",
                        f"add {{apiVersion: v1, kind: Namespace, metadata: {{name: {namespace}}}}} to spec.seed",
                    )
                )
        # Namespaces first (stable otherwise), so that objects in them can be created in seed order.
        ordered = sorted(objects, key=lambda pair: pair[1].get("kind") != "Namespace")
        self.seed_items = [item for item, _ in ordered]
        return tuple(obj for _, obj in ordered)

    # -- controllers ---------------------------------------------------------------------------
    def _controllers(self, spec: dict[str, Any]) -> tuple[ControllerSpec, ...]:
        controllers: list[ControllerSpec] = []
        first_line: dict[str, int] = {}
        for i, raw in enumerate(_list(spec.get("controllers"))):
            path: Path_ = ("spec", "controllers", i)
            if not isinstance(raw, dict):
                continue
            name = _str(raw.get("name"))
            if name in first_line:
                self.add((*path, "name"), f"duplicate controller name {name!r} (first at line {first_line[name]})")
            elif name:
                first_line[name] = self.doc.at((*path, "name"))[0]
                self.controller_names.append(name)
            kopf = raw.get("kopf")
            meta = raw.get("metacontroller") if isinstance(raw.get("metacontroller"), str) else None
            manifest: str = ""
            hooks: tuple[tuple[str, str], ...] = ()
            program = raw.get("program") if isinstance(raw.get("program"), str) else None
            handler = raw.get("handler") if isinstance(raw.get("handler"), str) else None
            if isinstance(kopf, str):
                self._kopf_module(kopf, (*path, "kopf"))
            elif meta is not None:
                manifest, hooks = read_metacontroller(raw, path, self.base_dir, self.display_dir, self.doc,
                                                      self.problems, self.entrypoint)
            elif program is not None or handler is not None:
                program_key_problems(raw, self._reporter(path))
                if name:
                    self.program_names.append(name)
                if program is not None and _SCRIPT.match(program):
                    self.script(program, (*path, "program"))
                else:
                    self.entrypoint(program or handler, (*path, "program" if program is not None else "handler"))
            else:
                self.entrypoint(raw.get("entrypoint"), (*path, "entrypoint"))
            for_kind = self.kind_ref(raw.get("for"), (*path, "for"))
            owns = [self.kind_ref(v, (*path, "owns", j)) for j, v in enumerate(_list(raw.get("owns")))]
            watches: list[WatchSpec] = []
            program_kinds: list[KindRef] = []
            for j, watch in enumerate(_list(raw.get("watches"))):
                wpath: Path_ = (*path, "watches", j)
                if isinstance(watch, str):
                    if program is None and handler is None:
                        self.add(wpath, f"a plain kind ({watch!r}) in watches is for a program or a handler",
                                 "write {kind: ..., map: owner|sameName|namespace|all|module:function}")
                    found = self.kind_ref(watch, wpath)
                    if found is not None and found not in program_kinds:
                        program_kinds.append(found)
                    continue
                if program is not None or handler is not None:
                    if isinstance(watch, dict):  # anything else is the schema's to report
                        self.add(wpath, "a program or handler watches plain kinds, without a mapping",
                                 "write watches: [v1/ConfigMap, v1/Namespace]")
                    continue
                watch = _dict(watch)
                kind = self.kind_ref(watch.get("kind"), (*wpath, "kind"))
                mapper = _str(watch.get("map"))
                if mapper and mapper not in _MAPPERS:
                    self.entrypoint(mapper, (*wpath, "map"))
                if kind is not None and mapper:
                    watches.append(WatchSpec(kind, mapper, self.position(wpath)))
            timeout = self._duration(raw.get("timeout", 10.0), (*path, "timeout"), 10.0)
            every = self._duration(raw["every"], (*path, "every"), 30.0) if "every" in raw else None
            if program is not None or handler is not None:
                if name:
                    controllers.append(ControllerSpec(
                        name=name, entrypoint="", for_kind=None, program=program, handler=handler, every=every,
                        program_kinds=tuple(program_kinds), timeout=timeout, position=self.position(path),
                        env=tuple(sorted((str(k), str(v)) for k, v in _dict(raw.get("env")).items())),
                        processes_allowed=raw.get("processes") == "allowed",
                    ))
                continue
            if (for_kind is None and not isinstance(kopf, str) and not manifest) or not name \
                    or not isinstance(raw.get("entrypoint", kopf or meta), str):
                continue
            controllers.append(
                ControllerSpec(
                    name=name,
                    entrypoint=raw.get("entrypoint") or "",
                    kopf=kopf if isinstance(kopf, str) else None,
                    metacontroller=meta if manifest else None,
                    metacontroller_manifest=manifest,
                    hooks=hooks,
                    apply_strategy=str(raw.get("applyStrategy") or "dynamic-apply"),
                    ssa_field_manager=str(raw.get("ssaFieldManager") or "metacontroller"),
                    env=tuple(sorted((str(k), str(v)) for k, v in _dict(raw.get("env")).items())),
                    processes_allowed=raw.get("processes") == "allowed",
                    for_kind=for_kind,
                    owns=tuple(k for k in owns if k is not None),
                    watches=tuple(watches),
                    timeout=timeout,
                    position=self.position(path),
                )
            )
        return tuple(controllers)

    def _duration(self, value: Any, path: Path_, default: float) -> float:
        try:
            return parse_duration(value)
        except ValueError as exc:
            # report what the schema let through (a zero like "0s", an infinite number); not twice
            number = isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0
            if number or (isinstance(value, str) and _DURATION.match(value)):
                self.add(path, str(exc))
            return default

    def _explore(self, raw: dict[str, Any]) -> ExploreBounds:
        strategy = raw.get("strategy", "bfs")
        return ExploreBounds(
            max_depth=_int(raw.get("maxDepth"), 50),
            max_states=_int(raw.get("maxStates"), 100_000),
            timeout_seconds=self._duration(raw.get("timeout", 600.0), ("spec", "explore", "timeout"), 600.0),
            strategy="dfs" if strategy == "dfs" else "random" if strategy == "random" else "bfs",
            memoize=raw.get("memoize", True) is not False,
            reduction="none" if raw.get("reduction") == "none" else "persistent",
            seed=_int(raw.get("seed"), 0),
            walks=_int(raw.get("walks"), 100),
        )

    # -- invariants ----------------------------------------------------------------------------
    def _invariants(self, spec: dict[str, Any]) -> tuple[InvariantSpec, ...]:
        invariants: list[InvariantSpec] = []
        first_line: dict[str, int] = {}
        for i, raw in enumerate(_list(spec.get("invariants"))):
            path: Path_ = ("spec", "invariants", i)
            if not isinstance(raw, dict):
                continue
            before = len(self.problems)
            name = _str(raw.get("name"))
            if name in first_line:
                self.add((*path, "name"), f"duplicate invariant name {name!r} (first at line {first_line[name]})")
            elif name:
                first_line[name] = self.doc.at((*path, "name"))[0]
            for_each = raw.get("forEach")
            if isinstance(for_each, str):
                try:
                    compile_query(for_each)
                except InvariantSyntaxError as exc:
                    self.add((*path, "forEach"), exc.message, exc.hint)
                if "{{" in for_each:
                    self.add((*path, "forEach"), "forEach cannot use {{ }} templates; they belong in select")
            select = raw.get("select")
            if isinstance(select, str):
                try:
                    template = parse_template(select)
                except InvariantSyntaxError as exc:
                    self.add((*path, "select"), exc.message, exc.hint)
                else:
                    if template.refs and not isinstance(for_each, str):
                        self.add(
                            (*path, "select"),
                            f"{template.refs[0].source} needs a forEach to take values from",
                            "add forEach, or write the value into the expression",
                        )
            self._expect_templates(path, _dict(raw.get("expect")), isinstance(for_each, str))
            expect = self._expect(_dict(raw.get("expect"))) if _dict(raw.get("expect")) else None
            when = raw.get("when", "converged")
            if len(self.problems) > before or not name or not isinstance(select, str) or expect is None:
                continue
            invariant = InvariantSpec(
                name=name,
                select=select,
                expect=expect,
                when="always" if when == "always" else "converged",
                for_each=for_each if isinstance(for_each, str) else None,
                position=self.position(path),
                vacuous="allowed" if raw.get("vacuous") == "allowed" else "fail",
            )
            try:
                compile_invariant(invariant)
            except InvariantSyntaxError as exc:
                self.add(path, exc.message, exc.hint)
                continue
            invariants.append(invariant)
        return tuple(invariants)

    def _expect_templates(self, path: Path_, raw: dict[str, Any], has_for_each: bool) -> None:
        """Templates in ``expect``: evaluated in ``equals`` (with a forEach), an error anywhere else.

        Why an error rather than a literal: ``equals: "{{ @.data }}"`` compared as the text
        ``{{ @.data }}`` would fail (or pass) for a reason the reader cannot see.
        """
        if "equals" in raw:
            try:
                template = parse_value_template(raw["equals"])
            except ValueTemplateError as exc:
                self.add((*path, "expect", "equals", *exc.where), exc.message, exc.hint, key=exc.key)
            else:
                if not template.is_plain and not has_for_each:
                    where = template.strings[0].where
                    self.add((*path, "expect", "equals", *where),
                             f"{template.first.source} needs a forEach to take values from",
                             "add forEach, or write the value itself")
        for key, value in raw.items():
            if key != "equals" and isinstance(value, str) and ("{{" in value or "}}" in value):
                self.add((*path, "expect", key), f"a template in {key} is not evaluated: {value!r}",
                         "templates are evaluated in select and in equals only")

    def _expect(self, raw: dict[str, Any]) -> ExpectSpec | None:
        matches = raw.get("matches")
        if isinstance(matches, str):
            try:
                re.compile(matches)
            except re.error:
                return None  # the schema's format check has reported it
        unique = raw.get("unique")
        exists = raw.get("exists")
        return ExpectSpec(
            count=_int(raw.get("count"), -1) if "count" in raw else None,
            min=_int(raw.get("min"), -1) if "min" in raw else None,
            max=_int(raw.get("max"), -1) if "max" in raw else None,
            exists=exists if isinstance(exists, bool) else None,
            has_equals="equals" in raw,
            equals=raw.get("equals"),
            unique=unique if isinstance(unique, bool) else None,
            matches=matches if isinstance(matches, str) else None,
        )

    # -- actions -------------------------------------------------------------------------------


def _dotted(path: Path_) -> str:
    """``("spec", "ports", 0, "name")`` as ``spec.ports[0].name`` (how a dropped field is named)."""
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def _entry_packages(controllers: tuple[ControllerSpec, ...]) -> dict[str, str]:
    """The top-level package of each controller named by module (not by file), with the controller."""
    found: dict[str, str] = {}
    for c in controllers:
        for entry in (c.kopf, c.program, c.entrypoint):
            module = (entry or "").partition(":")[0]
            if module and not module.endswith(".py") and "/" not in module:
                found.setdefault(module.split(".")[0], c.name)
    return found
