import kopf

from operators import create_config, report_keys_buggy

kopf.on.create("example.com", "v1", "widgets")(create_config)
kopf.timer("example.com", "v1", "widgets", interval=60, id="report_keys")(report_keys_buggy)
