"""The real pypaimon as a test oracle, run in its own venv.

pypaimon 2.1.0 pins pyarrow<20 and pandas<3, and shoal's env has the newest pyarrow, so the
two cannot share an interpreter. This module creates (or reuses) a dedicated venv and
drives `pypaimon_cli.py` in it through subprocesses. Rows cross the process boundary as
Arrow IPC files. If the oracle cannot be installed, this module raises, so the tests fail
instead of being skipped silently.
"""

from __future__ import annotations

import fcntl
import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pyarrow as pa
from pyarrow import ipc

PYPAIMON_VERSION = "2.1.0"
REPO_ROOT = Path(__file__).resolve().parents[2]
CLI = Path(__file__).with_name("pypaimon_cli.py")
VENV_ENV_VAR = "SHOAL_PYPAIMON_VENV"


class PypaimonError(RuntimeError):
    """The pypaimon subprocess failed; the message carries its stderr."""


def venv_dir() -> Path:
    """The oracle venv: $SHOAL_PYPAIMON_VENV, else <repo>/.venvs/pypaimon (git-ignored)."""
    configured = os.environ.get(VENV_ENV_VAR)
    return Path(configured).expanduser().resolve() if configured else REPO_ROOT / ".venvs/pypaimon"


def _clean_env() -> dict[str, str]:
    """Our environment minus variables that would leak shoal's packages into the venv."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    env["PYTHONNOUSERSITE"] = "1"
    return env


def _has_pypaimon(python: Path) -> bool:
    if not python.exists():
        return False
    probe = subprocess.run(
        [str(python), "-c", "import importlib.metadata as m; print(m.version('pypaimon'))"],
        capture_output=True,
        text=True,
        env=_clean_env(),
        check=False,
    )
    return probe.returncode == 0 and probe.stdout.strip() == PYPAIMON_VERSION


@contextmanager
def _file_lock(path: Path) -> Iterator[None]:
    """Cross-process exclusive lock, so parallel pytest workers install the venv only once."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _run_or_raise(cmd: list[str], what: str) -> None:
    done = subprocess.run(cmd, capture_output=True, text=True, env=_clean_env(), check=False)
    if done.returncode != 0:
        raise RuntimeError(
            f"{what} failed (exit {done.returncode}): {' '.join(cmd)}\n"
            f"--- stdout ---\n{done.stdout}\n--- stderr ---\n{done.stderr}"
        )


_python_cache: dict[Path, Path] = {}


def pypaimon_python() -> Path:
    """The oracle venv's interpreter, creating the venv and installing pypaimon on first use."""
    venv = venv_dir()
    if venv in _python_cache:
        return _python_cache[venv]
    python = venv / "bin" / "python"  # POSIX layout, like the fcntl lock
    if not _has_pypaimon(python):
        with _file_lock(venv.with_name(venv.name + ".lock")):
            if not _has_pypaimon(python):  # another process may have finished meanwhile
                if not python.exists():
                    _run_or_raise(
                        [sys.executable, "-m", "venv", "--clear", str(venv)], "creating venv"
                    )
                _run_or_raise(
                    [
                        str(python),
                        "-m",
                        "pip",
                        "install",
                        "--disable-pip-version-check",
                        f"pypaimon=={PYPAIMON_VERSION}",
                    ],
                    f"pip install pypaimon=={PYPAIMON_VERSION}",
                )
                if not _has_pypaimon(python):
                    raise RuntimeError(f"pypaimon {PYPAIMON_VERSION} still missing in {venv}")
    _python_cache[venv] = python
    return python


def _write_ipc(table: pa.Table, path: Path) -> None:
    with ipc.new_file(str(path), table.schema) as writer:
        writer.write_table(table)


def _read_ipc(path: Path) -> pa.Table:
    with pa.OSFile(str(path), "rb") as source:  # reads into memory: the file is temporary
        return ipc.open_file(source).read_all()


class PypaimonOracle:
    """Reads and writes Paimon tables with the real pypaimon, for cross-checking shoal."""

    def __init__(self, python: Path | None = None) -> None:
        self.python = python or pypaimon_python()

    def _call(self, command: str, *args: str) -> dict[str, Any]:
        cmd = [str(self.python), str(CLI), command, *args]
        done = subprocess.run(cmd, capture_output=True, text=True, env=_clean_env(), check=False)
        if done.returncode != 0:
            raise PypaimonError(
                f"pypaimon {command} failed (exit {done.returncode}): {' '.join(cmd)}\n"
                f"--- stderr ---\n{done.stderr}"
            )
        try:
            result: dict[str, Any] = json.loads(done.stdout)
        except json.JSONDecodeError as exc:
            raise PypaimonError(
                f"pypaimon {command} printed no JSON: {exc}\n--- stdout ---\n{done.stdout}\n"
                f"--- stderr ---\n{done.stderr}"
            ) from exc
        return result

    def read(
        self,
        warehouse: str | os.PathLike[str],
        table: str,
        *,
        snapshot_id: int | None = None,
        tag: str | None = None,
        timestamp_ms: int | None = None,
        columns: Sequence[str] | None = None,
    ) -> pa.Table:
        """All rows of `table` ("db.name"), at the latest snapshot or a time-travel point."""
        args = ["--warehouse", str(warehouse), "--table", table]
        if snapshot_id is not None:
            args += ["--snapshot-id", str(snapshot_id)]
        if tag is not None:
            args += ["--tag", tag]
        if timestamp_ms is not None:
            args += ["--timestamp-ms", str(timestamp_ms)]
        if columns:
            args += ["--columns", ",".join(columns)]
        with tempfile.TemporaryDirectory(prefix="pypaimon-read-") as tmp:
            out = Path(tmp) / "out.arrow"
            self._call("read", *args, "--out", str(out))
            return _read_ipc(out)

    def read_each(
        self, warehouse: str | os.PathLike[str], table: str, snapshot_ids: Sequence[int]
    ) -> dict[int, pa.Table]:
        """All rows of each snapshot in `snapshot_ids`, read by one pypaimon process."""
        args = ["--warehouse", str(warehouse), "--table", table]
        for snapshot_id in snapshot_ids:
            args += ["--snapshot-id", str(snapshot_id)]
        with tempfile.TemporaryDirectory(prefix="pypaimon-read-") as tmp:
            self._call("read-each", *args, "--out-dir", tmp)
            return {i: _read_ipc(Path(tmp) / f"{i}.arrow") for i in snapshot_ids}

    def write(
        self,
        warehouse: str | os.PathLike[str],
        table: str,
        batches: Sequence[pa.Table],
        *,
        partition_keys: Sequence[str] = (),
        primary_keys: Sequence[str] = (),
        options: Mapping[str, str] | None = None,
        mode: str = "append",
        static_partition: Mapping[str, str] | None = None,
    ) -> list[int]:
        """Create `table` if absent (schema of the first batch), then commit each batch
        separately. Returns the ids of the snapshots created, in order."""
        if not batches:
            raise ValueError("write needs at least one batch")
        args = ["--warehouse", str(warehouse), "--table", table, "--mode", mode]
        if partition_keys:
            args += ["--partition-keys", ",".join(partition_keys)]
        if primary_keys:
            args += ["--primary-keys", ",".join(primary_keys)]
        for key, value in (options or {}).items():
            args += ["--option", f"{key}={value}"]
        for key, value in (static_partition or {}).items():
            args += ["--static-partition", f"{key}={value}"]
        with tempfile.TemporaryDirectory(prefix="pypaimon-write-") as tmp:
            for i, batch in enumerate(batches):
                path = Path(tmp) / f"in-{i}.arrow"
                _write_ipc(batch, path)
                args += ["--input", str(path)]
            result = self._call("write", *args)
        return [int(i) for i in result["snapshot_ids"]]

    def snapshots(self, warehouse: str | os.PathLike[str], table: str) -> list[dict[str, Any]]:
        """Existing snapshots, oldest first: id, commit_kind, record counts, time_millis."""
        result = self._call("snapshots", "--warehouse", str(warehouse), "--table", table)
        snapshots: list[dict[str, Any]] = result["snapshots"]
        return snapshots

    def create_tag(
        self,
        warehouse: str | os.PathLike[str],
        table: str,
        tag: str,
        *,
        snapshot_id: int | None = None,
        time_retained: str | None = None,
    ) -> None:
        """Tag `snapshot_id` (the latest snapshot when None) with pypaimon; `time_retained`
        is a retention in pypaimon's duration syntax ("1d", "12h")."""
        args = ["--warehouse", str(warehouse), "--table", table, "--tag", tag]
        if snapshot_id is not None:
            args += ["--snapshot-id", str(snapshot_id)]
        if time_retained is not None:
            args += ["--time-retained", time_retained]
        self._call("create-tag", *args)

    def tags(self, warehouse: str | os.PathLike[str], table: str) -> list[dict[str, Any]]:
        """The tags pypaimon lists, by name: name, snapshot_id, create_time (ISO string or
        None), time_retained_seconds (float or None), and system_row (the tag's row of
        pypaimon's `$tags` table, times as ISO strings)."""
        result = self._call("tags", "--warehouse", str(warehouse), "--table", table)
        tags: list[dict[str, Any]] = result["tags"]
        return tags
