"""Serving: one session over a snapshot answering HTTP-shaped requests (routing, reads, writes, deletes,
watches, discovery, subresources).

``session.ApiServer`` routes each request to a collaborator: ``reads.Reads``, ``writes.Writes``,
``deletes.Deletes``, each given the session's ``state.SessionState`` (snapshot, journal, hook, commit)
and nothing of the router; ``base`` is the request and answer shapes they share. The only package of
the API server that brings the others together: it imports ``registry``, ``storage``, ``validation``,
``defaulting`` and ``patch``, none of which imports it; it never imports ``transports``.
docs/apiserver.md.
"""
