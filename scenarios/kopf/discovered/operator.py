"""A backup operator in the shape of the small real ones.

Its handlers name resources the way operator authors write them — a singular ``kind.group``, a
kubectl short name, a built-in's singular name — and its CRD has no status subresource.  kopf
resolves those names from the cluster's API discovery, and stores each handler's result in
``status.<handler id>``: on a CRD without a status subresource that is a patch of the object itself.
The update handler depends on the create handler's stored result, as real ones often do.
"""

import kopf


@kopf.on.create("backup.example.com")
def schedule(spec, **_):
    return {"schedule": spec.get("schedule", "@daily")}


@kopf.on.update("bk", field="spec.schedule")
def reschedule(status, new, **_):
    if "schedule" not in status:
        raise kopf.TemporaryError("the create handler's result is not stored yet", delay=30)
    return {"schedule": new, "was": status["schedule"]["schedule"]}


@kopf.on.create("configmap", labels={"backup.example.com/target": kopf.PRESENT})
def mark_target(patch, **_):
    patch.metadata.annotations["backup.example.com/protected"] = "true"
