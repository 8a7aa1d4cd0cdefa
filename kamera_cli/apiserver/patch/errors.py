"""The one error type every patch function raises.

Why a dedicated type: the simulated API server turns it into a ``Status`` body verbatim, so it
carries exactly what a real apiserver puts there (HTTP code, reason, message, causes) and nothing
kamera-specific.  It is a ``KameraError`` so that a patch error escaping a programmatic helper is
still reported as the user's mistake, never as a crash of kamera.
"""

from __future__ import annotations

from kamera_cli.errors import ExitCode, KameraError


class PatchError(KameraError):
    """An invalid or conflicting patch; ``status``/``reason``/``message``/``causes`` form the Status."""

    exit_code = ExitCode.USAGE

    def __init__(self, status: int, reason: str, message: str,
                 causes: list[dict[str, str]] | None = None) -> None:
        self.status = status
        self.reason = reason
        self.message = message
        self.causes: list[dict[str, str]] = list(causes or [])
        super().__init__(message)

    def __repr__(self) -> str:
        return f"PatchError({self.status}, {self.reason!r}, {self.message!r}, causes={self.causes!r})"


def bad_request(message: str) -> PatchError:
    return PatchError(400, "BadRequest", message)


def invalid(message: str, causes: list[dict[str, str]] | None = None) -> PatchError:
    return PatchError(422, "Invalid", message, causes)
