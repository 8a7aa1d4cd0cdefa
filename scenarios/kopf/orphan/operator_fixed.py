import kopf

from operators import create_fixed

kopf.on.create("example.com", "v1", "widgets")(create_fixed)
