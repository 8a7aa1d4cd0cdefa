"""Pod-spec settings about the node a pod runs on: DNS, host aliases, OS, sysctls and the security
options beyond ids and seccomp (``validation/pod_fields.py`` has those).

Why: these are the fields operators copy from examples and get subtly wrong -- ``dnsPolicy: None``
without nameservers, a host alias with a hostname where the IP goes, Windows options on a Linux pod,
``procMount: Unmasked`` without a user namespace -- and a real server refuses each one.

Each check follows pkg/apis/core/validation/validation.go as of 1.33: ``validatePodDNSConfig`` (with
``RelaxedDNSSearchValidation`` on, its default since 1.33), ``validateReadinessGates``,
``validateSchedulingGates``, ``ValidateHostAliases``, ``ValidatePreemptionPolicy``, ``validateHostUsers``,
``validateWindowsHostProcessPod``, ``validateOS`` /
``validateLinux`` / ``validateWindows``, the sysctl, fsGroupChangePolicy, supplementalGroupsPolicy,
seLinuxChangePolicy, AppArmor and Windows parts of ``validatePodSpecSecurityContext`` and
``ValidateSecurityContext`` (``ValidateProcMountType``, ``validateWindowsSecurityContextOptions``,
``ValidateAppArmorProfileField``), and ``ValidatePodCreate``'s / ``ValidatePodTemplateSpec``'s
refusal of ephemeral containers.  Every check looks only at keys the spec has, so a plain spec pays
a handful of dict lookups.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import Any

from kamera_cli.apiserver.validation import field_errors as F
from kamera_cli.apiserver.validation.field_errors import Cause
from kamera_cli.model.objects import MAPPING

Obj = Mapping[str, Any]
_UNDERSCORE_LABEL = "_?[a-z0-9]([-_a-z0-9]*[a-z0-9])?"
_UNDERSCORE_FMT = f"{_UNDERSCORE_LABEL}(\\.{_UNDERSCORE_LABEL})*"
_UNDERSCORE_RE = re.compile(f"^{_UNDERSCORE_FMT}$")
_UNDERSCORE_MSG = ("a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '_', '-' or "
                   f"'.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for "
                   f"validation is '{_UNDERSCORE_FMT}')")
_SYSCTL_SEGMENT = "[a-z0-9]([-_a-z0-9]*[a-z0-9])?"
_SYSCTL_SOURCE = f"^({_SYSCTL_SEGMENT}[\\./])*{_SYSCTL_SEGMENT}$"
_SYSCTL_RE = re.compile(_SYSCTL_SOURCE)
_IPC_PREFIXES = ("kernel.shm", "kernel.msg", "fs.mqueue.")
_WINDOWS_FORBIDDEN_POD = (  # validateWindows: (where the field lives, key, path under the spec)
    ("ctx", "appArmorProfile", "securityContext.appArmorProfile"),
    ("ctx", "seLinuxOptions", "securityContext.seLinuxOptions"), ("spec", "hostUsers", "hostUsers"),
    ("spec", "hostPID", "hostPID"), ("spec", "hostIPC", "hostIPC"),
    ("ctx", "seccompProfile", "securityContext.seccompProfile"), ("ctx", "fsGroup", "securityContext.fsGroup"),
    ("ctx", "fsGroupChangePolicy", "securityContext.fsGroupChangePolicy"),
    ("ctx", "sysctls", "securityContext.sysctls"), ("spec", "shareProcessNamespace", "shareProcessNamespace"),
    ("ctx", "runAsUser", "securityContext.runAsUser"), ("ctx", "runAsGroup", "securityContext.runAsGroup"),
    ("ctx", "supplementalGroups", "securityContext.supplementalGroups"),
    ("ctx", "supplementalGroupsPolicy", "securityContext.supplementalGroupsPolicy"),
    ("ctx", "seLinuxChangePolicy", "securityContext.seLinuxChangePolicy"),
)
_WINDOWS_FORBIDDEN_CONTAINER = ("appArmorProfile", "seLinuxOptions", "seccompProfile", "capabilities",
                                "readOnlyRootFilesystem", "privileged", "allowPrivilegeEscalation", "procMount",
                                "runAsUser", "runAsGroup")




def _set(container: Obj, key: str) -> bool:
    """A pointer field is set (present and not null); slices count when non-empty."""
    value = container.get(key)
    return bool(value) if isinstance(value, list) else value is not None


def _containers(spec: Obj, path: str) -> Iterator[tuple[str, Obj]]:
    """``podshelper.VisitContainersWithPath``: init containers, containers, ephemeral containers."""
    for key in ("initContainers", "containers", "ephemeralContainers"):
        yield from F.items(spec.get(key), f"{path}.{key}")


_KEYS = frozenset({"ephemeralContainers", "dnsConfig", "readinessGates", "schedulingGates", "hostAliases",
                   "preemptionPolicy", "hostUsers", "os"})


def _plain(spec: Obj) -> bool:
    """Whether none of the checked settings is present: most specs, answered in a few lookups."""
    if not _KEYS.isdisjoint(spec) or spec.get("securityContext") or spec.get("dnsPolicy") == "None":
        return False
    return not any(isinstance(c, dict) and c.get("securityContext")
                   for key in ("initContainers", "containers") for c in spec.get(key) or ())


def validate_pod_host(spec: Obj, path: str, *, template: bool) -> list[Cause]:
    """The checks of the module docstring for one pod spec (``template``: inside a pod template)."""
    if _plain(spec):
        return []
    out: list[Cause] = []
    if spec.get("ephemeralContainers"):
        out.append(F.forbidden(f"{path}.ephemeralContainers", "ephemeral containers not allowed in pod template"
                               if template else "cannot be set on create"))
    context = spec.get("securityContext")
    if isinstance(context, MAPPING) and context:
        out += _pod_context(spec, context, f"{path}.securityContext")
    host_users = spec.get("hostUsers") is not False
    for here, container in _containers(spec, path):
        sc = container.get("securityContext")
        if isinstance(sc, MAPPING) and sc:
            out += _container_context(sc, f"{here}.securityContext", host_users)
    if "dnsConfig" in spec or spec.get("dnsPolicy") == "None":
        out += _dns_config(spec.get("dnsConfig"), spec.get("dnsPolicy"), f"{path}.dnsConfig")
    for i, gate in enumerate(spec.get("readinessGates") or ()):
        if isinstance(gate, MAPPING):
            here = f"{path}.readinessGates[{i}].conditionType"
            value = str(gate.get("conditionType") or "")
            out += F.each_invalid(here, value, F.qualified_name(value))
    seen: set[str] = set()
    for i, gate in enumerate(spec.get("schedulingGates") or ()):
        if isinstance(gate, MAPPING):
            name = str(gate.get("name") or "")
            out += F.each_invalid(f"{path}.schedulingGates[{i}]", name, F.qualified_name(name))
            if name in seen:
                out.append(F.duplicate(f"{path}.schedulingGates[{i}]", name))
            seen.add(name)
    for i, alias in enumerate(spec.get("hostAliases") or ()):
        if isinstance(alias, MAPPING):
            here = f"{path}.hostAliases[{i}]"
            if not F.is_ip(alias.get("ip") or ""):
                out.append(F.invalid(f"{here}.ip", alias.get("ip") or "", F.IP_MSG))
            for j, host in enumerate(alias.get("hostnames") or ()):
                out += F.each_invalid(f"{here}.hostnames[{j}]", host, F.dns1123_subdomain(str(host)))
    preemption = spec.get("preemptionPolicy")
    if preemption is not None and preemption not in ("PreemptLowerPriority", "Never"):
        out.append(F.not_supported(f"{path}.preemptionPolicy", preemption, ("PreemptLowerPriority", "Never"))
                   if preemption else F.required(f"{path}.preemptionPolicy"))
    out += _host_process(spec, path)
    if spec.get("hostUsers") is False:  # validateHostUsers: no host namespaces beside a user namespace
        out += [F.forbidden(f"{path}.{at}", "when `pod.Spec.HostUsers` is false")
                for key, at in (("hostNetwork", "hostNetwork"), ("hostPID", "HostPID"), ("hostIPC", "HostIPC"))
                if spec.get(key) is True]  # upstream's paths really are capitalised for the last two
    if isinstance(spec.get("os"), Mapping):
        out += _os(spec, path)
    return out


def _host_process(spec: Obj, path: str) -> list[Cause]:
    """``validateWindowsHostProcessPod``: a container's ``hostProcess`` agrees with the pod's, host-process
    containers are all or none of them, and they need ``hostNetwork``."""
    context = spec.get("securityContext")
    pod_options = context.get("windowsOptions") if isinstance(context, MAPPING) else None
    pod_value = pod_options.get("hostProcess") if isinstance(pod_options, MAPPING) else None
    out: list[Cause] = []
    count = host_process = 0
    for here, c in _containers(spec, path):
        count += 1
        sc = c.get("securityContext")
        options = sc.get("windowsOptions") if isinstance(sc, MAPPING) else None
        value = options.get("hostProcess") if isinstance(options, MAPPING) else None
        if pod_value is not None and value is not None and pod_value != value:
            out.append(F.invalid(f"{here}.securityContext.windowsOptions.hostProcess", value,
                                 f"pod hostProcess value must be identical if both are specified, was "
                                 f"{'true' if pod_value else 'false'}"))
        if value is True or (value is None and pod_value is True):
            host_process += 1
    if host_process:
        if host_process != count:
            out.append(F.invalid(path, "", "If pod contains any hostProcess containers then all containers must be "
                                           "HostProcess containers"))
        if not spec.get("hostNetwork"):
            out.append(F.invalid(f"{path}.hostNetwork", False,
                                 "hostNetwork must be true if pod contains any hostProcess containers"))
    return out


def _dns_config(config: Any, policy: Any, path: str) -> list[Cause]:
    """``validatePodDNSConfig``: ``None`` needs a config with a nameserver; at most 3 valid nameservers,
    32 search domains in 2048 characters (relaxed: underscores allowed, ``.`` alone accepted), named
    options."""
    if policy == "None":
        if not isinstance(config, MAPPING):
            return [F.required(path, "must provide `dnsConfig` when `dnsPolicy` is None")]
        if not config.get("nameservers"):
            return [F.required(f"{path}.nameservers", "must provide at least one DNS nameserver when `dnsPolicy` "
                                                      "is None")]
    if not isinstance(config, MAPPING):
        return []
    out: list[Cause] = []
    servers = config.get("nameservers") or []
    if len(servers) > 3:
        out.append(F.invalid(f"{path}.nameservers", servers, "must not have more than 3 nameservers"))
    out += [F.invalid(f"{path}.nameservers[{i}]", ns, F.IP_MSG) for i, ns in enumerate(servers) if not F.is_ip(ns)]
    searches = [str(s) for s in config.get("searches") or []]
    if len(searches) > 32:
        out.append(F.invalid(f"{path}.searches", searches, "must not have more than 32 search paths"))
    if len(" ".join(searches)) > 2048:
        out.append(F.invalid(f"{path}.searches", searches,
                             "must not have more than 2048 characters (including spaces) in the search list"))
    for i, search in enumerate(searches):
        if search == ".":
            continue
        name = search.removesuffix(".")
        messages = ["must be no more than 253 characters"] if len(name) > 253 else []
        if not _UNDERSCORE_RE.match(name):
            messages.append(_UNDERSCORE_MSG)
        out += F.each_invalid(f"{path}.searches[{i}]", name, messages)
    for i, option in enumerate(config.get("options") or ()):
        if isinstance(option, MAPPING) and not option.get("name"):
            out.append(F.required(f"{path}.options[{i}]", "must not be empty"))
    return out


def _sysctl_namespace(name: str) -> str:
    """``utilsysctl.GetNamespace`` for the two namespaces a pod may share with the host."""
    if "/" in name.split(".")[0]:  # NormalizeName: a slash-separated name swaps its separators
        name = name.translate(str.maketrans("./", "/."))
    if name.startswith("net."):
        return "net"
    if name == "kernel.sem" or name.startswith(_IPC_PREFIXES):
        return "ipc"
    return ""


def _pod_context(spec: Obj, context: Obj, here: str) -> list[Cause]:
    """The parts of ``validatePodSpecSecurityContext`` ``pod_security`` does not cover."""
    out: list[Cause] = []
    names: set[str] = set()
    for i, sysctl in enumerate(context.get("sysctls") or ()):
        if not isinstance(sysctl, MAPPING):
            continue
        name, at = str(sysctl.get("name") or ""), f"{here}.sysctls[{i}].name"
        if not name:
            out.append(F.required(at))
        elif len(name) > 253 or not _SYSCTL_RE.match(name):
            out.append(F.invalid(at, name, f"must have at most 253 characters and match regex {_SYSCTL_SOURCE}"))
        elif name in names:
            out.append(F.duplicate(at, name))
        namespace = _sysctl_namespace(name)
        if spec.get("hostNetwork") and namespace == "net":
            out.append(F.invalid(at, name, "may not be specified when 'hostNetwork' is true"))
        elif spec.get("hostIPC") and namespace == "ipc":
            out.append(F.invalid(at, name, "may not be specified when 'hostIPC' is true"))
        names.add(name)
    for key, values in (("fsGroupChangePolicy", ("Always", "OnRootMismatch")),
                        ("supplementalGroupsPolicy", ("Merge", "Strict")),
                        ("seLinuxChangePolicy", ("MountOption", "Recursive"))):
        value = context.get(key)
        if value is not None and value not in values:
            out.append(F.not_supported(f"{here}.{key}", value, values))
    if isinstance(context.get("windowsOptions"), Mapping):
        out += _windows_options(context["windowsOptions"], f"{here}.windowsOptions")
    if isinstance(context.get("appArmorProfile"), Mapping):
        out += _app_armor(context["appArmorProfile"], f"{here}.appArmorProfile")
    return out


def _container_context(sc: Obj, here: str, host_users: bool) -> list[Cause]:
    """The parts of ``ValidateSecurityContext`` ``container_security`` does not cover."""
    out: list[Cause] = []
    proc = sc.get("procMount")
    if proc is not None:
        if proc not in ("Default", "Unmasked"):
            out.append(F.not_supported(f"{here}.procMount", proc, ("Default", "Unmasked")))
        if host_users and proc == "Unmasked":
            out.append(F.invalid(f"{here}.procMount", proc, "`hostUsers` must be false to use `Unmasked`"))
    if isinstance(sc.get("windowsOptions"), Mapping):
        out += _windows_options(sc["windowsOptions"], f"{here}.windowsOptions")
    if isinstance(sc.get("appArmorProfile"), Mapping):
        out += _app_armor(sc["appArmorProfile"], f"{here}.appArmorProfile")
    return out


def _app_armor(profile: Obj, here: str) -> list[Cause]:
    """``ValidateAppArmorProfileField``."""
    kind, local = profile.get("type") or "", profile.get("localhostProfile")
    if kind == "Localhost":
        if local is None:
            return [F.required(f"{here}.localhostProfile", "must be set when AppArmor type is Localhost")]
        out: list[Cause] = []
        if local.strip() != local:
            out.append(F.invalid(f"{here}.localhostProfile", local, "must not be padded with whitespace"))
        elif not local:
            out.append(F.required(f"{here}.localhostProfile", "must be set when AppArmor type is Localhost"))
        if len(local) > 4095:
            out.append(F.too_long(f"{here}.localhostProfile", 4095))
        return out
    if kind in ("RuntimeDefault", "Unconfined"):
        return [F.invalid(f"{here}.localhostProfile", local, "can only be set when AppArmor type is Localhost")
                ] if local is not None else []
    if not kind:
        return [F.required(f"{here}.type", "type is required when appArmorProfile is set")]
    return [F.not_supported(f"{here}.type", kind, ("Localhost", "RuntimeDefault", "Unconfined"))]


_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_NETBIOS = re.compile(r'^[^\\/:\*\?"<>|\.][^\\/:\*\?"<>|]{0,14}$')
_WIN_LABEL = "[a-zA-Z0-9](?:[a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?"
_WIN_DOMAIN = re.compile(f"^{_WIN_LABEL}(?:\\.{_WIN_LABEL})*$")
_BAD_USER_CHARS = re.compile(r'["/\\:;|=,\+\*\?<>@\[\]]')
_DOTS_SPACES = re.compile(r"^[\. ]+$")


def _windows_options(options: Obj, here: str) -> list[Cause]:
    """``validateWindowsSecurityContextOptions``: the GMSA credential spec's name and size and the shape of
    ``runAsUserName`` (``DOMAIN\\USER``)."""
    out: list[Cause] = []
    name = options.get("gmsaCredentialSpecName")
    if name is not None:
        out += F.each_invalid(f"{here}.gmsaCredentialSpecName", name, F.dns1123_subdomain(str(name)))
    spec = options.get("gmsaCredentialSpec")
    if spec is not None and not spec:
        out.append(F.invalid(f"{here}.gmsaCredentialSpec", spec, "gmsaCredentialSpec cannot be an empty string"))
    elif spec is not None and len(str(spec)) > 64 * 1024:
        out.append(F.invalid(f"{here}.gmsaCredentialSpec", spec, "gmsaCredentialSpec size must be under 64 KiB"))
    user = options.get("runAsUserName")
    if user is not None:
        out += [F.invalid(f"{here}.runAsUserName", user, m) for m in _user_name(str(user))]
    return out


def _user_name(value: str) -> list[str]:
    if not value:
        return ["runAsUserName cannot be an empty string"]
    if _CONTROL.search(value):
        return ["runAsUserName cannot contain control characters"]
    parts = value.split("\\")
    if len(parts) > 2:
        return ["runAsUserName cannot contain more than one backslash"]
    domain, user = (parts[0], parts[1]) if len(parts) == 2 else ("", parts[0])
    out = []
    if len(domain) >= 256:
        out.append("runAsUserName's Domain length must be under 256 characters")
    if len(parts) == 2 and not (_NETBIOS.match(domain) or _WIN_DOMAIN.match(domain)):
        out.append("runAsUserName's Domain doesn't match the NetBios nor the DNS format")
    if not user:
        out.append("runAsUserName's User cannot be empty")
    elif len(user) > 104:
        out.append("runAsUserName's User length must not be longer than 104 characters")
    if _DOTS_SPACES.match(user):
        out.append("runAsUserName's User cannot contain only periods or spaces")
    if _BAD_USER_CHARS.search(user):
        out.append('runAsUserName\'s User cannot contain the following characters: "/\\:;|=,+*?<>@[]')
    return out


def _os(spec: Obj, path: str) -> list[Cause]:
    """``validateOS``, then ``validateLinux`` or ``validateWindows`` for the named OS."""
    name = spec["os"].get("name") or ""
    if not name:
        return [F.required(f"{path}.os.name", "cannot be empty")]
    if name not in ("linux", "windows"):
        return [F.not_supported(f"{path}.os", name, ("linux", "windows"))]
    raw = spec.get("securityContext")
    context: Obj = raw if isinstance(raw, MAPPING) else {}
    out: list[Cause] = []
    if name == "linux":
        if _set(context, "windowsOptions"):
            out.append(F.forbidden(f"{path}.securityContext.windowsOptions",
                                   "windows options cannot be set for a linux pod"))
        for here, c in _containers(spec, path):
            if isinstance(c.get("securityContext"), Mapping) and _set(c["securityContext"], "windowsOptions"):
                out.append(F.forbidden(f"{here}.securityContext.windowsOptions",
                                       "windows options cannot be set for a linux pod"))
        return out
    for where, key, at in _WINDOWS_FORBIDDEN_POD:
        owner = spec if where == "spec" else context
        value = owner.get(key)
        if (value is True) if key in ("hostPID", "hostIPC") else _set(owner, key):
            out.append(F.forbidden(f"{path}.{at}", "cannot be set for a windows pod"))
    for here, c in _containers(spec, path):
        sc = c.get("securityContext")
        if isinstance(sc, MAPPING):
            out += [F.forbidden(f"{here}.securityContext.{key}", "cannot be set for a windows pod")
                    for key in _WINDOWS_FORBIDDEN_CONTAINER if _set(sc, key)]
    return out
