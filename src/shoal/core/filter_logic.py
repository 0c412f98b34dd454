"""Filters as boolean trees, brought to the OR of ANDs that pruning and reads use.

Filters written as text and pyarrow expressions are read into a tree of ``And``,
``Or`` and ``Not`` over conditions, each condition a ``(column, op, value)`` tuple of
:func:`shoal.core.predicate.parse_filter`'s DNF (SQL comparisons: a null satisfies
none of them). ``Not`` is pushed down to the conditions by De Morgan's laws, which
hold in SQL's three-valued logic when each condition is replaced by the condition
that is true exactly where it is false: ``not a < 5`` is ``a >= 5`` (a null satisfies
neither), ``not a in (1, 2)`` is ``a not in (1, 2)``, ``not a is null`` is
``a is not null``. On floating-point columns pyarrow's NaN is neither below nor at or
above a number, so a negated ``<``, ``<=``, ``>`` or ``>=`` there has no such
condition and is refused.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from shoal.errors import InvalidFilterError

Condition = tuple[str, str, Any]

# A DNF larger than this is refused rather than planned: each AND group is checked
# against every file's statistics.
MAX_GROUPS = 256

_NEGATED = {
    "=": "!=",
    "!=": "=",
    "<": ">=",
    ">=": "<",
    ">": "<=",
    "<=": ">",
    "in": "not in",
    "not in": "in",
}


@dataclass(frozen=True, slots=True)
class And:
    children: tuple[Node, ...]


@dataclass(frozen=True, slots=True)
class Or:
    children: tuple[Node, ...]


@dataclass(frozen=True, slots=True)
class Not:
    child: Node


@dataclass(frozen=True, slots=True)
class Atom:
    condition: Condition


Node = And | Or | Not | Atom


def to_dnf(node: Node, is_floating: Callable[[str], bool]) -> list[list[Condition]]:
    """``node`` as OR-ed groups of AND-ed conditions.

    Raises:
        InvalidFilterError: a negated range comparison on a floating-point column, or
            a filter whose DNF would hold more than ``MAX_GROUPS`` groups.
    """
    return [list(group) for group in _dnf(node, False, is_floating)]


def _dnf(
    node: Node, negated: bool, is_floating: Callable[[str], bool]
) -> list[tuple[Condition, ...]]:
    if isinstance(node, Not):
        return _dnf(node.child, not negated, is_floating)
    if isinstance(node, Atom):
        return [(_negate(node.condition, is_floating) if negated else node.condition,)]
    conjunctive = isinstance(node, And) != negated
    parts = [_dnf(child, negated, is_floating) for child in node.children]
    if not conjunctive:
        groups = [group for part in parts for group in part]
        _check_size(len(groups))
        return groups
    product: list[tuple[Condition, ...]] = [()]
    for part in parts:
        _check_size(len(product) * len(part))
        product = [left + right for left in product for right in part]
    return product


def _check_size(groups: int) -> None:
    if groups > MAX_GROUPS:
        raise InvalidFilterError(
            f"the filter expands to more than {MAX_GROUPS} OR-ed groups of conditions; "
            "write it with fewer nested 'or's under 'and' (e.g. 'c in (...)' for "
            "alternatives of one column)"
        )


def _negate(condition: Condition, is_floating: Callable[[str], bool]) -> Condition:
    column, op, value = condition
    if op in ("<", "<=", ">", ">=") and is_floating(column):
        raise InvalidFilterError(
            f"'not ({column} {op} ...)' on the floating-point column {column!r} would "
            "include NaN, which no comparison states; write the comparison without "
            "'not' (e.g. 'not x < 1' as 'x >= 1')"
        )
    return (column, _NEGATED[op], value)


def conjoin(nodes: list[Node]) -> Node:
    """Nodes that must all hold, as one node."""
    return nodes[0] if len(nodes) == 1 else And(tuple(nodes))


def disjoin(nodes: list[Node]) -> Node:
    """Nodes of which one must hold, as one node."""
    return nodes[0] if len(nodes) == 1 else Or(tuple(nodes))
