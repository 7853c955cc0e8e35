"""Hypothesis settings for the property tests: 100 examples each in the README's test command (it must stay
quick on two cores); ``TRAJRUN_PROPERTY_EXAMPLES=5000`` for a deeper run by hand."""

from __future__ import annotations

import os

from hypothesis import settings

PROPERTY = settings(max_examples=int(os.environ.get("TRAJRUN_PROPERTY_EXAMPLES", "100")), deadline=None)
