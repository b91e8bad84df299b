"""What leaves assay or plugs it into other tools: export files (:mod:`~assay.exchange.export`),
OpenTelemetry (:mod:`~assay.exchange.otel`), Phoenix (:mod:`~assay.exchange.phoenix`), the
post-run steps that send a run out through them (:mod:`~assay.exchange.finish`), the Python API's
door that ends with them (:mod:`~assay.exchange.api`: ``assay.evaluate``) and the pytest plug-in
(:mod:`~assay.exchange.pytest_plugin`). Stands on analysis and below.
"""
