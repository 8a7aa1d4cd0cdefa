"""One module per routed HTTP client library (the official client's urllib3 routing is in ``transport``)."""
