"""The IndexedJob hook server: one Pod per index, `parallelism` at a time, as metacontroller's example.

The bug: a Pod that failed is counted but neither retried nor reported. With restartPolicy Never it
stays Failed, its index is never run again, and the job never gets a Complete or a Failed condition.
``FixedController`` below is the fix. The server started at the bottom is how the hook is deployed;
under kamera it binds nothing and returns at once.
"""

import copy
import json
import re
from http.server import BaseHTTPRequestHandler, HTTPServer


def finished(job):
    return any(c.get("type") in ("Complete", "Failed") and c.get("status") == "True"
               for c in job.get("status", {}).get("conditions", []))


def index_of(job_name, pod_name):
    match = re.match(r"^(.*)-(\d+)$", pod_name)
    return int(match.group(2)) if match and match.group(1) == job_name else -1


def pod_for(job, index):
    pod = copy.deepcopy(job["spec"]["template"])
    pod.update(apiVersion="v1", kind="Pod")
    pod.setdefault("metadata", {})["name"] = f"{job['metadata']['name']}-{index}"
    for container in pod["spec"]["containers"]:
        container["env"] = [*container.get("env", []), {"name": "JOB_INDEX", "value": str(index)}]
    return pod


class Controller(BaseHTTPRequestHandler):
    def sync(self, job, children):
        pods = {}
        active = succeeded = failed = 0
        for name, pod in sorted(children["Pod.v1"].items()):
            index = index_of(job["metadata"]["name"], name)
            if index < 0:
                continue
            phase = pod.get("status", {}).get("phase")
            if phase == "Succeeded":
                succeeded += 1
            elif phase == "Failed":
                failed += 1
            else:
                active += 1
            pods[index] = pod
        if finished(job):  # stop managing pods once finished: keep what is there
            return {"status": job["status"], "children": [pod_for(job, i) for i in sorted(pods)]}
        completions = job["spec"].get("completions", 1)
        status = {"active": active, "succeeded": succeeded, "failed": failed,
                  "conditions": [{"type": "Complete", "status": str(succeeded == completions)}]}
        desired = {i: pod_for(job, i) for i in pods}
        for index in range(completions):
            if index not in desired and active < job["spec"].get("parallelism", 1):
                desired[index] = pod_for(job, index)
                active += 1
        return {"status": status, "children": [desired[i] for i in sorted(desired)]}

    def do_POST(self):
        request = json.loads(self.rfile.read(int(self.headers.get("content-length"))))
        response = self.sync(request["parent"], request["children"])
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(json.dumps(response).encode("utf-8"))


class FixedController(Controller):
    """The fix (fixed/scenario.yaml): a failed Pod fails the job, which then stops creating Pods."""

    def sync(self, job, children):
        response = super().sync(job, children)
        status = response["status"]
        if status.get("failed") and not finished(job):
            status["conditions"].append({"type": "Failed", "status": "True", "reason": "PodFailed"})
            response["children"] = [pod for pod in response["children"]
                                    if pod["metadata"]["name"] in children["Pod.v1"]]
        return response


HTTPServer(("", 80), Controller).serve_forever()
