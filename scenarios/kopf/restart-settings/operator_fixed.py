import kopf

from operators import create_config_fixed

kopf.on.create("example.com", "v1", "widgets")(create_config_fixed)
