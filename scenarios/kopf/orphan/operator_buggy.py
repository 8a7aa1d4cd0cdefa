import kopf

from operators import create_buggy

kopf.on.create("example.com", "v1", "widgets")(create_buggy)
