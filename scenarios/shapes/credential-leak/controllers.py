"""BUG: an access key minted in the cloud before anything in the cluster records it.

Each Namespace labelled ``credentials: "true"`` gets an IAM access key, stored in a Secret. ``buggy``
mints the key, then creates the Secret. If the controller crashes between the two, the key exists in
AWS but nowhere in the cluster: the restarted controller sees no Secret and mints another one. The
first key is leaked — live, never rotated, never deleted. Nothing in the cluster shows it; the fake's
state does (``$.external.aws``), and the invariant counts the keys per namespace.
FIX (``fixed``): before minting, delete the user's keys that no Secret records (a crash's leftovers).
"""

import boto3
from kubernetes import client, config
from kubernetes.client.rest import ApiException

config.load_kube_config()
core = client.CoreV1Api()
iam = boto3.client("iam")
SECRET = "aws-credentials"


def _wants_credentials(name):
    ns = core.read_namespace(name)
    return (ns.metadata.labels or {}).get("credentials") == "true" and not ns.metadata.deletion_timestamp


def _has_secret(name):
    try:
        core.read_namespaced_secret(SECRET, name)
        return True
    except ApiException as exc:
        if exc.status != 404:
            raise
        return False


def _store(name, key):
    core.create_namespaced_secret(name, client.V1Secret(
        metadata=client.V1ObjectMeta(name=SECRET),
        string_data={"AWS_ACCESS_KEY_ID": key["AccessKeyId"], "AWS_SECRET_ACCESS_KEY": key["SecretAccessKey"]}))


def buggy(request):
    if not _wants_credentials(request.name) or _has_secret(request.name):
        return None
    key = iam.create_access_key(UserName=request.name)["AccessKey"]
    _store(request.name, key)
    return None


def fixed(request):
    if not _wants_credentials(request.name) or _has_secret(request.name):
        return None
    # no Secret records a key of this user, so any key it has was minted by a run that crashed
    for stale in iam.list_access_keys(UserName=request.name)["AccessKeyMetadata"]:
        iam.delete_access_key(UserName=request.name, AccessKeyId=stale["AccessKeyId"])
    key = iam.create_access_key(UserName=request.name)["AccessKey"]
    _store(request.name, key)
    return None
