"""One module per format, each a :class:`~trajrun.sources.registry.Reader`: ``FORMAT``, ``READS``,
``RANK``, ``read`` and ``refuses``. ``registry`` finds them here, so a new format is a new module
in this folder (with its test and its row in the spec's formats table) and nothing else.

Modules without ``FORMAT`` are a reader's parts (``otel_spans``, ``otel_calls``, ``otel_layouts``).
"""
