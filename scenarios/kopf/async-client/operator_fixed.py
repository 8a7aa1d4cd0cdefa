import kopf

from operators import create_config, follow

kopf.on.create("example.com", "v1", "widgets")(create_config)
kopf.on.field("example.com", "v1", "widgets", field="spec.message")(follow)
