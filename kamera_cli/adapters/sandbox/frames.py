"""A user's traceback: the frames of their own files (and the library calls between them), paths
relative to the scenario, the causes first as Python prints them.

Why shared: a reconcile, a kopf handler and a kopf activity all fail in user code called from deep
inside a framework; a report that shows kopf's, pydantic's and kamera's frames hides the one line
the user needs (docs/controllers.md promises "only your frames").
"""

from __future__ import annotations

import os
import traceback

from kamera_cli.adapters.sandbox.calls import KAMERA_DIR
from kamera_cli.adapters.sandbox.modules import is_user_file


def _relative(filename: str, base: str) -> str:
    prefix = base.rstrip(os.sep) + os.sep
    return filename[len(prefix) :] if filename.startswith(prefix) else filename


def user_frames(
    frames: list[traceback.FrameSummary] | tuple[traceback.FrameSummary, ...], roots: tuple[str, ...], base: str
) -> list[traceback.FrameSummary]:
    """Drop kamera's frames, and library frames outside the span of the user's own frames."""
    kept = [f for f in frames if not f.filename.startswith(KAMERA_DIR)]
    user = [i for i, f in enumerate(kept) if is_user_file(f.filename, roots)]
    if user:
        kept = kept[user[0] : user[-1] + 1]
    return [traceback.FrameSummary(_relative(f.filename, base), f.lineno, f.name, line=f.line) for f in kept]


def render_frames(frames: list[traceback.FrameSummary], header: str = "Traceback (most recent call last):\n") -> str:
    if not frames:
        return ""
    return header + "".join(traceback.StackSummary.from_list(frames).format())


def user_traceback(exc: BaseException, roots: tuple[str, ...], base: str, depth: int = 0) -> str:
    frames = user_frames(traceback.extract_tb(exc.__traceback__), roots, base)
    try:
        tail = "".join(traceback.format_exception_only(type(exc), exc))
    except Exception:
        tail = f"{type(exc).__qualname__}: {safe_str(exc)}\n"
    text = render_frames(frames) + tail if frames else tail
    # the cause first, as Python prints it: "raise ... from err" hides the real error otherwise
    cause, link = exc.__cause__, "The above exception was the direct cause of the following exception:"
    if cause is None and exc.__context__ is not None and not exc.__suppress_context__:
        cause, link = exc.__context__, "During handling of the above exception, another exception occurred:"
    if cause is not None and depth < 4:
        if not frames and type(exc).__module__.startswith("kamera_cli.") and exc.__cause__ is cause:
            # kamera's own wrapper (ProgramCrashed) raised from the user's error: its message is the
            # step's headline already, and a chained copy of it under the traceback is noise
            return user_traceback(cause, roots, base, depth + 1)
        text = user_traceback(cause, roots, base, depth + 1) + f"\n{link}\n\n" + text
    return text


def safe_str(exc: BaseException) -> str:
    try:
        return str(exc)
    except Exception:
        return f"<{type(exc).__name__} with an unprintable message>"
