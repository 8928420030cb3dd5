"""The adapters: the network, the store, WARC snapshots, Redis, the browser, the process pool.

Each module here implements a port of :mod:`sitelore.core.ports` (or of
:mod:`sitelore.crawl.port`) over one outside thing: aiohttp behind the address guard,
SQLite and PostgreSQL, warcio, the Redis frontier scripts, headless Chromium, the
conversion worker processes, an embedding model. They know the core; they never know
the crawl engine, the application or the surfaces.
"""
