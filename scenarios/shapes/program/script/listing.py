"""How the inventory is written: a module the script imports, as a real one would."""

from kubernetes import client


def publish(core, names):
    """Write the inventory ConfigMap listing ``names`` (created the first time)."""
    body = client.V1ConfigMap(metadata=client.V1ObjectMeta(name="inventory"), data={"pods": ",".join(sorted(names))})
    try:
        core.replace_namespaced_config_map("inventory", "shop", body)
    except client.ApiException as exc:
        if exc.status != 404:
            raise
        core.create_namespaced_config_map("shop", body)
