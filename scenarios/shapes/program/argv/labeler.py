"""A watch-loop operator in the shape of many small public ones: a command line parsed with argparse
(``labeler.py --namespace shop --label team=payments``), then a watch of one namespace's ConfigMaps,
labelling every one that lacks the label.

It runs unmodified under kamera because a program starts with ``sys.argv == [its file, *args]``, the
scenario's ``args:``, as ``python labeler.py ARGS`` in its container would; with kamera's own command
line it would exit 2 ("unrecognized arguments").
"""

import argparse

from kubernetes import client, config, watch


def parse_args():
    parser = argparse.ArgumentParser(description="label every ConfigMap of a namespace")
    parser.add_argument("--namespace", required=True)
    parser.add_argument("--label", required=True, help="key=value")
    return parser.parse_args()


def main():
    args = parse_args()
    key, _, value = args.label.partition("=")
    config.load_kube_config()
    v1 = client.CoreV1Api()
    for event in watch.Watch().stream(v1.list_namespaced_config_map, args.namespace):
        cm = event["object"]
        if event["type"] == "DELETED" or (cm.metadata.labels or {}).get(key) == value:
            continue
        v1.patch_namespaced_config_map(cm.metadata.name, args.namespace, {"metadata": {"labels": {key: value}}})
