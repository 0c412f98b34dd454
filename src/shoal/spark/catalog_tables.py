"""Catalog tables of the ``shoal`` format: refused where Spark lets the source see them.

Spark's session catalog (4.3) stores the ``OPTIONS``, ``LOCATION`` and
``TBLPROPERTIES`` of ``CREATE TABLE ... USING shoal`` but hands the source none of
them when the table is later read or written, so such a table fails at its first
query. Spark calls the source while it creates the table only when the statement has
no column list: ``schema()`` then gets the table's options together with the
catalog's own properties (``provider``, ``owner``, ``location``). That is where
:func:`refuse_catalog_create` stops it, before the catalog entry exists. A
``CREATE TABLE`` with a column list calls no Python code at all; ``saveAsTable`` and
CTAS reach the writer, which gets the ``path`` of ``.option("path", ...)`` but
nothing that tells it apart from ``save(path)`` (CTAS in SQL gets no options, and
fails for want of a path). :func:`shoal.spark.register_table` makes catalog tables
that work: a format bound to the table's path.
"""

from __future__ import annotations

from collections.abc import Mapping

from shoal.errors import UnsupportedFeatureError

# What Spark adds to a table's options when its session catalog creates the table.
CREATE_MARKER = "provider"

REGISTER_HINT = (
    "shoal.spark.register_table(spark, name, path) creates a catalog table bound to the "
    "shoal table at path (create that with shoal.Catalog.create_table or "
    "shoal.create_table first), and a temporary view works too: CREATE TEMPORARY VIEW v "
    "USING shoal OPTIONS (path '...')"
)


def refuse_catalog_create(options: Mapping[str, str]) -> None:
    """Raises UnsupportedFeatureError when ``options`` are those Spark's session catalog
    hands ``schema()`` while it creates a table ``USING shoal``: the table would be
    created and then fail at its first query."""
    if CREATE_MARKER not in {str(k).lower() for k in options}:
        return
    raise UnsupportedFeatureError(
        "CREATE TABLE ... USING shoal is refused: Spark's session catalog keeps the "
        "table's OPTIONS (path) and LOCATION but hands the shoal source none of them when "
        "the table is read or written, so the table would fail at its first query. "
        + REGISTER_HINT,
        feature="CREATE TABLE USING shoal",
    )
