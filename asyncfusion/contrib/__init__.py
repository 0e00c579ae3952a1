"""Integrations with other libraries (each an optional dependency: ``pip install
asyncfusion[serve]``): :mod:`.starlette` (a service's device lifecycle, health, error
responses and strict JSON bodies), :mod:`.prometheus` (``dev.metrics()`` for a Prometheus
scrape) and :mod:`.jsonio` (request fields read into arrays and results written as JSON,
for any framework; numpy only)."""
