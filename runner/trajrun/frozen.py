"""``@frozen``: ``@dataclass(frozen=True, slots=True)`` at a seventh of its start-up cost.

On Python 3.11 ``dataclass`` compiles six methods for each frozen class (``__init__``, ``__repr__``, ``__eq__``,
``__hash__``, ``__setattr__``, ``__delattr__``): the thirty-one such classes a run imports took 37-45 ms of every
run's start-up (about a third of it) to make; with ``@frozen`` they take 5-6 ms. Only ``__init__`` is compiled;
the other methods are shared, reading a class's compared fields through one C-speed ``attrgetter``. The class is
still a dataclass (``dataclasses.fields``, ``replace`` and ``asdict`` work) and behaves as one: equal and hashed by
its compared fields, its ``repr`` showing the fields with ``repr=True``, assignment refused, ``__post_init__``
called, pickled by its field values.
"""

from __future__ import annotations

import sys
from dataclasses import MISSING, FrozenInstanceError, dataclass, field, fields
from operator import attrgetter
from typing import Any, Callable, TypeVar

if sys.version_info >= (3, 11):
    from typing import dataclass_transform
else:  # type checkers read the 3.11 branch; 3.10 only needs the decorator to exist

    def dataclass_transform(**_: Any) -> Callable[[Any], Any]:
        """No-op before Python 3.11."""
        return lambda decorated: decorated


T = TypeVar("T", bound=type)
_HAS_FACTORY = object()


@dataclass_transform(frozen_default=True, field_specifiers=(field,))
def frozen(cls: T) -> T:
    """Make ``cls`` a frozen, slotted dataclass (see the module's docstring for how and why)."""
    cls = dataclass(init=False, repr=False, eq=False, slots=True)(
        cls
    )  # fields and slots, nothing compiled
    own = fields(cls)
    compared = [f.name for f in own if f.compare]
    cls._frozen_compared = attrgetter(*compared) if compared else _nothing  # type: ignore[attr-defined]
    cls._frozen_shown = tuple(f.name for f in own if f.repr)  # type: ignore[attr-defined]
    cls.__init__ = _init(cls, own)  # type: ignore[misc]
    cls.__repr__ = _repr  # type: ignore[assignment]
    cls.__eq__ = _eq  # type: ignore[assignment]
    cls.__hash__ = _hash  # type: ignore[assignment]
    cls.__setattr__ = _refuse  # type: ignore[assignment]
    cls.__delattr__ = _refuse  # type: ignore[assignment]
    cls.__getstate__ = _getstate  # type: ignore[attr-defined]
    cls.__setstate__ = _setstate  # type: ignore[attr-defined]
    return cls


def _init(cls: type, own: tuple[Any, ...]) -> Callable[..., None]:
    """The class's ``__init__``, compiled once: defaults and factories as ``dataclass`` has them, each field set
    through its slot's own ``__set__`` (past the refusing ``__setattr__``, and a third faster than the
    ``object.__setattr__`` dataclass calls), then ``__post_init__`` if the class has one."""
    scope: dict[str, Any] = {"_HAS_FACTORY": _HAS_FACTORY}
    params, body = ["self"], []
    for f in own:
        if f.default is not MISSING:
            scope[f"_d_{f.name}"] = f.default
            params.append(f"{f.name}=_d_{f.name}")
        elif f.default_factory is not MISSING:
            scope[f"_f_{f.name}"] = f.default_factory
            params.append(f"{f.name}=_HAS_FACTORY")
            body.append(f" if {f.name} is _HAS_FACTORY: {f.name} = _f_{f.name}()")
        else:
            params.append(f.name)
        scope[f"_s_{f.name}"] = getattr(cls, f.name).__set__
        body.append(f" _s_{f.name}(self, {f.name})")
    if hasattr(cls, "__post_init__"):
        body.append(" self.__post_init__()")
    exec(f"def __init__({', '.join(params)}):\n" + ("\n".join(body) or " pass"), scope)  # noqa: S102
    init = scope["__init__"]
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    return init  # type: ignore[no-any-return]


def _nothing(_: object) -> tuple[()]:
    """The compared fields of a class that compares none."""
    return ()


def _repr(self: Any) -> str:
    """``Name(field=value, …)`` over the fields with ``repr=True``, as ``dataclass`` writes it."""
    shown = ", ".join(f"{name}={getattr(self, name)!r}" for name in self._frozen_shown)
    return f"{type(self).__qualname__}({shown})"


def _eq(self: Any, other: object) -> bool:
    """Equal to an instance of the same class with equal compared fields."""
    if other.__class__ is not self.__class__:
        return NotImplemented
    return self._frozen_compared(self) == self._frozen_compared(other)  # type: ignore[no-any-return]


def _hash(self: Any) -> int:
    """The hash of the compared fields, so equal instances hash alike."""
    return hash(self._frozen_compared(self))


def _refuse(self: Any, name: str, *_: Any) -> None:
    """``__setattr__`` and ``__delattr__``: a frozen instance never changes after ``__init__``."""
    raise FrozenInstanceError(
        f"cannot assign to or delete field {name!r} of a frozen {type(self).__name__}"
    )


def _getstate(self: Any) -> list[Any]:
    """Pickle the field values (a slotted class has no ``__dict__``; worker processes send results this way)."""
    return [getattr(self, f.name) for f in fields(self)]


def _setstate(self: Any, state: list[Any]) -> None:
    """Unpickle past the refusing ``__setattr__``."""
    for f, value in zip(fields(self), state):
        object.__setattr__(self, f.name, value)
