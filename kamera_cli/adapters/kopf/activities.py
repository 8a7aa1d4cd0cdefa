"""What a kopf operator does before it processes its first event: connect, scan the API, start up.

Why a module of its own: kopf's reactor (``kopf/_core/reactor/running.py``, ``spawn_tasks``) does
three things before any watch starts, and each shapes every later step.  It logs in (the
``@kopf.on.login`` activity fills the credentials vault), it scans the cluster's API discovery for
the resources its handlers select (``kopf/_cogs/clients/scanning.py``, ``scan_resources``: whether a
resource has a ``status`` subresource decides where kopf patches handler results, and its singular
name, short names and categories decide which handlers select it), and it runs the
``@kopf.on.startup`` activity (``startup_cleanup_activities``) whose handlers pick settings.  kamera
does the same against the simulated API server instead of assuming answers.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any

from kamera_cli.adapters.asyncio.loop import run_async

__all__ = ["connected", "scan"]


@contextlib.asynccontextmanager
async def connected(host: str) -> AsyncIterator[None]:
    """kopf's API client bound to the simulated cluster for the duration of the block.

    kopf's client takes its connection from the vault in ``auth.vault_var``; one fresh aiohttp session
    (routed in-process by the containment) per block, as a step is a run of its own.
    """
    import aiohttp
    from kopf._cogs.clients import auth
    from kopf._cogs.structs import credentials

    session = aiohttp.ClientSession()
    try:
        vault = credentials.Vault()
        await vault.populate({"kamera": credentials.AiohttpSession(
            aiohttp_session=session, server=host, default_namespace="default")})
        auth.vault_var.set(vault)
        yield
    finally:
        await session.close()


def scan(host: str, settings: Any, logger: Any) -> dict[tuple[str, str, str], Any]:
    """Every resource the simulated API server serves, as kopf sees it: kopf's own ``scan_resources``
    over ``/api`` and ``/apis`` (``kopf/_cogs/clients/scanning.py``), keyed by (group, version, plural).

    The resources carry what discovery publishes — ``status`` among the subresources only where the
    kind (or CRD version) has one, the singular name, short names and categories — so kopf's selectors
    (``Selector.check``) and its patching (``patching.patch_obj``) behave as against a cluster.
    """
    from kopf._cogs.clients import scanning

    async def run() -> Any:
        async with connected(host):
            return await scanning.scan_resources(settings=settings, logger=logger)

    return {(r.group, r.version, r.plural): r for r in run_async(run())}
