"""Fast construction of frozen, slotted dataclasses.

A frozen dataclass's ``__init__`` stores each field through ``object.__setattr__``,
which costs about 100 ns a field. Planning builds one :class:`DataFileMeta` (21
fields) per live file, so the decoders build them with :func:`constructor` instead:
a function that takes every field positionally, in declaration order, and stores them
through the slots' descriptors, at half the cost. The instances are the same as
``__init__`` makes (no ``__post_init__`` runs: the classes given must have none).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any, TypeVar

V = TypeVar("V")


def constructor(cls: type[V]) -> Callable[..., V]:
    """A positional constructor of the frozen, slotted dataclass ``cls``."""
    if not dataclasses.is_dataclass(cls) or "__slots__" not in vars(cls):
        raise TypeError(f"{cls.__name__} is not a slotted dataclass")
    if hasattr(cls, "__post_init__"):
        raise TypeError(f"{cls.__name__} has a __post_init__, which the constructor skips")
    names = [f.name for f in dataclasses.fields(cls)]
    namespace: dict[str, Any] = {"new": object.__new__, "cls": cls}
    arguments = [f"a{i}" for i in range(len(names))]
    lines = [f"def construct({', '.join(arguments)}):", "    o = new(cls)"]
    for i, name in enumerate(names):
        namespace[f"set{i}"] = getattr(cls, name).__set__
        lines.append(f"    set{i}(o, a{i})")
    lines.append("    return o")
    exec(compile("\n".join(lines), f"<{cls.__name__} constructor>", "exec"), namespace)
    construct: Callable[..., V] = namespace["construct"]
    return construct
