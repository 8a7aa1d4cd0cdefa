"""Per-kind validation of built-ins on create and update (the kinds' strategies' ``Validate``).

Table-driven: one function per kind, looked up once per write; each follows the upstream function
named in its docstring (pkg/apis/{core,apps,batch,policy,autoscaling}/validation/validation.go).
Runs on the defaulted object, after the schema checks passed (so the types are right).
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from collections.abc import Callable, Mapping
from typing import Any

from kamera_cli.apiserver.validation import field_errors as F
from kamera_cli.apiserver.validation import networking as validation_net
from kamera_cli.apiserver.validation import rbac as validation_rbac
from kamera_cli.apiserver.validation import service as validation_service
from kamera_cli.apiserver.validation.field_errors import Cause, GoRepr
from kamera_cli.apiserver.validation.pod import validate_pod_spec, validate_statefulset_template, validate_template
from kamera_cli.apiserver.validation.pod_annotations import annotation_agreement, pod_annotations
from kamera_cli.apiserver.validation.quantity import QuantityError, value_of
from kamera_cli.model.objects import MAPPING

Obj = Mapping[str, Any]
_MAX_DATA = 1024 * 1024  # core.MaxSecretSize, also the ConfigMap limit


def _selector_matches(selector: Obj, labels: Obj) -> bool:
    """``LabelSelectorAsSelector(...).Matches``: matchLabels and the four matchExpressions operators."""
    for key, value in (selector.get("matchLabels") or {}).items():
        if labels.get(key) != value:
            return False
    for expr in selector.get("matchExpressions") or []:
        key, op, values = expr.get("key"), expr.get("operator"), expr.get("values") or []
        present = key in labels
        if (op == "In" and (not present or labels[key] not in values)) or (
                op == "NotIn" and present and labels[key] in values) or (
                op == "Exists" and not present) or (op == "DoesNotExist" and present):
            return False
    return True


def _selector_repr(selector: Obj) -> GoRepr:
    labels = selector.get("matchLabels")
    shown = F.go_value(labels) if labels else "map[string]string(nil)"
    exprs = ("[]v1.LabelSelectorRequirement(nil)" if not selector.get("matchExpressions")
             else "[]v1.LabelSelectorRequirement{...}")
    return GoRepr(f"v1.LabelSelector{{MatchLabels:{shown}, MatchExpressions:{exprs}}}")


def _workload_selector(spec: Obj, what: str, out: list[Cause]) -> Obj | None:
    """The selector rules shared by the apps kinds: required, non-empty, matching the template."""
    selector = spec.get("selector")
    if not isinstance(selector, MAPPING):
        out.append(F.required("spec.selector"))
        return None
    if not selector.get("matchLabels") and not selector.get("matchExpressions"):
        out.append(F.invalid("spec.selector", _selector_repr(selector), f"empty selector is invalid for {what}"))
        return None
    return selector


def _mapping(obj: Obj, key: str) -> Obj:
    value = obj.get(key)
    return value if isinstance(value, MAPPING) else {}


def _template_labels(spec: Obj) -> Obj:
    labels = _mapping(_mapping(spec, "template"), "metadata").get("labels")
    return labels if isinstance(labels, MAPPING) else {}


def _matches_template(selector: Obj | None, spec: Obj, out: list[Cause]) -> None:
    labels = _template_labels(spec)
    if selector is not None and not _selector_matches(selector, labels):
        out.append(F.invalid("spec.template.metadata.labels", dict(labels), "`selector` does not match template "
                                                                          "`labels`"))


_PERCENT = re.compile(r"^[0-9]+%$")


def _int_or_percent(value: Any, path: str, out: list[Cause]) -> int:
    """``ValidatePositiveIntOrPercent`` and ``IsNotMoreThan100Percent``; returns the value for the 0/0 check."""
    if isinstance(value, str):
        if not _PERCENT.match(value):
            out.append(F.invalid(path, value, "a valid percent string must be a numeric string followed by an "
                                              "ending '%' (e.g. '1%',  or '93%', regex used for validation is "
                                              "'[0-9]+%')"))
            return 1
        amount = int(value[:-1])
        if amount > 100 and path.endswith("maxUnavailable"):
            out.append(F.invalid(path, value, "must not be greater than 100%"))
        return amount
    if isinstance(value, int):
        out += F.nonnegative(path, value)
        return value
    return 1


def _intstr_repr(value: Any) -> GoRepr:
    if isinstance(value, str):
        return GoRepr(f'intstr.IntOrString{{Type:1, IntVal:0, StrVal:{json.dumps(value)}}}')
    return GoRepr(f'intstr.IntOrString{{Type:0, IntVal:{value}, StrVal:""}}')


def _rolling(rolling: Any, path: str, out: list[Cause]) -> None:
    if not isinstance(rolling, MAPPING):
        return
    unavailable = _int_or_percent(rolling.get("maxUnavailable"), f"{path}.maxUnavailable", out)
    surge = _int_or_percent(rolling.get("maxSurge"), f"{path}.maxSurge", out)
    if unavailable == 0 and surge == 0:
        out.append(F.invalid(f"{path}.maxUnavailable", _intstr_repr(rolling.get("maxUnavailable")),
                             "may not be 0 when `maxSurge` is 0"))


def _over_100(value: Any, path: str, out: list[Cause]) -> None:
    """``IsNotMoreThan100Percent`` for a field ``_int_or_percent`` does not cap itself."""
    if isinstance(value, str) and _PERCENT.match(value) and int(value[:-1]) > 100:
        out.append(F.invalid(path, value, "must not be greater than 100%"))


def _daemon_rolling(rolling: Any, path: str, out: list[Cause]) -> None:
    """``ValidateRollingUpdateDaemonSet``: int-or-percent values, neither over 100%, and exactly one of
    ``maxUnavailable`` and ``maxSurge`` non-zero (a Deployment may have both)."""
    if not isinstance(rolling, MAPPING):
        out.append(F.required(path))
        return
    unavailable = _int_or_percent(rolling.get("maxUnavailable"), f"{path}.maxUnavailable", out)
    surge = _int_or_percent(rolling.get("maxSurge"), f"{path}.maxSurge", out)
    _over_100(rolling.get("maxSurge"), f"{path}.maxSurge", out)
    if unavailable and surge:
        out.append(F.invalid(f"{path}.maxSurge", _intstr_repr(rolling.get("maxSurge")),
                             "may not be set when maxUnavailable is non-zero"))
    elif not unavailable and not surge:
        out.append(F.required(f"{path}.maxUnavailable", "cannot be 0 when maxSurge is 0"))


def _statefulset_rolling(rolling: Any, path: str, out: list[Cause]) -> None:
    """``validateRollingUpdateStatefulSet``: a non-negative partition; ``maxUnavailable``, when set, an
    int-or-percent that is not 0 and not over 100%."""
    if not isinstance(rolling, MAPPING):
        return
    out += F.nonnegative(f"{path}.partition", rolling.get("partition"))
    value = rolling.get("maxUnavailable")
    if value is not None and _int_or_percent(value, f"{path}.maxUnavailable", out) == 0:
        out.append(F.invalid(f"{path}.maxUnavailable", _intstr_repr(value), "cannot be 0"))


_RETENTION = ("Retain", "Delete")


def _templated(spec: Obj, what: str, owner: str, out: list[Cause]) -> None:
    """Selector (required, non-empty, matching the template) and the template with its owner's rules."""
    selector = _workload_selector(spec, what, out)
    _matches_template(selector, spec, out)
    out += validate_template(spec.get("template"), "spec.template", restart=("Always",), owner=owner)


def _counted(obj: Obj) -> tuple[Obj, list[Cause]]:
    """The spec of a replicated workload and the causes of its non-negative counts."""
    spec = _mapping(obj, "spec")
    out: list[Cause] = []
    for key in ("replicas", "minReadySeconds", "revisionHistoryLimit"):
        out += F.nonnegative(f"spec.{key}", spec.get(key))
    return spec, out


def _deployment(obj: Obj) -> list[Cause]:
    """``ValidateDeploymentSpec`` / ``ValidateDeploymentStrategy`` / ``ValidateRollingUpdateDeployment``."""
    spec, out = _counted(obj)
    _templated(spec, "deployment", "ReplicaSet", out)
    strategy = spec.get("strategy") or {}
    kind = strategy.get("type")
    if kind == "Recreate":
        if strategy.get("rollingUpdate") is not None:
            out.append(F.forbidden("spec.strategy.rollingUpdate", "may not be specified when strategy `type` is "
                                                                  "'Recreate'"))
    elif kind == "RollingUpdate":
        _rolling(strategy.get("rollingUpdate"), "spec.strategy.rollingUpdate", out)
    elif kind is not None:
        out.append(F.not_supported("spec.strategy", GoRepr(f'apps.DeploymentStrategy{{Type:"{kind}"}}'),
                                   ("Recreate", "RollingUpdate")))
    deadline, ready = spec.get("progressDeadlineSeconds"), spec.get("minReadySeconds") or 0
    if isinstance(deadline, int):
        out += F.nonnegative("spec.progressDeadlineSeconds", deadline)
        if deadline <= ready:
            out.append(F.invalid("spec.progressDeadlineSeconds", deadline, "must be greater than minReadySeconds"))
    return out


def _replicaset(obj: Obj) -> list[Cause]:
    """``ValidateReplicaSetSpec`` (its empty-selector message says "deployment" upstream too)."""
    spec, out = _counted(obj)
    _templated(spec, "deployment", "ReplicaSet", out)
    return out


def _replication_controller(obj: Obj) -> list[Cause]:
    """``ValidateReplicationControllerSpec``: the selector is a plain map and must match the template."""
    spec, out = _counted(obj)
    selector = spec.get("selector") or {}
    if not selector:
        out.append(F.required("spec.selector"))
    elif not _selector_matches({"matchLabels": selector}, _template_labels(spec)):
        out.append(F.invalid("spec.template.metadata.labels", dict(_template_labels(spec)),
                             "`selector` does not match template `labels`"))
    out += validate_template(spec.get("template"), "spec.template", restart=("Always",), owner="ReplicationController")
    return out


def _statefulset(obj: Obj) -> list[Cause]:
    """``ValidateStatefulSetSpec``: its template only as ``validate_statefulset_template`` says."""
    spec, out = _counted(obj)
    policy = spec.get("podManagementPolicy")
    if policy not in (None, "OrderedReady", "Parallel"):
        out.append(F.invalid("spec.podManagementPolicy", policy, "must be 'OrderedReady' or 'Parallel'"))
    strategy = spec.get("updateStrategy") or {}
    if strategy.get("type") == "OnDelete" and strategy.get("rollingUpdate") is not None:
        out.append(F.invalid("spec.updateStrategy.rollingUpdate", strategy["rollingUpdate"],
                             "only allowed for updateStrategy 'RollingUpdate'"))
    elif strategy.get("type") not in (None, "OnDelete", "RollingUpdate"):
        out.append(F.invalid("spec.updateStrategy", strategy, "must be 'RollingUpdate' or 'OnDelete'"))
    elif strategy.get("type") == "RollingUpdate":
        _statefulset_rolling(strategy.get("rollingUpdate"), "spec.updateStrategy.rollingUpdate", out)
    retention = spec.get("persistentVolumeClaimRetentionPolicy")
    for key in ("whenDeleted", "whenScaled"):  # ValidatePersistentVolumeClaimRetentionPolicy
        value = retention.get(key) if isinstance(retention, MAPPING) else "Retain"
        if value not in _RETENTION:
            out.append(F.not_supported(f"spec.persistentVolumeClaimRetentionPolicy.{key}", value or "", _RETENTION))
    out += F.nonnegative("spec.ordinals.start", _mapping(spec, "ordinals").get("start"))
    selector = _workload_selector(spec, "statefulset", out)
    _matches_template(selector, spec, out)
    out += validate_statefulset_template(spec.get("template"), "spec.template")
    return out


def _daemonset(obj: Obj) -> list[Cause]:
    """``ValidateDaemonSetSpec`` / ``ValidateDaemonSetUpdateStrategy``."""
    spec = _mapping(obj, "spec")
    out: list[Cause] = []
    out += F.nonnegative("spec.minReadySeconds", spec.get("minReadySeconds"))
    out += F.nonnegative("spec.revisionHistoryLimit", spec.get("revisionHistoryLimit"))
    _templated(spec, "daemonset", "DaemonSet", out)
    strategy = spec.get("updateStrategy") or {}
    if strategy.get("type") == "RollingUpdate":
        _daemon_rolling(strategy.get("rollingUpdate"), "spec.updateStrategy.rollingUpdate", out)
    elif strategy.get("type") not in (None, "OnDelete"):
        out.append(F.not_supported("spec.updateStrategy.type", strategy["type"], ("OnDelete", "RollingUpdate")))
    return out


def _job_spec(spec: Obj, path: str, out: list[Cause]) -> None:
    """``validateJobSpec``: counts, completion mode, the template and its restart policy."""
    for key in ("parallelism", "completions", "activeDeadlineSeconds", "backoffLimit", "ttlSecondsAfterFinished",
                "backoffLimitPerIndex", "maxFailedIndexes"):
        out += F.nonnegative(f"{path}.{key}", spec.get(key))
    mode = spec.get("completionMode")
    if mode not in (None, "NonIndexed", "Indexed"):
        out.append(F.not_supported(f"{path}.completionMode", mode, ("NonIndexed", "Indexed")))
    if mode == "Indexed" and spec.get("completions") is None:
        out.append(F.required(f"{path}.completions", "when completion mode is Indexed"))
    template = spec.get("template")
    out += validate_template(template, f"{path}.template", restart=("OnFailure", "Never", "Always"))
    policy = ((template or {}).get("spec") or {}).get("restartPolicy") if isinstance(template, MAPPING) else None
    if policy in ("Always", "", None):
        out.append(F.required(f"{path}.template.spec.restartPolicy", 'valid values: "OnFailure", "Never"'))
    elif policy not in ("OnFailure", "Never"):
        out.append(F.not_supported(f"{path}.template.spec.restartPolicy", policy, ("OnFailure", "Never")))
    elif spec.get("podFailurePolicy") is not None and policy != "Never":
        out.append(F.invalid(f"{path}.template.spec.restartPolicy", policy,
                             'only "Never" is supported when podFailurePolicy is specified'))


def _job(obj: Obj) -> list[Cause]:
    """``ValidateJob``: ``validateGeneratedSelector``, ``ValidateJobSpec``."""
    spec = _mapping(obj, "spec")
    out: list[Cause] = []
    meta = obj.get("metadata") or {}
    selector = spec.get("selector")
    if spec.get("manualSelector") is not True and isinstance(selector, MAPPING):
        labels, path = _template_labels(spec), "spec.template.metadata"
        expected = {"controller-uid": meta.get("uid", ""), "job-name": meta.get("name", ""),
                    "batch.kubernetes.io/controller-uid": meta.get("uid", ""),
                    "batch.kubernetes.io/job-name": meta.get("name", "")}
        for key, value in expected.items():
            if key not in labels:
                out.append(F.required(f"{path}.labels[{key}]"))
            elif labels[key] != value:
                out.append(F.invalid(f"{path}.labels[{key}]", labels[key], f"must be '{value}'"))
        if not _selector_matches(selector, expected):
            out.append(F.invalid("spec.selector", _selector_repr(selector), "`selector` not auto-generated"))
    _job_spec(spec, "spec", out)
    if not isinstance(selector, MAPPING):
        out.append(F.required("spec.selector"))
    else:
        _matches_template(selector, spec, out)
    return out


_DESCRIPTORS = ("@yearly", "@annually", "@monthly", "@weekly", "@daily", "@midnight", "@hourly")
_CRON_BOUNDS = ((0, 59), (0, 23), (1, 31), (1, 12), (0, 6))
_MONTHS = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")
_DAYS = ("sun", "mon", "tue", "wed", "thu", "fri", "sat")
_CRON_NAMES: tuple[dict[str, int], ...] = ({}, {}, {}, {m: i + 1 for i, m in enumerate(_MONTHS)},
                                           {d: i for i, d in enumerate(_DAYS)})


def cron_error(schedule: str) -> str | None:
    """What ``cron.ParseStandard`` (robfig/cron v3) says of a schedule, or None when it parses."""
    text = schedule.strip()
    if text.startswith("@"):
        if text in _DESCRIPTORS or (text.startswith("@every ") and re.fullmatch(r"@every ([0-9]+(ns|us|ms|s|m|h))+",
                                                                                   text)):
            return None
        return f"unrecognized descriptor: {text}"
    fields = text.split()
    if len(fields) != 5:
        return f"expected exactly 5 fields, found {len(fields)}: [{' '.join(fields)}]"
    for field, (low, high), names in zip(fields, _CRON_BOUNDS, _CRON_NAMES):
        for part in field.split(","):
            problem = _cron_range(part, low, high, names)
            if problem:
                return problem
    return None


def _cron_range(expr: str, low: int, high: int, names: Mapping[str, int]) -> str | None:
    range_part, _, step_text = expr.partition("/")
    if step_text and (not step_text.isdigit() or int(step_text) <= 0):
        return f"step of range should be a positive number: {expr}" if step_text.isdigit() else \
            f"failed to parse int from {step_text}: strconv.Atoi: parsing {json.dumps(step_text)}: invalid syntax"
    if range_part in ("*", "?"):
        return None
    bounds = range_part.split("-", 1)
    values = []
    for bound in bounds:
        number = names.get(bound.lower()) if bound.lower() in names else (int(bound) if bound.isdigit() else None)
        if number is None:
            return f"failed to parse int from {bound}: strconv.Atoi: parsing {json.dumps(bound)}: invalid syntax"
        values.append(number)
    start, end = values[0], values[-1]
    if start < low:
        return f"beginning of range ({start}) below minimum ({low}): {expr}"
    if end > high:
        return f"end of range ({end}) above maximum ({high}): {expr}"
    if start > end:
        return f"beginning of range ({start}) beyond end of range ({end}): {expr}"
    return None


def _cronjob(obj: Obj) -> list[Cause]:
    """``ValidateCronJobCreate`` / ``ValidateCronJobSpec`` / ``ValidateJobTemplateSpec``."""
    spec = _mapping(obj, "spec")
    out: list[Cause] = []
    name = str((obj.get("metadata") or {}).get("name") or "")
    if len(name) > 52:
        out.append(F.invalid("metadata.name", name, "must be no more than 52 characters"))
    schedule = spec.get("schedule") or ""
    if not schedule:
        out.append(F.required("spec.schedule"))
    elif "TZ" in schedule:
        out.append(F.invalid("spec.schedule", schedule, "cannot use TZ or CRON_TZ in schedule, use timeZone field "
                                                        "instead"))
    elif (problem := cron_error(schedule)) is not None:
        out.append(F.invalid("spec.schedule", schedule, problem))
    out += F.nonnegative("spec.startingDeadlineSeconds", spec.get("startingDeadlineSeconds"))
    policy = spec.get("concurrencyPolicy") or ""
    if not policy:
        out.append(F.required("spec.concurrencyPolicy"))
    elif policy not in ("Allow", "Forbid", "Replace"):
        out.append(F.not_supported("spec.concurrencyPolicy", policy, ("Allow", "Forbid", "Replace")))
    job = ((spec.get("jobTemplate") or {}).get("spec") or {}) if isinstance(spec.get("jobTemplate"), Mapping) else {}
    _job_spec(job, "spec.jobTemplate.spec", out)
    if job.get("selector") is not None:
        out.append(F.invalid("spec.jobTemplate.spec.selector", _selector_repr(job["selector"]),
                             "`selector` will be auto-generated"))
    return out


def _pod(obj: Obj) -> list[Cause]:
    """``ValidatePodCreate`` / ``ValidatePodSpec``."""
    spec, annotations = obj.get("spec") or {}, (obj.get("metadata") or {}).get("annotations")
    return (pod_annotations(annotations, spec, "metadata.annotations")
            + validate_pod_spec(spec, "spec", template=False) + annotation_agreement(annotations, spec, "spec"))


def _pod_template(obj: Obj) -> list[Cause]:
    """``ValidatePodTemplate``."""
    return validate_template(obj.get("template"), "template", restart=("Always", "OnFailure", "Never"))


def _config_map(obj: Obj) -> list[Cause]:
    """``ValidateConfigMap``: key syntax, no key in both maps, at most 1 MiB in all."""
    out: list[Cause] = []
    data, binary = obj.get("data") or {}, obj.get("binaryData") or {}
    for key in sorted(data):
        messages = F.config_key(key)
        if messages:
            out += F.each_invalid(f"data[{key}]", key, messages)
        if key in binary:
            out.append(F.invalid(f"data[{key}]", key, "duplicate of key present in binaryData"))
    for key in sorted(binary):
        messages = F.config_key(key)
        if messages:
            out += F.each_invalid(f"binaryData[{key}]", key, messages)
    chars = sum(len(str(v)) for v in data.values())  # UTF-8 takes at most 4 bytes a character
    size = chars if chars * 4 <= _MAX_DATA else sum(len(str(v).encode()) for v in data.values())
    size += sum(_decoded_len(v) for v in binary.values())
    if size > _MAX_DATA:
        out.append(F.too_long("", _MAX_DATA))
    return out


_B64 = re.compile(r"[^A-Za-z0-9+/=]")


def base64_offset(text: str) -> int | None:
    """Where Go's ``base64.StdEncoding`` gives up on ``text`` (``CorruptInputError``), or None if it decodes.

    Approximate in one corner: for a bad length or misplaced padding the offset is the start of the
    last, incomplete quantum (docs/apiserver.md)."""
    bad = _B64.search(text)
    if bad is not None:
        return bad.start()
    stripped = text.rstrip("=")
    if "=" in stripped:
        return stripped.index("=")
    if len(text) % 4 or len(text) - len(stripped) > 2:
        return len(text) - len(text) % 4 if len(text) % 4 else len(stripped)
    return None


def _decoded_len(value: Any) -> int:
    try:
        return len(base64.b64decode(str(value), validate=True))
    except (binascii.Error, ValueError):
        return len(str(value))


_SECRET_KEYS: dict[str, tuple[str, ...]] = {
    "kubernetes.io/dockercfg": (".dockercfg",), "kubernetes.io/dockerconfigjson": (".dockerconfigjson",),
    "kubernetes.io/ssh-auth": ("ssh-privatekey",), "kubernetes.io/tls": ("tls.crt", "tls.key"),
}


def _secret(obj: Obj) -> list[Cause]:
    """``ValidateSecret``: keys, 1 MiB, and the keys each typed secret requires."""
    out: list[Cause] = []
    data = obj.get("data") or {}
    decoded: dict[str, bytes] = {}
    for key in sorted(data):
        out += F.each_invalid(f"data[{key}]", key, F.config_key(key))
        try:
            decoded[key] = base64.b64decode(str(data[key]), validate=True)
        except (binascii.Error, ValueError):
            decoded[key] = str(data[key]).encode()
    if sum(len(v) for v in decoded.values()) > _MAX_DATA:
        out.append(F.too_long("data", _MAX_DATA))
    kind = obj.get("type") or "Opaque"
    if kind == "kubernetes.io/service-account-token":
        if not ((obj.get("metadata") or {}).get("annotations") or {}).get("kubernetes.io/service-account.name"):
            out.append(F.required("metadata.annotations[kubernetes.io/service-account.name]"))
    elif kind == "kubernetes.io/basic-auth":
        if "username" not in data and "password" not in data:
            out += [F.required("data[username]"), F.required("data[password]")]
    elif kind in _SECRET_KEYS:
        for key in _SECRET_KEYS[kind]:
            if key not in data or (kind == "kubernetes.io/ssh-auth" and not decoded.get(key)):
                out.append(F.required(f"data[{key}]"))
                if kind != "kubernetes.io/tls":
                    break
        for key in (".dockercfg", ".dockerconfigjson"):
            if key in decoded and kind in _SECRET_KEYS and key in _SECRET_KEYS[kind]:
                try:
                    json.loads(decoded[key])
                except ValueError as exc:
                    out.append(F.invalid(f"data[{key}]", "<secret contents redacted>", str(exc)))
    return out


_ACCESS_MODES = ("ReadOnlyMany", "ReadWriteMany", "ReadWriteOnce", "ReadWriteOncePod")


def _claim(obj: Obj) -> list[Cause]:
    """``ValidatePersistentVolumeClaimSpec``: access modes and a positive storage request."""
    spec = _mapping(obj, "spec")
    out: list[Cause] = []
    modes = spec.get("accessModes") or []
    if not modes:
        out.append(F.required("spec.accessModes", "at least 1 access mode is required"))
    for mode in modes:
        if mode not in _ACCESS_MODES:
            out.append(F.not_supported("spec.accessModes", mode, _ACCESS_MODES))
    requests = ((spec.get("resources") or {}).get("requests") or {})
    if "storage" not in requests:
        out.append(F.required("spec.resources[storage]"))
    else:
        try:
            if value_of(requests["storage"]) <= 0:
                out.append(F.invalid("spec.resources[storage]", requests["storage"], "must be greater than zero"))
        except QuantityError:
            pass
    return out


def _pdb(obj: Obj) -> list[Cause]:
    """``ValidatePodDisruptionBudgetSpec``: not both minAvailable and maxUnavailable."""
    spec = _mapping(obj, "spec")
    out: list[Cause] = []
    if spec.get("minAvailable") is not None and spec.get("maxUnavailable") is not None:
        out.append(F.invalid("spec", GoRepr("policy.PodDisruptionBudgetSpec{...}"),
                             "minAvailable and maxUnavailable cannot be both set"))
    for key in ("minAvailable", "maxUnavailable"):
        if spec.get(key) is not None:
            _int_or_percent(spec[key], f"spec.{key}", out)
    return out


def _hpa(obj: Obj) -> list[Cause]:
    """``validateHorizontalPodAutoscalerSpec``: minReplicas >= 1, maxReplicas >= minReplicas."""
    spec = _mapping(obj, "spec")
    out: list[Cause] = []
    low, high = spec.get("minReplicas"), spec.get("maxReplicas")
    if isinstance(low, int) and low < 1:
        out.append(F.invalid("spec.minReplicas", low, "must be greater than or equal to 1"))
    if isinstance(high, int) and high < 1:
        out.append(F.invalid("spec.maxReplicas", high, "must be greater than 0"))
    if isinstance(low, int) and isinstance(high, int) and high < low:
        out.append(F.invalid("spec.maxReplicas", high, "must be greater than or equal to `minReplicas`"))
    return out


_RULES: dict[tuple[str, str], Callable[[Obj], list[Cause]]] = {
    **{("", kind): rule for kind, rule in (("Pod", _pod), ("PodTemplate", _pod_template),
                                           ("ReplicationController", _replication_controller),
                                           ("Service", validation_service.service), ("ConfigMap", _config_map),
                                           ("Secret", _secret), ("PersistentVolumeClaim", _claim))},
    **{("apps", kind): rule for kind, rule in (("Deployment", _deployment), ("ReplicaSet", _replicaset),
                                               ("StatefulSet", _statefulset), ("DaemonSet", _daemonset))},
    ("batch", "Job"): _job, ("batch", "CronJob"): _cronjob, ("policy", "PodDisruptionBudget"): _pdb,
    ("autoscaling", "HorizontalPodAutoscaler"): _hpa,
    **{(validation_rbac.GROUP, kind): validation_rbac.binding for kind in ("RoleBinding", "ClusterRoleBinding")},
    **{(validation_rbac.GROUP, kind): validation_rbac.role for kind in ("Role", "ClusterRole")},
    ("networking.k8s.io", "Ingress"): validation_net.ingress,
    ("networking.k8s.io", "NetworkPolicy"): validation_net.network_policy,
    ("", "Namespace"): validation_net.namespace,
}


def validate_kind(group: str, kind: str, obj: Obj) -> list[Cause]:
    """The causes the kind's strategy ``Validate`` finds in a (defaulted, well-typed) object."""
    rule = _RULES.get((group, kind))
    return rule(obj) if rule is not None else []
