"""Pod-spec host settings (``validation/pod_host.py``): DNS, host aliases, OS, sysctls, AppArmor,
Windows options, procMount and ephemeral containers, each after the upstream function it cites."""

from __future__ import annotations

import pytest

from kamera_cli.apiserver.errors import ApiError
from kamera_cli.model.objects import ObjectRef


def _pod(**spec) -> dict:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "default"},
            "spec": {"containers": [{"name": "c", "image": "x"}], **spec}}


def _causes(server, obj: dict) -> list[tuple[str, str, str]]:
    with pytest.raises(ApiError) as exc:
        server.create(obj)
    assert exc.value.status == 422
    return [(c["reason"], c["field"], c["message"]) for c in exc.value.body["details"]["causes"]]


def test_dns_policy_none_needs_a_config_with_a_nameserver(server):
    # validatePodDNSConfig
    assert _causes(server, _pod(dnsPolicy="None")) == [
        ("FieldValueRequired", "spec.dnsConfig", "Required value: must provide `dnsConfig` when `dnsPolicy` is None")]
    assert _causes(server, _pod(dnsPolicy="None", dnsConfig={"searches": ["a.example"]})) == [
        ("FieldValueRequired", "spec.dnsConfig.nameservers",
         "Required value: must provide at least one DNS nameserver when `dnsPolicy` is None")]
    ok = server.create(_pod(dnsPolicy="None", dnsConfig={"nameservers": ["10.0.0.10"], "searches": ["svc.local."]}))
    assert ok["spec"]["dnsConfig"]["nameservers"] == ["10.0.0.10"]


def test_dns_config_nameservers_searches_and_options(server):
    config = {"nameservers": ["1.1.1.1", "8.8.8.8", "9.9.9.9", "bad"], "searches": ["_srv.example.com", "Bad"],
              "options": [{"value": "2"}]}
    causes = _causes(server, _pod(dnsConfig=config))
    assert causes[0] == ("FieldValueInvalid", "spec.dnsConfig.nameservers",
                         'Invalid value: ["1.1.1.1","8.8.8.8","9.9.9.9","bad"]: must not have more than 3 nameservers')
    assert causes[1] == ("FieldValueInvalid", "spec.dnsConfig.nameservers[3]",
                         'Invalid value: "bad": must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)')
    # RelaxedDNSSearchValidation (on by default since 1.33): "_srv" passes, upper case does not
    assert causes[2][:2] == ("FieldValueInvalid", "spec.dnsConfig.searches[1]")
    assert "'_', '-' or '.'" in causes[2][2]
    assert causes[3] == ("FieldValueRequired", "spec.dnsConfig.options[0]", "Required value: must not be empty")


def test_host_aliases_need_an_ip_and_dns_hostnames(server):
    # ValidateHostAliases
    assert _causes(server, _pod(hostAliases=[{"ip": "db.local", "hostnames": ["ok.example", "Not_OK"]}])) == [
        ("FieldValueInvalid", "spec.hostAliases[0].ip",
         'Invalid value: "db.local": must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)'),
        ("FieldValueInvalid", "spec.hostAliases[0].hostnames[1]",
         "Invalid value: \"Not_OK\": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric "
         "characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', "
         "regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"),
    ]


def test_gates_and_preemption_policy(server):
    # validateReadinessGates, validateSchedulingGates, ValidatePreemptionPolicy
    causes = _causes(server, _pod(readinessGates=[{"conditionType": "bad type"}],
                                  schedulingGates=[{"name": "example.com/wait"}, {"name": "example.com/wait"}],
                                  preemptionPolicy="Sometimes"))
    assert [c[:2] for c in causes] == [("FieldValueInvalid", "spec.readinessGates[0].conditionType"),
                                       ("FieldValueDuplicate", "spec.schedulingGates[1]"),
                                       ("FieldValueNotSupported", "spec.preemptionPolicy")]
    assert causes[2][2] == 'Unsupported value: "Sometimes": supported values: "PreemptLowerPriority", "Never"'


def test_os_name_and_the_options_each_os_forbids(server):
    # validateOS, validateLinux, validateWindows
    assert _causes(server, _pod(os={"name": "plan9"})) == [
        ("FieldValueNotSupported", "spec.os", 'Unsupported value: "plan9": supported values: "linux", "windows"')]
    windows_on_linux = {"name": "c", "image": "x", "securityContext": {"windowsOptions": {"runAsUserName": "u"}}}
    assert _causes(server, _pod(os={"name": "linux"}, containers=[windows_on_linux])) == [
        ("FieldValueForbidden", "spec.containers[0].securityContext.windowsOptions",
         "Forbidden: windows options cannot be set for a linux pod")]
    linuxy = {"name": "c", "image": "x", "securityContext": {"runAsUser": 1000, "privileged": False}}
    causes = _causes(server, _pod(os={"name": "windows"}, hostPID=True, containers=[linuxy],
                                  securityContext={"fsGroup": 2000}))
    assert [c[1] for c in causes] == ["spec.hostPID", "spec.securityContext.fsGroup",
                                      "spec.containers[0].securityContext.privileged",
                                      "spec.containers[0].securityContext.runAsUser"]
    assert {c[2] for c in causes} == {"Forbidden: cannot be set for a windows pod"}


def test_sysctls_and_pod_security_policies(server):
    # validateSysctls / ValidateHostSysctl, validateFSGroupChangePolicy, validateSupplementalGroupsPolicy
    context = {"sysctls": [{"name": "net.core.somaxconn", "value": "1024"}, {"name": "Kernel.X", "value": "1"},
                           {"name": "net.core.somaxconn", "value": "1"}],
               "fsGroupChangePolicy": "Sometimes", "supplementalGroupsPolicy": "Loose"}
    causes = _causes(server, _pod(hostNetwork=True, securityContext=context))
    assert causes[0] == ("FieldValueInvalid", "spec.securityContext.sysctls[0].name",
                         "Invalid value: \"net.core.somaxconn\": may not be specified when 'hostNetwork' is true")
    assert causes[1][:2] == ("FieldValueInvalid", "spec.securityContext.sysctls[1].name")
    assert causes[1][2].endswith("must have at most 253 characters and match regex "
                                 "^([a-z0-9]([-_a-z0-9]*[a-z0-9])?[\\./])*[a-z0-9]([-_a-z0-9]*[a-z0-9])?$")
    assert causes[2][:2] == ("FieldValueDuplicate", "spec.securityContext.sysctls[2].name")
    assert causes[4] == ("FieldValueNotSupported", "spec.securityContext.fsGroupChangePolicy",
                         'Unsupported value: "Sometimes": supported values: "Always", "OnRootMismatch"')
    assert causes[5][1] == "spec.securityContext.supplementalGroupsPolicy"


def test_container_proc_mount_app_armor_and_windows_user(server):
    # ValidateProcMountType, ValidateAppArmorProfileField, validateWindowsSecurityContextOptions
    sc = {"procMount": "Unmasked", "appArmorProfile": {"type": "Localhost"},
          "windowsOptions": {"runAsUserName": "a\\b\\c"}}
    assert _causes(server, _pod(containers=[{"name": "c", "image": "x", "securityContext": sc}])) == [
        ("FieldValueInvalid", "spec.containers[0].securityContext.procMount",
         'Invalid value: "Unmasked": `hostUsers` must be false to use `Unmasked`'),
        ("FieldValueInvalid", "spec.containers[0].securityContext.windowsOptions.runAsUserName",
         'Invalid value: "a\\\\b\\\\c": runAsUserName cannot contain more than one backslash'),
        ("FieldValueRequired", "spec.containers[0].securityContext.appArmorProfile.localhostProfile",
         "Required value: must be set when AppArmor type is Localhost"),
    ]
    ok = server.create(_pod(hostUsers=False, containers=[{"name": "c", "image": "x", "securityContext": {
        "procMount": "Unmasked", "appArmorProfile": {"type": "RuntimeDefault"}}}]))
    assert ok["spec"]["containers"][0]["securityContext"]["procMount"] == "Unmasked"


def test_ephemeral_containers_are_refused_on_create_and_in_templates(server):
    # ValidatePodCreate / ValidatePodTemplateSpec
    ephemeral = [{"name": "debug", "image": "busybox"}]
    assert ("FieldValueForbidden", "spec.ephemeralContainers", "Forbidden: cannot be set on create") in _causes(
        server, _pod(ephemeralContainers=ephemeral))
    deployment = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d", "namespace": "default"},
                  "spec": {"selector": {"matchLabels": {"a": "b"}}, "template": {
                      "metadata": {"labels": {"a": "b"}},
                      "spec": {"containers": [{"name": "c", "image": "x"}], "ephemeralContainers": ephemeral}}}}
    assert ("FieldValueForbidden", "spec.template.spec.ephemeralContainers",
            "Forbidden: ephemeral containers not allowed in pod template") in _causes(server, deployment)


def test_a_user_namespace_excludes_the_host_namespaces(server):
    # validateHostUsers (its paths for hostPID/hostIPC are capitalised upstream)
    assert _causes(server, _pod(hostUsers=False, hostPID=True, hostNetwork=True)) == [
        ("FieldValueForbidden", "spec.hostNetwork", "Forbidden: when `pod.Spec.HostUsers` is false"),
        ("FieldValueForbidden", "spec.HostPID", "Forbidden: when `pod.Spec.HostUsers` is false"),
    ]


def test_windows_host_process_pods_are_all_host_process_and_on_the_host_network(server):
    # validateWindowsHostProcessPod (the cluster's --allow-privileged policy is not modelled)
    host = {"windowsOptions": {"hostProcess": True}}
    causes = _causes(server, _pod(os={"name": "windows"}, containers=[
        {"name": "a", "image": "x", "securityContext": host},
        {"name": "b", "image": "x", "securityContext": {"windowsOptions": {"hostProcess": False}}}],
        securityContext={"windowsOptions": {"hostProcess": True}}))
    assert causes == [
        ("FieldValueInvalid", "spec.containers[1].securityContext.windowsOptions.hostProcess",
         "Invalid value: false: pod hostProcess value must be identical if both are specified, was true"),
        ("FieldValueInvalid", "spec", 'Invalid value: "": If pod contains any hostProcess containers then all '
                                      "containers must be HostProcess containers"),
        ("FieldValueInvalid", "spec.hostNetwork",
         "Invalid value: false: hostNetwork must be true if pod contains any hostProcess containers"),
    ]


def _annotated(annotations: dict, **spec) -> dict:
    pod = _pod(**spec)
    pod["metadata"]["annotations"] = annotations
    return pod


def test_pod_deletion_cost_and_mirror_annotations(server):
    # ValidatePodSpecificAnnotations / GetDeletionCostFromPodAnnotations: a 32-bit integer, no '+', no leading zero
    for bad in ("+5", "007", "2147483648", "ten"):
        assert _causes(server, _annotated({"controller.kubernetes.io/pod-deletion-cost": bad})) == [
            ("FieldValueInvalid", "metadata.annotations[controller.kubernetes.io/pod-deletion-cost]",
             f'Invalid value: "{bad}": must be a 32bit integer')]
    assert server.create(_annotated({"controller.kubernetes.io/pod-deletion-cost": "-100"}))["metadata"]["name"]
    server.delete(ObjectRef("v1", "Pod", "default", "p"))
    assert _causes(server, _annotated({"kubernetes.io/config.mirror": "x"})) == [
        ("FieldValueInvalid", "metadata.annotations[kubernetes.io/config.mirror]",
         'Invalid value: "x": must set spec.nodeName if mirror pod annotation is set')]


def test_seccomp_and_apparmor_annotations_and_their_fields(server):
    # ValidateSeccompPodAnnotations (its path uses the key as a child), ValidateAppArmorPodAnnotations, and
    # validateSeccompAnnotationsAndFields / validateAppArmorAnnotationsAndFieldsMatchOnCreate
    causes = _causes(server, _annotated(
        {"seccomp.security.alpha.kubernetes.io/pod": "localhost/../escape",
         "container.apparmor.security.beta.kubernetes.io/ghost": "enforce"},
        securityContext={"seccompProfile": {"type": "RuntimeDefault"}}))
    assert causes == [
        ("FieldValueInvalid", "metadata.annotations.seccomp.security.alpha.kubernetes.io/pod",
         "Invalid value: \"../escape\": must not contain '..'"),
        ("FieldValueInvalid", "metadata.annotations[container.apparmor.security.beta.kubernetes.io/ghost]",
         'Invalid value: "ghost": container not found'),
        ("FieldValueInvalid", "metadata.annotations[container.apparmor.security.beta.kubernetes.io/ghost]",
         'Invalid value: "enforce": invalid AppArmor profile name: "enforce"'),
        ("FieldValueForbidden", "spec.securityContext.seccompProfile.type",
         "Forbidden: seccomp type in annotation and field must match"),
    ]
    deployment = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d", "namespace": "default"},
                  "spec": {"selector": {"matchLabels": {"a": "b"}}, "template": {
                      "metadata": {"labels": {"a": "b"},
                                   "annotations": {"container.apparmor.security.beta.kubernetes.io/c": "unconfined"}},
                      "spec": {"containers": [{"name": "c", "image": "x", "securityContext": {
                          "appArmorProfile": {"type": "RuntimeDefault"}}}]}}}}
    assert _causes(server, deployment) == [
        ("FieldValueForbidden", "spec.template.spec.containers[0].securityContext.appArmorProfile.type",
         "Forbidden: apparmor type in annotation and field must match")]
