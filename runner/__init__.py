"""trajrun: check an agent's tool-call trajectory against YAML suites, report as JUnit."""

from __future__ import annotations

__version__ = "0.1.0"
