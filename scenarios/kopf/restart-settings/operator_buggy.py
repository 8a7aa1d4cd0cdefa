import kopf

from operators import create_config_buggy, load_settings

kopf.on.startup()(load_settings)
kopf.on.create("example.com", "v1", "widgets")(create_config_buggy)
