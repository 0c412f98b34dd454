"""An end-to-end tour of shoal: create a partitioned table, commit, time travel, drop.

Run it with ``python examples/quickstart.py [WAREHOUSE]``; without an argument it
uses a temporary folder.
"""

from __future__ import annotations

import sys
import tempfile

import pyarrow as pa

import shoal


def main(warehouse: str) -> None:
    catalog = shoal.Catalog(warehouse)
    schema = pa.schema([("dt", pa.string()), ("id", pa.int64()), ("amount", pa.float64())])
    table = catalog.create_table("shop.orders", schema, partition_keys=["dt"])

    for day in (1, 2, 3):
        rows = pa.table({
            "dt": [f"2026-11-0{day}"] * 4,
            "id": [day * 10 + i for i in range(4)],
            "amount": [day * 1.5 + i for i in range(4)],
        })
        snapshot = table.append(rows)
        print(f"snapshot {snapshot.id}: +{snapshot.delta_record_count} rows "
              f"({snapshot.total_record_count} in all)")

    latest = table.to_arrow(filter=[("dt", "=", "2026-11-02"), ("id", ">", 20)])
    print("orders of 2026-11-02 with id > 20:", latest.column("id").to_pylist())

    table.drop_partitions([{"dt": "2026-11-01"}])
    print("rows now:", table.to_arrow().num_rows,
          "| rows at snapshot 3:", table.to_arrow(snapshot_id=3).num_rows)

    print(table.system_table("snapshots").select(
        ["snapshot_id", "commit_kind", "delta_record_count", "total_record_count"]
    ).to_pandas().to_string(index=False))
    print(f"table at {table.path}")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else tempfile.mkdtemp(prefix="shoal-"))
