"""Serving: one session over a snapshot answering HTTP-shaped requests (routing, reads, writes, deletes,
watches, discovery, subresources).

The only package of the API server that brings the others together: it imports ``registry``,
``storage``, ``validation``, ``defaulting`` and ``patch``, none of which imports it. docs/apiserver.md.
"""
