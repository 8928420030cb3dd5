"""The served surfaces of ``sitelore serve`` and ``sitelore mcp``.

The REST API (FastAPI), the Firecrawl-compatible API, the web UI, the MCP server, and
what guards them (Host/Origin checks, bearer tokens, body caps, slow-client limits).
Each calls :mod:`sitelore.app`; the web and MCP libraries never leave this package.
"""
