"""How a source's options are spelled in its errors: a suite's keys, or ``trajrun show``'s flags.

A module of its own: ``documents`` and ``checkpoints`` (which ``documents`` imports) both word
errors with it.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Spelling:
    """How a source's options are written where its errors are read: a suite's keys, or
    ``trajrun show``'s flags."""

    flags: bool

    def name(self, option: str) -> str:
        """``'select:'`` in a suite, ``--select`` on the command line."""
        return f"--{option}" if self.flags else f"'{option}:'"

    def given(self, option: str, value: str) -> str:
        """``select: '$[0]'`` in a suite, ``--select '$[0]'`` on the command line."""
        return f"--{option} {value}" if self.flags else f"{option}: {value}"

    @property
    def folder(self) -> str:
        """What a relative path is read against."""
        return "the current folder" if self.flags else "the suite's folder"


SUITE = Spelling(flags=False)
SHOW = Spelling(flags=True)
