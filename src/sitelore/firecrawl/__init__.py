"""A Firecrawl-v2-compatible API over sitelore's service layer, mounted by ``sitelore serve``.

:mod:`~sitelore.firecrawl.shapes` holds the request models (Firecrawl's camelCase
names), :mod:`~sitelore.firecrawl.translate` turns them into sitelore's options under
the operator's rules, :mod:`~sitelore.firecrawl.answers` shapes documents and errors,
:mod:`~sitelore.firecrawl.batch` runs batch scrapes and :mod:`~sitelore.firecrawl.routes`
is the router that :func:`sitelore.api.create_app` includes.
"""
