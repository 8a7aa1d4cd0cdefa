"""BUG: two controllers both claim one field, each only "if it is not set yet".

Whichever reconciles first wins, so the cluster converges to two different states depending on
scheduling — in production, to whichever one happened to be faster that day.
FIX: give the field one owner (one controller decides, or each team writes its own key).
"""

from kubernetes import client, config

config.load_kube_config()
core = client.CoreV1Api()


def _claim(request, team):
    if request.name != "settings":
        return None
    cm = core.read_namespaced_config_map(request.name, request.namespace)
    if not (cm.data or {}).get("owner"):
        core.patch_namespaced_config_map(request.name, request.namespace, {"data": {"owner": team}})
    return None


def team_a(request):
    return _claim(request, "team-a")


def team_b(request):
    return _claim(request, "team-b")
