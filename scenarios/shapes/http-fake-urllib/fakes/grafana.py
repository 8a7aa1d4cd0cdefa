"""A Grafana-style folder API, as much of it as the operator calls: listing folders and creating one.

A function fake (``with: fakes/grafana.py:handle``): it gets each request as a
``kamera_cli.ServiceRequest`` and answers a ``ServiceResponse``.  Folders live in an ExternalStore, so
kamera explores them with the cluster: a folder created just before the operator crashed is still
there when it restarts.  A folder's uid is the service's to pick (the operator cannot know it before
asking), and a second folder with a title already taken is refused with 409 Conflict.
"""

from kamera_cli import ExternalStore, ServiceResponse

#: uid -> {"uid": ..., "title": ...}
folders = ExternalStore("grafana")


def _error(status, message):
    return ServiceResponse.of_json({"message": message}, status=status)


def handle(request):
    if request.header("authorization") != "Bearer operator-token":
        return _error(401, "Unauthorized")
    if request.path != "/api/folders":
        return _error(404, "Not found")
    existing = [folder for _, folder in folders.items()]
    if request.method == "GET":
        return sorted(existing, key=lambda folder: folder["uid"])
    if request.method == "POST":
        title = request.json()["title"]
        if any(folder["title"] == title for folder in existing):
            return _error(409, "a folder with the same name already exists")
        uid = f"folder-{len(existing) + 1}"
        folders.put(uid, {"uid": uid, "title": title})
        return {"uid": uid, "title": title}
    return _error(405, "Method not allowed")
