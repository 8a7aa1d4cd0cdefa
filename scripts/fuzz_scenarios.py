"""A fuzz campaign over scenario files: mutated examples must load or be refused, never crash or hang.

Run: python scripts/fuzz_scenarios.py [--cases 2000] [--cli 100] [--seed 1]

Mutates every example under scenarios/ (deletions, random bytes, duplicated runs, hostile snippets:
alias bombs, deep nesting, bad tags, 1e400, NUL and non-UTF-8 bytes) and loads each result in this
process (``load_scenario``, entry points checked without importing them), counting outcomes; then
runs ``--cli`` of them through the real ``kamera validate`` and counts exit codes. Any crash or hang
is printed with the case that caused it. The suite runs a bounded version of this
(tests/unit/test_scenario_hostile.py).
"""

from __future__ import annotations

import argparse
import collections
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import traceback
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from kamera_cli.errors import ScenarioError  # noqa: E402
from kamera_cli.scenario import load_scenario  # noqa: E402

SNIPPETS = [b"&a [*a, *a]", b"*nope", b"!!int abc", b"1e400", b"[" * 300, b"{" * 300, b"\x00", b"\xff\xfe",
            b"!!python/object:os.system", b"<<: *a", b"'", b'"', b"- - -", b": :", b"\t", b"%YAML 9.9\n---",
            b"&x [" + b"*x," * 50 + b"]", b"99999999999999999999999999", b"-1", b"$.items[?@.a = 1]", b"{{ @ }}"]


def mutate(rng: random.Random, data: bytes) -> bytes:
    out = bytearray(data)
    for _ in range(rng.randint(1, 4)):
        at = rng.randint(0, len(out))
        kind = rng.choice(["delete", "insert", "snippet", "duplicate"])
        if kind == "delete":
            del out[at: at + rng.randint(1, 40)]
        elif kind == "insert":
            out[at:at] = bytes(rng.randrange(256) for _ in range(rng.randint(1, 8)))
        elif kind == "snippet":
            out[at:at] = rng.choice(SNIPPETS)
        else:
            out[at:at] = out[at: at + rng.randint(1, 200)] * rng.randint(2, 50)
    return bytes(out)


class Hang(Exception):
    pass


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--cases", type=int, default=2000)
    parser.add_argument("--cli", type=int, default=100)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    examples = sorted((ROOT / "scenarios").rglob("scenario.yaml"))
    outcomes: collections.Counter[str] = collections.Counter()
    slowest = 0.0

    def alarm(*_: object) -> None:
        raise Hang

    signal.signal(signal.SIGALRM, alarm)
    with tempfile.TemporaryDirectory() as tmp:
        cli_cases: list[Path] = []
        for i in range(args.cases):
            example = rng.choice(examples)
            folder = Path(tmp) / f"case{i}"
            shutil.copytree(example.parent, folder, ignore=shutil.ignore_patterns("__pycache__"))
            target = folder / "scenario.yaml"
            target.write_bytes(mutate(rng, example.read_bytes()))
            started = time.monotonic()
            signal.alarm(10)
            try:
                load_scenario(target, check_entrypoint=lambda e, b: None)
                outcomes["loaded"] += 1
            except ScenarioError:
                outcomes["refused (exit 2)"] += 1
            except Hang:
                outcomes["HANG"] += 1
                print(f"hang: case {i} from {example}", file=sys.stderr)
            except Exception:
                outcomes["CRASH"] += 1
                print(f"crash: case {i} from {example}\n{traceback.format_exc()}", file=sys.stderr)
            finally:
                signal.alarm(0)
            slowest = max(slowest, time.monotonic() - started)
            if len(cli_cases) < args.cli:
                cli_cases.append(target)
            else:
                shutil.rmtree(folder)
        codes: collections.Counter[int | str] = collections.Counter()
        for target in cli_cases:
            try:
                proc = subprocess.run([sys.executable, "-m", "kamera_cli", "validate", str(target)],
                                      capture_output=True, timeout=30)
                codes[proc.returncode] += 1
            except subprocess.TimeoutExpired:
                codes["hang"] += 1
    print(f"in-process: {args.cases} cases: " + ", ".join(f"{k} {v}" for k, v in sorted(outcomes.items()))
          + f"; slowest {slowest * 1000:.0f} ms")
    print(f"kamera validate: {len(cli_cases)} cases: exit codes "
          + ", ".join(f"{k}: {v}" for k, v in sorted(codes.items(), key=str)))


if __name__ == "__main__":
    main()
