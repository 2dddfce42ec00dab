"""Observability: traces built from stored records, Prometheus counts, structured log context.

``span_builder`` (records to spans) and ``record_counts`` are Sans-I/O; ``tracer`` exports,
``logs`` formats. The ``/metrics`` route lives in ``server/api/metrics.py``.
"""
