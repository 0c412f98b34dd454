"""The freshness of a table as Prometheus metrics, in the text exposition format.

One gauge per field of ``Freshness``, each labelled with the table's name, plus the
id of the snapshot they describe. A value that does not exist (no watermark on a
table without an event-time column, no file below the top level) is left out rather
than written as a number it is not. Rendered by ``prometheus_client``, so a
scheduler or dashboard scraping a file or an HTTP endpoint reads it as it reads any
exporter's.
"""

from __future__ import annotations

from collections.abc import Iterator

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from shoal.event_time.freshness import Freshness

# (metric name, Freshness attribute, help text)
GAUGES: tuple[tuple[str, str, str], ...] = (
    (
        "shoal_read_optimized_watermark_ms",
        "watermark_ms",
        "Every row with an event time below it (epoch ms) is in the read-optimized view",
    ),
    (
        "shoal_min_uncompacted_event_time_ms",
        "min_uncompacted_event_time_ms",
        "Smallest event time (epoch ms) in a file below the top level",
    ),
    (
        "shoal_buckets_with_uncompacted_files",
        "buckets_with_uncompacted_files",
        "Partition-buckets holding files below the top level",
    ),
    ("shoal_uncompacted_files", "uncompacted_file_count", "Files below the top level"),
    ("shoal_uncompacted_bytes", "uncompacted_bytes", "Bytes of the files below the top level"),
)
SNAPSHOT_GAUGE = "shoal_snapshot_id"


class _FreshnessCollector(Collector):
    def __init__(self, table: str, freshness: Freshness, snapshot_id: int | None) -> None:
        self._table = table
        self._freshness = freshness
        self._snapshot_id = snapshot_id

    def collect(self) -> Iterator[Metric]:
        if self._snapshot_id is not None:
            family = GaugeMetricFamily(
                SNAPSHOT_GAUGE, "Id of the snapshot these metrics describe", labels=["table"]
            )
            family.add_metric([self._table], self._snapshot_id)
            yield family
        for name, attribute, text in GAUGES:
            value = getattr(self._freshness, attribute)
            family = GaugeMetricFamily(name, text, labels=["table"])
            if value is not None:
                family.add_metric([self._table], value)
            yield family


def prometheus_text(freshness: Freshness, *, table: str, snapshot_id: int | None) -> str:
    """``freshness`` in Prometheus' text exposition format (version 0.0.4).

    Args:
        freshness: what ``Table.freshness()`` returned.
        table: the value of the ``table`` label, e.g. ``db.events``.
        snapshot_id: the snapshot ``freshness`` describes (None: no commit yet).
    """
    registry = CollectorRegistry(auto_describe=False)
    registry.register(_FreshnessCollector(table, freshness, snapshot_id))
    return generate_latest(registry).decode()
