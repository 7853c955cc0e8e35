"""Importers: other tools' evaluation data (Google ADK eval sets, LangSmith datasets) as trajrun
suite files.

They sit between ``suites`` (whose YAML dialect they write and whose loader checks what they wrote)
and ``run``: an importer reads files and writes a suite, and never runs an agent. ``common`` builds
the suite text and the report of what could not be carried over; ``adk`` and ``langsmith`` read each
format.
"""
