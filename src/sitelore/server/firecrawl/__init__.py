"""A Firecrawl-v2-compatible API over sitelore's service layer, mounted by ``sitelore serve``.

:mod:`~sitelore.server.firecrawl.shapes` holds the request models (Firecrawl's camelCase
names), :mod:`~sitelore.server.firecrawl.translate` turns them into sitelore's options under
the operator's rules, :mod:`~sitelore.server.firecrawl.answers` shapes documents and errors,
:mod:`~sitelore.server.firecrawl.batch` runs batch scrapes and
:mod:`~sitelore.server.firecrawl.routes` is the router that
:func:`sitelore.server.api.create_app` includes.
"""
