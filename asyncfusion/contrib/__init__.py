"""Integrations with other libraries (each an optional dependency: ``pip install
asyncfusion[serve]``): :mod:`.starlette` (a service's device lifecycle, health and error
responses) and :mod:`.prometheus` (``dev.metrics()`` for a Prometheus scrape)."""
