"""The mirror of ``../mirror/mirror.py`` as an ``async def main()`` on kubernetes_asyncio: the same watch
loop, the same bug. It acts on each event as it arrives, using what earlier events told it, so during
the initial listing it deletes the copy ``alpha/settings`` (delivered before its source
``zeta/settings``) and then recreates it.

kamera runs ``main()`` on an event loop of its own whose time is virtual; the loop blocks where its
task awaits the watch's next event, which is one step's input, as in a synchronous program.
"""

from kubernetes_asyncio import client, config, watch

SOURCE, TARGET = "zeta", "alpha"


async def main():
    await config.load_kube_config()
    async with client.ApiClient() as api:
        v1 = client.CoreV1Api(api)
        sources = {}  # name -> data, as the events told it
        async for event in watch.Watch().stream(v1.list_config_map_for_all_namespaces):
            await handle(v1, sources, event["type"], event["object"])


async def handle(v1, sources, kind, cm):
    labels = cm.metadata.labels or {}
    if cm.metadata.namespace == SOURCE and labels.get("mirror") == "true":
        if kind == "DELETED":
            sources.pop(cm.metadata.name, None)
            await delete_copy(v1, cm.metadata.name)
        else:
            sources[cm.metadata.name] = cm.data or {}
            await write_copy(v1, cm.metadata.name, cm.data or {})
    elif cm.metadata.namespace == TARGET and labels.get("mirrored-from") == SOURCE:
        if kind != "DELETED" and cm.metadata.name not in sources:
            await delete_copy(v1, cm.metadata.name)


async def write_copy(v1, name, data):
    body = client.V1ConfigMap(
        metadata=client.V1ObjectMeta(name=name, namespace=TARGET, labels={"mirrored-from": SOURCE}), data=data)
    try:
        current = await v1.read_namespaced_config_map(name, TARGET)
    except client.ApiException as exc:
        if exc.status != 404:
            raise
        await v1.create_namespaced_config_map(TARGET, body)
        return
    if current.data != data:
        current.data = data
        await v1.replace_namespaced_config_map(name, TARGET, current)


async def delete_copy(v1, name):
    try:
        await v1.delete_namespaced_config_map(name, TARGET)
    except client.ApiException as exc:
        if exc.status != 404:
            raise
