"""Plain frozen values shared by every layer (layer 1): objects and references, the scenario as
loaded, the check result, the reporter-ready state graph, a fake by URL's pattern and the HTTP
request/response values it speaks (``services``).

May import: the standard library and ``errors`` only, so that every layer can use these values and
a result can be read (``report/``, JSON) without loading anything that runs a search. See
docs/architecture.md.
"""
