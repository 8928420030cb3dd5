"""The application layer: wire the adapters to the engine and offer the operations.

:mod:`~sitelore.app.bootstrap` is the composition root (``Runtime``);
:mod:`~sitelore.app.bootstrap_scale` builds the scale-out graph on it, and
:mod:`~sitelore.app.worker` runs the engine over the Redis frontier. Jobs, named
sources and their refresh, rebuilds from captures, semantic indexing, and the service
operations that the REST API and the MCP server share live here. The surfaces
(:mod:`sitelore.cli`, :mod:`sitelore.server`) call this layer and nothing below it
needs them.
"""
