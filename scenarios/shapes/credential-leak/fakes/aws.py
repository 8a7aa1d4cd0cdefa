"""A fake of the slice of AWS IAM the controller calls: access keys, kept in kamera's external store.

``boto3.client("iam")`` returns this fake while the scenario runs (see ``fakes:`` in scenario.yaml), so
the controller needs neither boto3 nor an AWS account.  The keys live in ``ExternalStore("aws")``, part
of the explored state: they fork with each branch, survive the controller's crashes as AWS would, show
in counterexamples, and invariants see them as ``$.external.aws.<AccessKeyId>``.  Identifiers are
derived from what is stored (the user and the first free number), not drawn at random: two executions
that end with the same keys then end in the same state, so kamera's determinism check compares what
matters rather than which random identifiers each branch drew.
"""

import hashlib

from kamera_cli import ExternalStore

keys = ExternalStore("aws")


class NoSuchEntity(Exception):
    """What IAM answers for a key that does not exist (botocore raises a ClientError with this code)."""


def _key_id(user, n):
    return "AKIA" + hashlib.sha256(f"{user}/{n}".encode()).hexdigest()[:16].upper()


class _IAM:
    def create_access_key(self, UserName):
        key_id = next(k for k in (_key_id(UserName, n) for n in range(1, 1000)) if k not in keys)
        keys.put(key_id, {"UserName": UserName, "Status": "Active"})
        secret = hashlib.sha256(f"secret/{key_id}".encode()).hexdigest()
        return {"AccessKey": {"UserName": UserName, "AccessKeyId": key_id, "Status": "Active",
                              "SecretAccessKey": secret}}

    def list_access_keys(self, UserName):
        return {"AccessKeyMetadata": [{"UserName": value["UserName"], "AccessKeyId": key_id, "Status": value["Status"]}
                                      for key_id, value in keys.items() if value["UserName"] == UserName]}

    def delete_access_key(self, UserName, AccessKeyId):
        if not keys.delete(AccessKeyId):
            raise NoSuchEntity(f"The Access Key with id {AccessKeyId} cannot be found.")
        return {}


def client(service_name, **kwargs):
    if service_name != "iam":
        raise ValueError(f"this fake only knows IAM, not {service_name!r}")
    return _IAM()
