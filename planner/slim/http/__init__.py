"""The HTTP glue of the embedded API server (aiohttp): URL routing, bodies, streaming, auth."""
