"""Case selection: pytest's ``-k``/``-m`` expression grammar and ``--shard I/N``."""

from __future__ import annotations

import re
from typing import Callable, Iterable

_TOKEN = re.compile(r"\s*(\(|\)|[^\s()]+)")
MAX_NESTING = 100
"""The deepest ``-k``/``-m`` nesting of parentheses and ``not`` (the parser recurses once per
level)."""
Predicate = Callable[[Callable[[str], bool]], bool]


class ExpressionError(ValueError):
    """A ``-k`` or ``-m`` expression that does not parse; the message says where."""


def _any_of(parts: list[Predicate]) -> Predicate:
    """``a or b or ...``, flat: a long chain never nests calls."""
    return parts[0] if len(parts) == 1 else lambda m: any(p(m) for p in parts)


def _all_of(parts: list[Predicate]) -> Predicate:
    """``a and b and ...``, flat."""
    return parts[0] if len(parts) == 1 else lambda m: all(p(m) for p in parts)


class _Parser:
    """Recursive descent over
    ``expr := and ('or' and)*; and := not ('and' not)*; not := 'not' not | atom``.

    Parentheses and ``not`` nest at most ``MAX_NESTING`` levels, so hostile input is a usage error,
    not a ``RecursionError``.
    """

    def __init__(self, text: str) -> None:
        self.text = text
        self.shown = repr(text) if len(text) <= 80 else f"{text[:60]!r}… ({len(text):,} characters)"
        self.tokens = [m.group(1) for m in _TOKEN.finditer(text)]
        self.pos = 0
        self.depth = 0

    def parse(self) -> Predicate:
        """The whole expression; anything left over is an error."""
        if not self.tokens:
            raise ExpressionError(f"empty expression {self.shown}")
        node = self._or()
        if self.pos < len(self.tokens):
            raise ExpressionError(
                f"unexpected {self.tokens[self.pos]!r} in expression {self.shown}"
            )
        return node

    def _peek(self) -> str | None:
        """The next token, or None at the end."""
        return self.tokens[self.pos] if self.pos < len(self.tokens) else None

    def _take(self) -> str:
        """Consume the next token; running out is an error."""
        token = self._peek()
        if token is None:
            raise ExpressionError(f"expression {self.shown} ends too early")
        self.pos += 1
        return token

    def _deeper(self) -> None:
        """Enter one more level of parentheses or ``not``; past ``MAX_NESTING`` is an error."""
        self.depth += 1
        if self.depth > MAX_NESTING:
            raise ExpressionError(
                f"expression {self.shown} nests parentheses and 'not' more than {MAX_NESTING} "
                "levels deep; simplify it"
            )

    def _or(self) -> Predicate:
        """``and ("or" and)*``."""
        parts = [self._and()]
        while self._peek() == "or":
            self._take()
            parts.append(self._and())
        return _any_of(parts)

    def _and(self) -> Predicate:
        """``not ("and" not)*``."""
        parts = [self._not()]
        while self._peek() == "and":
            self._take()
            parts.append(self._not())
        return _all_of(parts)

    def _not(self) -> Predicate:
        """``"not" not | atom``."""
        if self._peek() == "not":
            self._take()
            self._deeper()
            inner = self._not()
            self.depth -= 1
            return lambda m: not inner(m)
        return self._atom()

    def _atom(self) -> Predicate:
        """A parenthesised expression or a word."""
        token = self._take()
        if token == "(":
            self._deeper()
            node = self._or()
            if self._take() != ")":
                raise ExpressionError(f"missing ')' in expression {self.shown}")
            self.depth -= 1
            return node
        if token in (")", "and", "or"):
            raise ExpressionError(f"unexpected {token!r} in expression {self.shown}")
        word = token.lower()
        return lambda m: m(word)


def compile_expression(text: str) -> Predicate:
    """Parse a pytest-style expression; call the result with a word matcher ``str -> bool``."""
    return _Parser(text).parse()


def keyword_matcher(text: str) -> Callable[[str], bool]:
    """``-k``: words are case-insensitive substrings of ``suite::case``."""
    expr = compile_expression(text)
    return lambda case_id: expr(lambda word: word in case_id.lower())


def marker_matcher(text: str) -> Callable[[Iterable[str]], bool]:
    """``-m``: words are tags, compared case-insensitively."""
    expr = compile_expression(text)

    def match(tags: Iterable[str]) -> bool:
        """Whether a case with these tags is selected."""
        lowered = {t.lower() for t in tags}
        return expr(lambda word: word in lowered)

    return match


def parse_shard(text: str) -> tuple[int, int]:
    """``I/N`` with 1 <= I <= N; an empty value (an unset ``$SHARD``) is an error, never "run
    everything"."""
    if not text.strip():
        raise ValueError(
            "--shard is empty (is the variable that should set it unset?); give I/N with "
            "1 <= I <= N, like 2/3, or leave --shard out to run every case"
        )
    m = re.fullmatch(r"\s*(\d+)\s*/\s*(\d+)\s*", text)
    if not m or not 1 <= int(m.group(1)) <= int(m.group(2)):
        raise ValueError(f"--shard expects I/N with 1 <= I <= N, like 2/3; got {text!r}")
    return int(m.group(1)), int(m.group(2))


def in_shard(case_id: str, shard: tuple[int, int]) -> bool:
    """The contract's stable split: ``sha256(id) mod N == I - 1``."""
    import hashlib  # deferred: only --shard needs it, and _hashlib costs every run's start-up

    index, count = shard
    digest = int.from_bytes(hashlib.sha256(case_id.encode("utf-8")).digest(), "big")
    return digest % count == index - 1
