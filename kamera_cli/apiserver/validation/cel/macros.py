"""The CEL macros cel-python's evaluator lacks: the two-variable comprehensions, ``existsOne``,
``map`` with a filter, and ``sortBy``.

Why: since 1.32 the API server's base environment enables cel-go's ``ext.TwoVarComprehensions``
(``self.all(k, v, v.startsWith(k))``, ``self.transformMap(k, v, v.size())`` …), CEL's standard
macros include ``existsOne`` and the filtering ``map(x, p, f)``, and 1.34's ``ext.Lists`` adds
``sortBy``.  cel-python parses all of them (a macro is a method call with identifiers as arguments)
but only evaluates its own one-variable forms -- the rest fail with a Python error, which kamera
would report as a refusal no cluster gives.  A text rewrite cannot express them (each binds two
variables per step), so the interpreter is extended instead: a subclass of cel-python's
``Evaluator`` intercepts these method names at these arities and leaves every other call to
cel-python.

Each macro follows its cel-go expansion (ext/comprehensions.go, parser/macro.go,
ext/lists.go ``sortByMacro``) step by step, including how errors travel through the accumulator:
``all``/``exists`` stop at the first deciding value and let it absorb earlier errors (``&&``/``||``
semantics), ``existsOne`` never stops and yields the last error, the transforms keep the first error
unless a later filter fails, and ``transformMapEntry`` refuses a repeated key with cel-go's ``insert
failed: key k already exists``.  On a list the two variables are index and value, on a map key and
value.  ``macro_error`` gives the compile errors cel-go's macro expansion reports when a CRD is
written (``argument must be a simple name``, ``duplicate variable name: x``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from kamera_cli.apiserver.validation.cel.ext import equal
from kamera_cli.apiserver.validation.cel.lists import sort_by_keys

_ACCUMULATOR = "__result__"
#: (method name, argument count) -> how many of the arguments are iteration variables
_MACROS: dict[tuple[str, int], int] = {
    ("all", 3): 2, ("exists", 3): 2, ("existsOne", 3): 2, ("exists_one", 3): 2,
    ("existsOne", 2): 1, ("exists_one", 2): 1,
    ("transformList", 3): 2, ("transformList", 4): 2, ("transformMap", 3): 2, ("transformMap", 4): 2,
    ("transformMapEntry", 3): 2, ("transformMapEntry", 4): 2,
    ("map", 3): 1, ("sortBy", 2): 1,
}
#: cel-python's own one-variable macros, checked (not evaluated) here
_CHECKED: dict[tuple[str, int], int] = {("all", 2): 1, ("exists", 2): 1, ("map", 2): 1, ("filter", 2): 1}
_CLASSES: dict[str, Any] = {}


def _simple_name(tree: Any) -> str | None:
    """The identifier an argument consists of, or None when it is any other expression."""
    while getattr(tree, "data", None) != "ident":
        children: list[Any] = list(getattr(tree, "children", ()))
        if len(children) != 1:
            return None
        tree = children[0]
    return str(tree.children[0])


def _macro_calls(tree: Any) -> Iterator[Any]:
    for node in tree.iter_subtrees_topdown():
        if node.data == "member_dot_arg" and len(node.children) > 2:
            yield node


def macro_error(tree: Any) -> str | None:
    """The first macro cel-go would refuse to expand in a parsed rule, worded as cel-go's error."""
    for call in _macro_calls(tree):
        name, args = str(call.children[1]), call.children[2].children
        count = _MACROS.get((name, len(args))) or _CHECKED.get((name, len(args)))
        if count is None:
            continue
        names = [_simple_name(arg) for arg in args[:count]]
        for arg, found in zip(args, names):
            if found is None:
                simple = count == 2 or name in ("all", "exists", "existsOne", "exists_one")
                return _located(arg, "argument must be a simple name" if simple else "argument is not an identifier")
            if found == _ACCUMULATOR:
                return _located(arg, "iteration variable overwrites accumulator variable")
        if count == 2 and names[0] == names[1]:
            return _located(args[1], f"duplicate variable name: {names[1]}")
    return None


def _located(tree: Any, message: str) -> str:
    meta = getattr(tree, "meta", None)
    line, column = getattr(meta, "line", None), getattr(meta, "column", None)
    return f"ERROR: <input>:{line}:{column}: {message}" if line is not None else f"ERROR: {message}"


def environment(celpy: Any) -> Any:
    """A cel-python environment whose programs evaluate these macros."""
    return celpy.Environment(runner_class=_runner(celpy))


def _runner(celpy: Any) -> Any:
    cls = _CLASSES.get("runner")
    if cls is None:
        evaluator = _evaluator(celpy)

        class Runner(celpy.InterpretedRunner):  # type: ignore[misc]
            def evaluate(self, context: Any) -> Any:
                return evaluator(ast=self.ast, activation=self.new_activation()).evaluate(context)

        cls = _CLASSES["runner"] = Runner
    return cls


def _evaluator(celpy: Any) -> Any:
    t, fail = celpy.celtypes, celpy.CELEvalError
    steps = _Steps(celpy)

    class Evaluator(celpy.evaluation.Evaluator):  # type: ignore[misc]
        """cel-python's interpreter with the macros above; nested bodies use this class too."""

        def sub_evaluator(self, ast: Any) -> Any:
            return Evaluator(ast, activation=self.activation)

        def member_dot_arg(self, tree: Any) -> Any:
            name = str(tree.children[1])
            args = tree.children[2].children if len(tree.children) > 2 else []
            count = _MACROS.get((name, len(args)))
            if count is None:
                return super().member_dot_arg(tree)
            target = self.visit(tree.children[0])
            if isinstance(target, fail):
                return target
            names = [_simple_name(arg) for arg in args[:count]]
            if None in names:  # refused when the CRD is written (``macro_error``)
                return fail("argument must be a simple name")
            bodies = [self.sub_evaluator(arg) for arg in args[count:]]

            def run(body: Any, *values: Any) -> Any:
                try:
                    return body.evaluate(dict(zip(names, values)))
                except fail as exc:
                    return exc

            if isinstance(target, t.MapType):
                pairs = list(target.items()) if count == 2 else [(k,) for k in target]
            elif isinstance(target, t.ListType):
                pairs = [(t.IntType(i), v) for i, v in enumerate(target)] if count == 2 else [(v,) for v in target]
            else:
                return fail("no such overload")
            return steps.run(name, pairs, [lambda *v, b=b: run(b, *v) for b in bodies])

    return Evaluator


class _Steps:
    """The accumulator steps of each macro's cel-go expansion."""

    def __init__(self, celpy: Any) -> None:
        self.celpy = celpy
        self.t, self.fail = celpy.celtypes, celpy.CELEvalError

    def run(self, name: str, pairs: list[tuple[Any, ...]], bodies: list[Callable[..., Any]]) -> Any:
        if name in ("all", "exists"):
            return self.quantifier(name == "all", pairs, bodies[0])
        if name in ("existsOne", "exists_one"):
            return self.exists_one(pairs, bodies[0])
        if name == "sortBy":
            keys = self.transform(pairs, None, bodies[0], self.append, self.t.ListType([]))
            return keys if isinstance(keys, self.fail) else self.sorted(pairs, keys)
        filter_, transform = (bodies[0], bodies[1]) if len(bodies) == 2 else (None, bodies[0])
        if name in ("transformList", "map"):
            return self.transform(pairs, filter_, transform, self.append, self.t.ListType([]))
        step = self.insert_value if name == "transformMap" else self.insert_entry
        return self.transform(pairs, filter_, transform, step, self.t.MapType({}))

    def is_bool(self, value: Any, which: bool) -> bool:
        return isinstance(value, self.t.BoolType) and bool(value) is which

    def quantifier(self, conjunction: bool, pairs: list[tuple[Any, ...]], body: Callable[..., Any]) -> Any:
        """``all`` (``accu && p`` while accu is not false) and ``exists`` (``accu || p`` while not true),
        with cel-go's ``&&``/``||``: a deciding value wins over errors, else the first error stays."""
        decided = not conjunction
        accu: Any = self.t.BoolType(conjunction)
        for pair in pairs:
            if self.is_bool(accu, decided):
                break
            value = body(*pair)
            if self.is_bool(value, decided):
                accu = self.t.BoolType(decided)
            elif not isinstance(accu, self.fail):
                if isinstance(value, self.fail):
                    accu = value
                elif not isinstance(value, self.t.BoolType):
                    accu = self.fail("no such overload")
        return accu

    def exists_one(self, pairs: list[tuple[Any, ...]], body: Callable[..., Any]) -> Any:
        """``p ? accu + 1 : accu`` over every element, then ``accu == 1``: a failing predicate replaces
        the count by its error, which later steps keep unless another predicate fails."""
        accu: Any = 0
        for pair in pairs:
            value = body(*pair)
            if isinstance(value, self.fail):
                accu = value
            elif not isinstance(value, self.t.BoolType):
                accu = self.fail("no such overload")
            elif value and not isinstance(accu, self.fail):
                accu += 1
        return accu if isinstance(accu, self.fail) else self.t.BoolType(accu == 1)

    def transform(self, pairs: list[tuple[Any, ...]], filter_: Callable[..., Any] | None,
                  transform: Callable[..., Any], step: Callable[[Any, tuple[Any, ...], Any], Any], accu: Any) -> Any:
        """``filter ? step(accu, transform) : accu``: an error in the filter replaces the accumulator,
        one in the step is kept (the accumulator is the step's first argument)."""
        for pair in pairs:
            if filter_ is not None:
                keep = filter_(*pair)
                if isinstance(keep, self.fail) or not isinstance(keep, self.t.BoolType):
                    accu = keep if isinstance(keep, self.fail) else self.fail("no such overload")
                    continue
                if not keep:
                    continue
            if isinstance(accu, self.fail):
                continue
            value = transform(*pair)
            accu = value if isinstance(value, self.fail) else step(accu, pair, value)
        return accu

    def append(self, accu: Any, _pair: tuple[Any, ...], value: Any) -> Any:
        return self.t.ListType([*accu, value])

    def insert_value(self, accu: Any, pair: tuple[Any, ...], value: Any) -> Any:
        return self.insert(accu, {pair[0]: value})

    def insert_entry(self, accu: Any, _pair: tuple[Any, ...], value: Any) -> Any:
        if not isinstance(value, self.t.MapType):
            return self.fail("no such overload")
        return self.insert(accu, value)

    def insert(self, accu: Any, entries: Any) -> Any:
        """``cel.@mapInsert``: keys equal by CEL equality (``1`` and ``1u``) collide."""
        out = dict(accu)
        for key, value in entries.items():
            if any(equal(key, seen) for seen in out):
                text = str(key).lower() if isinstance(key, self.t.BoolType) else str(key)
                return self.fail(f"insert failed: key {text} already exists")
            out[key] = value
        return self.t.MapType(out)

    def sorted(self, pairs: list[tuple[Any, ...]], keys: Any) -> Any:
        try:
            return sort_by_keys(self.celpy, [pair[0] for pair in pairs], list(keys))
        except self.fail as exc:
            return exc
