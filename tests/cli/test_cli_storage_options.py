"""``--storage-option KEY=VALUE``: before or after the command, repeatable, the only
configuration of an S3 store (moto, no AWS environment); unknown keys and malformed
pairs refused; the commit lock of a store without an atomic create."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import shoal
from tests.cli_runs import run, run_json
from tests.io.test_storage_options import SECRET, bucket, no_aws_env, paimon_keys  # noqa: F401
from tests.s3.conftest import s3_endpoint  # noqa: F401


def flags(options: dict[str, str]) -> list[str]:
    return [arg for key, value in options.items() for arg in ("--storage-option", f"{key}={value}")]


def test_an_s3_warehouse_configured_by_storage_options_only(
    no_aws_env: None,  # noqa: F811
    s3_endpoint: str,  # noqa: F811
    bucket: str,  # noqa: F811
) -> None:
    wh = f"s3://{bucket}/wh"
    before = flags(paimon_keys(s3_endpoint))
    created = run_json(*before, "table", "create", "db.t", "-w", wh, "--schema", "id bigint")
    assert created["table"] == "db.t"
    options = paimon_keys(s3_endpoint)
    shoal.Catalog(wh, storage_options=options).get_table("db.t").append(
        {"id": [1, 2, 3]}  # type: ignore[arg-type]
    )
    # After the command, and split around it.
    after = run_json("table", "show", "db.t", "-w", wh, *flags(options))
    assert after["record_count"] == 3
    keys = list(options.items())
    split = run_json(*flags(dict(keys[:2])), "read", "db.t", "-w", wh, *flags(dict(keys[2:])))
    assert sorted(r["id"] for r in split) == [1, 2, 3]
    by_path = run_json("read", f"{wh}/db.db/t", *flags(options))
    assert len(by_path) == 3


def test_unknown_keys_and_malformed_pairs_are_refused(
    tmp_path: Path,
    bucket: str,  # noqa: F811
) -> None:
    result = run(
        "--storage-option",
        f"s3.secret-kye={SECRET}",
        "table",
        "show",
        f"s3://{bucket}/wh/db.db/t",
        "--output",
        "json",
    )
    assert result.exit_code != 0
    assert "s3.secret-key" in result.stderr
    assert SECRET not in result.output + result.stderr
    malformed = run("table", "list", "-w", str(tmp_path), "--storage-option", "s3.endpoint")
    assert malformed.exit_code == 2
    assert "KEY=VALUE" in malformed.stderr
    local = run("table", "list", "-w", str(tmp_path), "--storage-option", "s3.region=x")
    assert local.exit_code != 0
    assert "local path" in local.stderr


@pytest.mark.parametrize("with_lock", [False, True])
def test_a_store_without_an_atomic_create_needs_the_lock(tmp_path: Path, with_lock: bool) -> None:
    lock = ["--storage-option", f"lock.file={tmp_path / 'commit.lock'}"] if with_lock else []
    result = run(
        *lock, "table", "create", "mock:///wh/db.db/t", "--schema", "id bigint", "-o", "json"
    )
    if with_lock:
        assert result.exit_code == 0, result.stderr
        assert json.loads(result.stdout)["table"] == "db.t"
    else:
        assert result.exit_code != 0
        assert "lock.file" in result.stderr
        assert "two writers" in result.stderr
