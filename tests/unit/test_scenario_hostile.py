"""Hostile and mangled scenario files are refused fast, with a location, never with a traceback.

The byte-level fuzz mutates the example scenarios (every one in ``scenarios/``, with the files they
reference beside them) and inserts the constructs that used to hurt — alias bombs, deep nesting,
bad tags, out-of-range numbers, control and non-UTF-8 bytes.  Each example must load or raise
``ScenarioError`` (exit 2) within its deadline.
"""

from __future__ import annotations

import shutil
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kamera_cli.errors import ScenarioError
from kamera_cli.scenario import load_scenario
from kamera_cli.scenario.yamldoc import MAX_DEPTH

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = sorted(p for p in (ROOT / "scenarios").rglob("scenario.yaml"))
HEADER = "apiVersion: kamera.dev/v1alpha1\nkind: Scenario\nmetadata: {name: hostile}\n"


def billion_laughs() -> str:
    text = HEADER + 'a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]\n'
    previous = "a"
    for name in "bcdefghi":
        text += f"{name}: &{name} [" + ",".join([f"*{previous}"] * 9) + "]\n"
        previous = name
    return text + "spec: {controllers: *i}\n"


def problems_of(tmp_path: Path, text: str | bytes) -> list[str]:
    path = tmp_path / "scenario.yaml"
    path.write_bytes(text if isinstance(text, bytes) else text.encode())
    started = time.monotonic()
    with pytest.raises(ScenarioError) as info:
        load_scenario(path, known_kind=lambda k: True, check_entrypoint=lambda e, b: None)
    assert time.monotonic() - started < 5
    return [p.render() for p in info.value.problems]


def test_billion_laughs_is_refused_at_the_offending_alias(tmp_path: Path) -> None:
    (problem,) = problems_of(tmp_path, billion_laughs())
    # line 10 (`g: &g [*f, ...]`) is where the expansion first passes the bound: 9^7 nodes
    assert problem.startswith(f"{tmp_path / 'scenario.yaml'}:10:8: $: ")
    assert "this alias expands the document past 1,000,000 nodes" in problem


@pytest.mark.parametrize("depth", [MAX_DEPTH + 1, 1_000, 100_000])
def test_deep_flow_nesting_is_refused(tmp_path: Path, depth: int) -> None:
    (problem,) = problems_of(tmp_path, HEADER + "spec: " + "[" * depth + "]" * depth + "\n")
    assert ":4:" in problem and ("nesting deeper than" in problem or "maximum nesting depth" in problem)


def test_deep_block_nesting_is_refused(tmp_path: Path) -> None:
    body = "".join("  " * i + "a:\n" for i in range(MAX_DEPTH + 5)) + "  " * (MAX_DEPTH + 5) + "b: 1\n"
    problems = problems_of(tmp_path, HEADER + "spec:\n" + "".join("  " + line + "\n" for line in body.splitlines()))
    assert any(f"nesting deeper than {MAX_DEPTH} levels" in p for p in problems)


def test_bad_tags_and_numbers_are_located(tmp_path: Path) -> None:
    problems = problems_of(
        tmp_path, HEADER + "spec:\n  explore: {maxStates: !!int abc, maxDepth: 99999999999999999999}\n")
    assert any(":5:" in p and "maxStates" in p and "cannot read this value" in p for p in problems)
    assert any("maxDepth" in p and "greater than the maximum" in p for p in problems)


def test_non_utf8_and_control_characters_are_located(tmp_path: Path) -> None:
    (problem,) = problems_of(tmp_path, HEADER.encode() + b"spec: {x: \"a\xff\"}\n")
    assert ":4:" in problem and "not UTF-8 text (byte 0xff" in problem
    (problem,) = problems_of(tmp_path, HEADER + "spec: {x: a\x01}\n")
    assert ":4:" in problem and "'\\x01' is not allowed" in problem


def test_a_nul_byte_is_located_by_line_and_column_in_the_scenario_and_in_a_file_it_names(tmp_path: Path) -> None:
    """Issue #28 found 'line None' for a NUL byte: every reader error says file:line:col."""
    (problem,) = problems_of(tmp_path, HEADER + "spec: {x: ab\x00}\n")
    assert problem.startswith(f"{tmp_path / 'scenario.yaml'}:4:13: ") and "'\\x00' is not allowed" in problem
    (tmp_path / "seed.yaml").write_bytes(b"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a\x00}\n")
    problems = problems_of(tmp_path, HEADER + "spec:\n  controllers: []\n  seed: [seed.yaml]\n")
    assert any(p.startswith(f"{tmp_path / 'seed.yaml'}:3:19: ") and "'\\x00' is not allowed" in p
               for p in problems), problems


def test_numbers_out_of_range_in_a_filter_and_a_duration(tmp_path: Path) -> None:
    problems = problems_of(tmp_path, HEADER + (
        "spec:\n  controllers: [{name: a, entrypoint: c.py:r, for: v1/ConfigMap}]\n  seed: []\n"
        "  explore: {timeout: 999999999999h}\n"
        "  invariants: [{name: i, select: \"$.items[?@.n == 1e400]\", expect: {exists: true}}]\n"))
    assert any("a number is out of range" in p for p in problems)
    assert any("timeout" in p and "longer than 366 days" in p for p in problems)


@pytest.mark.parametrize(("select", "hint"), [
    ("{.items[*].metadata.name}", "kubectl's JSONPath form; RFC 9535 has no braces: $.items[*].metadata.name"),
    ("$.items[?@.kind = 'Pod']", "compare with =="),
    (".items[*]", "a query must start with $ (the root): $.items[*]"),
])
def test_jsonpath_slips_get_a_hint_without_token_names(tmp_path: Path, select: str, hint: str) -> None:
    problems = problems_of(tmp_path, HEADER + (
        "spec:\n  controllers: [{name: a, entrypoint: c.py:r, for: v1/ConfigMap}]\n  seed: []\n"
        f"  invariants: [{{name: i, select: \"{select}\", expect: {{exists: true}}}}]\n"))
    text = "\n".join(problems)
    assert hint in text
    assert "TOKEN_" not in text


SNIPPETS = [b"&a [*a, *a]", b"*nope", b"!!int abc", b"1e400", b"[" * 300, b"{" * 300, b"\x00", b"\xff\xfe",
            b"!!python/object:os.system", b"<<: *a", b"'", b"\"", b"- - -", b": :", b"\t", b"%YAML 9.9\n---"]


@st.composite
def mutated(draw: st.DrawFn) -> tuple[Path, bytes]:
    example = draw(st.sampled_from(EXAMPLES))
    data = bytearray(example.read_bytes())
    for _ in range(draw(st.integers(1, 4))):
        at = draw(st.integers(0, len(data)))
        kind = draw(st.sampled_from(["delete", "insert", "snippet", "duplicate"]))
        if kind == "delete":
            del data[at: at + draw(st.integers(1, 40))]
        elif kind == "insert":
            data[at:at] = draw(st.binary(min_size=1, max_size=8))
        elif kind == "snippet":
            data[at:at] = draw(st.sampled_from(SNIPPETS))
        else:
            data[at:at] = data[at: at + draw(st.integers(1, 200))] * draw(st.integers(2, 50))
    return example, bytes(data)


@settings(max_examples=150, deadline=3000, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                     HealthCheck.too_slow])
@given(case=mutated())
def test_mutated_examples_load_or_are_refused(tmp_path_factory: pytest.TempPathFactory,
                                              case: tuple[Path, bytes]) -> None:
    example, data = case
    folder = tmp_path_factory.mktemp("fuzz") / example.parent.name
    shutil.copytree(example.parent, folder, ignore=shutil.ignore_patterns("__pycache__"))
    (folder / "scenario.yaml").write_bytes(data)
    try:
        load_scenario(folder / "scenario.yaml", check_entrypoint=lambda e, b: None)
    except ScenarioError as exc:
        assert exc.problems
        for problem in exc.problems:  # a reader's error always knows where it stopped reading
            if "invalid YAML" in problem.message or "not UTF-8" in problem.message:
                assert problem.line > 0 and problem.column > 0, problem.render()


@pytest.mark.parametrize(("selector", "said"), [
    ("abc", "selector: a selector must be a mapping"),
    ("{matchExpressions: abc}", "matchExpressions: matchExpressions must be a list"),
])
def test_a_pod_rule_selector_of_the_wrong_shape_is_located(tmp_path: Path, selector: str, said: str) -> None:
    """Found by the fuzz test above: a string where a selector belongs crashed the cluster section."""
    problems = problems_of(tmp_path, HEADER + (
        "spec:\n  cluster:\n    builtins: [kubelet]\n"
        f"    pods: {{rules: [{{selector: {selector}, outcomes: [failed]}}]}}\n"
        "  controllers: [{name: a, entrypoint: c.py:r, for: v1/ConfigMap}]\n  seed: []\n"))
    assert any(":7:" in p and said in p for p in problems), problems
