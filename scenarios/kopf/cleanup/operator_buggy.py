import kopf

from operators import create_config, hand_over_buggy

kopf.on.create("example.com", "v1", "widgets")(create_config)
kopf.on.cleanup()(hand_over_buggy)
