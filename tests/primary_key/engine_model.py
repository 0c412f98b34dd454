"""An in-memory model of the aggregation and partial-update merge engines: each key's
rows folded one after another, as Paimon's merge functions fold them."""

from __future__ import annotations

from typing import Any

RETRACT = {"-U", "-D"}


def fold_aggregate(function: str, ignore_retract: bool, rows: list[tuple[str, Any]]) -> Any:
    """One column's aggregate of (kind, value) rows in sequence order."""
    acc: Any = None
    initialized = False
    for kind, value in rows:
        retract = kind in RETRACT
        if retract and ignore_retract:
            continue
        if retract:
            if function == "sum":
                acc = (
                    (-value if value is not None else None)
                    if acc is None
                    else (acc if value is None else acc - value)
                )
            elif function == "last_value":
                acc = None
            elif function == "last_non_null_value":
                acc = None if value is not None else acc
            else:
                raise AssertionError(f"{function} takes no retractions")
            continue
        if function == "last_value":
            acc = value
        elif function == "last_non_null_value":
            acc = value if value is not None else acc
        elif function == "first_value":
            if not initialized:
                initialized, acc = True, value
        elif function == "first_non_null_value":
            if not initialized and value is not None:
                initialized, acc = True, value
        elif value is None:
            continue
        elif acc is None:
            acc = value
        elif function == "sum":
            acc += value
        elif function == "product":
            acc *= value
        elif function == "max":
            acc = max(acc, value)
        elif function == "min":
            acc = min(acc, value)
        elif function == "listagg":
            acc = f"{acc},{value}"
        elif function == "bool_and":
            acc = acc and value
        elif function == "bool_or":
            acc = acc or value
        else:
            raise AssertionError(function)
    return acc


def aggregate_rows(
    history: dict[Any, list[tuple[str, dict[str, Any]]]],
    functions: dict[str, tuple[str, bool]],
    key: str,
) -> list[dict[str, Any]]:
    """The rows a read returns: a key with one row keeps it as it is (a lone retraction
    hides the key), a key with more folds them."""
    out = []
    for k, rows in sorted(history.items()):
        if len(rows) == 1:
            kind, values = rows[0]
            if kind not in RETRACT:
                out.append(dict(values))
            continue
        row = {key: k}
        for column, (function, ignore) in functions.items():
            row[column] = fold_aggregate(function, ignore, [(kd, v[column]) for kd, v in rows])
        out.append(row)
    return out


def partial_update_rows(
    history: dict[Any, list[tuple[str, dict[str, Any]]]], columns: list[str], key: str
) -> list[dict[str, Any]]:
    """Rows of a partial-update table with partial-update.remove-record-on-delete: a key's
    -D starts an empty row, -U rows are skipped, inserts set their non-null columns."""
    out = []
    for k, rows in sorted(history.items()):
        if len(rows) == 1:
            kind, values = rows[0]
            if kind not in RETRACT:
                out.append(dict(values))
            continue
        row: dict[str, Any] = dict.fromkeys(columns)
        deleted = False
        for kind, values in rows:
            deleted = kind == "-D"
            if kind == "-D":
                row = dict.fromkeys(columns)
            elif kind not in RETRACT:
                row.update({c: v for c, v in values.items() if v is not None})
        if not deleted:
            row[key] = k
            out.append(row)
    return out


def _before(x: tuple[Any, ...], y: tuple[Any, ...]) -> bool:
    """x < y comparing column by column, nulls first (Paimon's sequence comparator)."""
    for a, b in zip(x, y, strict=True):
        if a == b:
            continue
        if a is None:
            return True
        if b is None:
            return False
        return bool(a < b)
    return False


def _agg(function: str, acc: Any, value: Any) -> Any:
    if function == "last_value":
        return value
    if function == "last_non_null_value":
        return acc if value is None else value
    if value is None:
        return acc
    if acc is None:
        return value
    if function == "sum":
        return acc + value
    if function == "listagg":
        return f"{acc},{value}"
    if function == "max":
        return max(acc, value)
    raise AssertionError(function)


def _retract(function: str, acc: Any, value: Any) -> Any:
    if function == "last_value":
        return None
    if function == "last_non_null_value":
        return None if value is not None else acc
    if function == "sum":
        if value is None:
            return acc
        return -value if acc is None else acc - value
    raise AssertionError(f"{function} takes no retractions")


def _fold_groups(
    rows: list[tuple[str, dict[str, Any]]],
    columns: list[str],
    groups: list[tuple[tuple[str, ...], tuple[str, ...], bool]],
    functions: dict[str, tuple[str, bool]],
) -> tuple[dict[str, Any], bool]:
    row: dict[str, Any] = dict.fromkeys(columns)
    grouped = {c for seq, members, _ in groups for c in (*seq, *members)}
    # first_value's and first_non_null_value's "initialized", which a removal keeps.
    started: dict[str, bool] = {}
    deleted = False
    for kind, values in rows:
        deleted = False
        if kind in RETRACT:
            for seq, members, removes in groups:
                mine = tuple(values[s] for s in seq)
                if all(v is None for v in mine):
                    continue
                newer = not _before(mine, tuple(row[s] for s in seq))
                if newer and kind == "-D" and removes:
                    row, deleted = dict.fromkeys(columns), True
                    break
                if newer:
                    row.update(zip(seq, mine, strict=True))
                for m in members:
                    function, ignore = functions.get(m, (None, False))
                    if function is None:
                        row[m] = None if newer else row[m]
                    elif not ignore:
                        row[m] = _retract(function, row[m], values[m])
            continue
        for c in columns:
            if c in grouped:
                continue
            if c in functions:
                row[c] = _agg(functions[c][0], row[c], values[c])
            elif values[c] is not None:
                row[c] = values[c]
        for seq, members, _ in groups:
            mine = tuple(values[s] for s in seq)
            if all(v is None for v in mine):
                continue
            newer = not _before(mine, tuple(row[s] for s in seq))
            if newer:
                row.update(zip(seq, mine, strict=True))
            for m in members:
                function = functions.get(m, (None, False))[0]
                if function is None:
                    row[m] = values[m] if newer else row[m]
                elif function.startswith("first_"):
                    acc, value = (row[m], values[m]) if newer else (values[m], row[m])
                    began = started.get(m, False)
                    if not began and (function == "first_value" or value is not None):
                        started[m] = True
                        row[m] = value
                    else:
                        row[m] = acc
                elif newer:
                    row[m] = _agg(function, row[m], values[m])
                else:
                    row[m] = _agg(function, values[m], row[m])
    return row, deleted


def partial_update_group_rows(
    history: dict[Any, list[tuple[str, dict[str, Any]]]],
    columns: list[str],
    groups: list[tuple[tuple[str, ...], tuple[str, ...], bool]],
    functions: dict[str, tuple[str, bool]],
    key: str,
) -> list[dict[str, Any]]:
    """Rows of a partial-update table with sequence groups ((sequence columns, member
    columns, whether a -D of the group removes the row)) and aggregate functions
    (column: (function, ignore-retract)), each key's rows folded in sequence order.
    The key column holds the key (where Paimon's fold leaves it null: a row emptied by
    a removal that only retractions follow)."""
    out = []
    for k, rows in sorted(history.items()):
        if len(rows) == 1:
            kind, values = rows[0]
            if kind not in RETRACT:
                out.append(dict(values))
            continue
        row, deleted = _fold_groups(rows, columns, groups, functions)
        if not deleted:
            out.append({**row, key: k})
    return out
