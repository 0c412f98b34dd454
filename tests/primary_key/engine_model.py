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
