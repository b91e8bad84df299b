"""What leaves assay or plugs it into other tools: export files (:mod:`~assay.exchange.export`),
OpenTelemetry (:mod:`~assay.exchange.otel`), Phoenix (:mod:`~assay.exchange.phoenix`) and the
pytest plug-in (:mod:`~assay.exchange.pytest_plugin`). Stands on analysis and below.
"""
