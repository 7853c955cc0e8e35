"""``@frozen`` behaves as ``@dataclass(frozen=True, slots=True)``: each test checks a ``@frozen`` class against its
dataclass twin."""

from __future__ import annotations

import copy
import dataclasses
import pickle
from dataclasses import FrozenInstanceError, dataclass, field

import pytest
from trajrun.frozen import frozen


def _body(cls: type) -> type:
    """Fields of every kind: plain, default, factory, left out of repr and of comparison; a ``__post_init__``."""
    cls.__annotations__ = {"name": "str", "count": "int", "tags": "list[str]", "secret": "str", "note": "str",
                           "size": "int"}
    cls.count = 0
    cls.tags = field(default_factory=list)
    cls.secret = field(default="s3", repr=False)
    cls.note = field(default="", compare=False)
    cls.size = -1

    def __post_init__(self: object) -> None:
        """Derive ``size`` when it was not given."""
        if self.size < 0:  # type: ignore[attr-defined]
            object.__setattr__(self, "size", len(self.name))  # type: ignore[attr-defined]

    cls.__post_init__ = __post_init__
    return cls


@frozen
@_body
class Mine:
    """Made by ``@frozen``."""


@dataclass(frozen=True, slots=True)
@_body
class Twin:
    """Made by ``dataclass``."""


ARGS = [("a",), ("bb", 2), ("c", 1, ["x"]), ("d", 0, [], "k", "n", 7)]


@pytest.mark.parametrize("args", ARGS)
def test_init_defaults_factory_and_post_init(args: tuple) -> None:
    mine, twin = Mine(*args), Twin(*args)
    assert dataclasses.astuple(mine) == dataclasses.astuple(twin)
    assert Mine("a").tags is not Mine("a").tags  # a fresh list from the factory each time


@pytest.mark.parametrize("args", ARGS)
def test_repr_skips_repr_false_fields(args: tuple) -> None:
    assert repr(Mine(*args)).replace("Mine", "Twin") == repr(Twin(*args))
    assert "s3" not in repr(Mine(*args))


def test_equality_and_hash_follow_compared_fields() -> None:
    assert Mine("a", note="one") == Mine("a", note="two")  # note: compare=False
    assert Mine("a") != Mine("a", 1)
    assert Mine("a") != Twin("a")  # another class never equals
    assert hash(Mine("a", 1, (), note="x")) == hash(Mine("a", 1, (), note="y"))  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        hash(Mine("a"))  # a list field is unhashable, as with dataclass
    with pytest.raises(TypeError):
        hash(Twin("a"))


def test_assignment_and_deletion_refused() -> None:
    mine = Mine("a")
    with pytest.raises(FrozenInstanceError):
        mine.name = "b"  # type: ignore[misc]
    with pytest.raises(FrozenInstanceError):
        del mine.name  # type: ignore[misc]
    with pytest.raises(FrozenInstanceError):
        mine.other = 1  # type: ignore[attr-defined]
    assert not hasattr(mine, "__dict__")  # slotted


def test_dataclass_functions_pickle_and_copy() -> None:
    mine = Mine("a", 3, ["t"], note="n")
    assert [f.name for f in dataclasses.fields(mine)] == [f.name for f in dataclasses.fields(Twin)]
    assert dataclasses.replace(mine, count=4) == Mine("a", 4, ["t"])
    assert dataclasses.asdict(mine) == dataclasses.asdict(Twin("a", 3, ["t"], note="n"))
    assert Mine.__match_args__ == Twin.__match_args__
    for clone in (pickle.loads(pickle.dumps(mine)), copy.copy(mine), copy.deepcopy(mine)):
        assert clone == mine and clone.note == "n" and clone is not mine


def test_signature_errors_match_dataclass() -> None:
    with pytest.raises(TypeError):
        Mine()  # type: ignore[call-arg]
    with pytest.raises(TypeError):
        Mine("a", nope=1)  # type: ignore[call-arg]
