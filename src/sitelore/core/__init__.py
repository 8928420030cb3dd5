"""The pure core: URLs, links, robots.txt, sitemaps, politeness, conversion and the vocabulary.

Nothing here opens a socket, a file of the store or a process: these modules decide
(may this URL be fetched, what does robots.txt allow, when may an origin be hit next,
what Markdown does this HTML make) and every layer above calls them. The shared
vocabulary lives here too: the exception tree (:mod:`~sitelore.core.errors`), the
records that cross boundaries (:mod:`~sitelore.core.models`), crawl options and
operator settings, and the ports (:mod:`~sitelore.core.ports`) the adapters implement.
"""
