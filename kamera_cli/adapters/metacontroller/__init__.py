"""metacontroller controllers: a user's CompositeController or DecoratorController manifest, its hooks in Python.

Modules: ``manifest`` (reading the manifest, located problems), ``hooks`` (calling a hook function or
the hook server's request handler in-process), ``apps`` (a hook server that is a WSGI or ASGI
application), ``apply`` (metacontroller's last-applied three-way merge), ``ssa`` (its server-side
apply strategy), ``children`` (claiming, applying and deleting children), ``sync`` (one sync of one
parent), ``controller`` (the loaded controller, its rate-limited retries).  docs/controllers.md,
"metacontroller", says what is emulated.  Imports ``sandbox`` and ``asyncio`` (ASGI hooks); no other shape.
"""

from __future__ import annotations

from kamera_cli.adapters.metacontroller.controller import MetacontrollerController, ParentView, load_metacontroller
from kamera_cli.adapters.metacontroller.manifest import HOOK_NAMES, ManifestProblem, MetaSpec, parse_manifest
from kamera_cli.adapters.metacontroller.rest import ResInfo

__all__ = ["HOOK_NAMES", "ManifestProblem", "MetaSpec", "MetacontrollerController", "ParentView", "ResInfo",
           "load_metacontroller", "parse_manifest"]
