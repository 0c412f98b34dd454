"""Apache Paimon's Java implementation on the scale workload's tables.

``bench/java/ScaleProbe.java`` runs one operation (plan the full scan, plan one
partition, expire the oldest snapshots) in a fresh JVM against the Paimon 1.0 bundle
jar that the interop tests download and cache (``tests/interop/java_paimon.py``,
under ``$SHOAL_JAVA_PAIMON_CACHE``). The probe is compiled with javac on first use,
keyed by the hash of its source, into the same cache.

The JVM runs with the flags a user's would: none beyond the defaults (tiered C1 and
C2 compilation, the G1 collector, a heap of up to a quarter of the machine's memory),
plus UTC as the time zone. The probe times opening the table by path and the
operation, and reports its peak resident memory above what it held before the clock
started (``VmHWM`` reset through ``/proc/self/clear_refs``), as shoal's worker does.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import tempfile
import zipfile
from functools import cache
from pathlib import Path
from typing import Any

from tests.interop import java_paimon
from tests.interop.pypaimon_oracle import _file_lock

SOURCE = Path(__file__).with_name("java") / "ScaleProbe.java"
MAIN_CLASS = "ScaleProbe"
VERSION: java_paimon.Version = "1.0"
JVM_FLAGS = ("-Duser.timezone=UTC",)
JVM_FLAGS_TEXT = (
    "the default flags: tiered C1 and C2 compilation, the G1 collector, the default heap"
)

PLAN_FULL = "plan-full"
PLAN_FILTERED = "plan-filtered"
EXPIRE = "expire"


class JavaProbeError(RuntimeError):
    """The probe could not be compiled, or its JVM failed."""


@cache
def classpath() -> tuple[Path, ...]:
    """The Paimon 1.0 jar and the compiled probe, downloading and compiling on first use."""
    paimon = java_paimon.install(VERSION).classpath[0]
    key = hashlib.sha256(SOURCE.read_bytes()).hexdigest()[:16]
    probe = paimon.parent / f"scale-probe-{key}.jar"
    if not probe.exists():
        with _file_lock(java_paimon.cache_dir() / "install.lock"):
            if not probe.exists():
                for stale in paimon.parent.glob("scale-probe-*.jar"):
                    stale.unlink()
                _compile(paimon, probe)
    return paimon, probe


def _compile(paimon: Path, target: Path) -> None:
    with tempfile.TemporaryDirectory(prefix="scale-probe-", dir=target.parent) as tmp:
        classes = Path(tmp) / "classes"
        cmd = ["javac", "-nowarn", "-encoding", "UTF-8", "-d", str(classes)]
        cmd += ["-cp", str(paimon), str(SOURCE)]
        done = subprocess.run(cmd, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            raise JavaProbeError(f"javac {SOURCE.name} failed:\n{done.stderr}")
        partial = Path(tmp) / "probe.jar"
        with zipfile.ZipFile(partial, "w", zipfile.ZIP_DEFLATED) as jar:
            for path in sorted(classes.rglob("*.class")):
                jar.write(path, path.relative_to(classes).as_posix())
        os.replace(partial, target)


def data_files(table_path: str) -> int:
    """The files under the table's partition directories (``<key>=<value>/...``)."""
    root = Path(table_path)
    return sum(
        len(names)
        for top in root.iterdir()
        if top.is_dir() and "=" in top.name
        for _, _, names in os.walk(top)
    )


def run(op: str, table_path: str, arg: str) -> dict[str, Any]:
    """One operation in a fresh JVM: ``arg`` is the ``dt`` value for ``plan-filtered``,
    the number of snapshots for ``expire``. Returns what the probe reports (seconds,
    peak_mib, hwm_mib, result), the expiration's result with the data files it deleted
    (counted on disk around the JVM, untimed)."""
    before = data_files(table_path) if op == EXPIRE else 0
    with tempfile.TemporaryDirectory(prefix="scale-probe-run-") as tmp:
        out = Path(tmp) / "out.json"
        cp = os.pathsep.join(map(str, classpath()))
        cmd = ["java", *JVM_FLAGS, "-cp", cp, MAIN_CLASS, op, table_path, arg, str(out)]
        done = subprocess.run(cmd, capture_output=True, text=True, check=False)
        if done.returncode != 0 or not out.exists():
            raise JavaProbeError(
                f"{' '.join(cmd)} exited with {done.returncode}:\n{done.stderr[-4000:]}"
            )
        answer: dict[str, Any] = json.loads(out.read_text(encoding="utf-8"))
    if op == EXPIRE:
        answer["result"]["deleted_data_files"] = before - data_files(table_path)
    return answer
