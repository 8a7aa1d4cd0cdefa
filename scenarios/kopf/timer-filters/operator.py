"""A kopf operator with a timer on the Widgets a user chose to monitor (label ``monitored: "yes"``).

The timer reports the Widget's message into its status every minute, after a 30-second grace. A
user who removes the label stops it: kopf stops a timer at the event after which its filters no
longer match (``daemons.match_daemons``), so its pending tick never comes, and a later label starts
it afresh, grace included.
"""

import kopf


@kopf.timer("example.com", "v1", "widgets", labels={"monitored": "yes"}, interval=60, initial_delay=30)
def report(spec, **_):
    return {"message": spec.get("message", "")}
