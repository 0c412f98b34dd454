"""Spark processes outside the test process: a standalone master and its workers, a
Spark Connect server, and the Python scenario runner that drives either.

Every process starts from pyspark's own launchers (``bin/spark-class``,
``bin/spark-submit``) in a clean environment: no AWS variables, so the executors of
the cluster reach S3 only through what the application configures for them
(``spark.executorEnv.*``); 127.0.0.1 only; small heaps and the serial collector.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import pyspark

SPARK_HOME = Path(pyspark.__file__).resolve().parent
RUNNER = Path(__file__).resolve().parent / "spark_scenarios.py"
JVM_OPTIONS = "-XX:+UseSerialGC -XX:TieredStopAtLevel=1"
RESULT = "RESULT "  # the prefix of the runner's answer lines


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def clean_environment(conf_dir: Path, extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment of a Spark process: the PATH, HOME and Java, 127.0.0.1, an
    empty configuration directory, and nothing of the AWS SDKs."""
    env = {k: os.environ[k] for k in ("PATH", "HOME", "JAVA_HOME", "LANG") if k in os.environ}
    env |= {
        "SPARK_HOME": str(SPARK_HOME),
        "SPARK_CONF_DIR": str(conf_dir),
        "SPARK_LOCAL_IP": "127.0.0.1",
        "SPARK_DAEMON_MEMORY": "256m",
        "SPARK_DAEMON_JAVA_OPTS": JVM_OPTIONS,
    }
    return env | dict(extra or {})


def wait_for(what: str, check: Callable[[], bool], timeout: float, logs: list[Path]) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(0.5)
    tails = "\n".join(f"--- {p}\n{tail(p)}" for p in logs)
    raise TimeoutError(f"{what} within {timeout:.0f} s\n{tails}")


def tail(path: Path, lines: int = 40) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


@dataclass
class Daemons:
    """Processes started for the session, stopped in reverse order."""

    processes: list[subprocess.Popen[bytes]] = field(default_factory=list)
    logs: list[IO[bytes]] = field(default_factory=list)

    def start(self, args: list[str], env: Mapping[str, str], log: Path) -> subprocess.Popen[bytes]:
        out = log.open("wb")
        self.logs.append(out)
        process = subprocess.Popen(
            args, env=dict(env), stdout=out, stderr=subprocess.STDOUT, start_new_session=True
        )
        self.processes.append(process)
        return process

    def stop(self) -> None:
        for process in reversed(self.processes):
            stop_group(process)
        for out in self.logs:
            out.close()


def stop_group(process: subprocess.Popen[Any]) -> None:
    """Stop a process started in its own session, with everything it started."""
    if process.poll() is None:
        try:
            os.killpg(process.pid, signal.SIGTERM)
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=20)
        except ProcessLookupError:
            pass
    else:  # the launcher is gone; what it started may not be
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)


@dataclass(frozen=True)
class Standalone:
    """A running standalone master with its workers."""

    master_url: str
    ui_url: str
    work_dirs: tuple[Path, ...]

    def state(self) -> dict[str, Any]:
        with urllib.request.urlopen(f"{self.ui_url}/json/", timeout=5) as response:
            state: dict[str, Any] = json.load(response)
            return state


def start_standalone(daemons: Daemons, root: Path, workers: int = 2) -> Standalone:
    """A master and ``workers`` workers of two cores and 2 GB each, registered: room for
    two applications at a time, each with one single-core executor per worker."""
    conf = root / "conf"
    conf.mkdir(parents=True, exist_ok=True)
    port, ui_port = free_port(), free_port()
    master_opts = "-Dspark.master.rest.enabled=false"
    env = clean_environment(conf, {"SPARK_MASTER_OPTS": master_opts})
    spark_class = str(SPARK_HOME / "bin" / "spark-class")
    master_log = root / "master.log"
    daemons.start(
        [
            spark_class,
            "org.apache.spark.deploy.master.Master",
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--webui-port",
            str(ui_port),
        ],
        env,
        master_log,
    )
    cluster = Standalone(f"spark://127.0.0.1:{port}", f"http://127.0.0.1:{ui_port}", ())
    logs = [master_log]
    wait_for("the master did not answer", lambda: _answers(cluster), 120, logs)
    work_dirs = []
    for index in range(workers):
        work_dir = root / f"worker-{index}"
        work_dir.mkdir()
        work_dirs.append(work_dir)
        log = root / f"worker-{index}.log"
        logs.append(log)
        daemons.start(
            [
                spark_class,
                "org.apache.spark.deploy.worker.Worker",
                cluster.master_url,
                "--host",
                "127.0.0.1",
                "--cores",
                "2",
                "--memory",
                "2g",
                "--work-dir",
                str(work_dir),
                "--webui-port",
                str(free_port()),
            ],
            env,
            log,
        )
    cluster = Standalone(cluster.master_url, cluster.ui_url, tuple(work_dirs))
    wait_for(
        f"{workers} workers did not register",
        lambda: cluster.state().get("aliveworkers") == workers,
        120,
        logs,
    )
    return cluster


def _answers(cluster: Standalone) -> bool:
    try:
        return cluster.state().get("status") == "ALIVE"
    except OSError:
        return False


def start_connect_server(
    daemons: Daemons, root: Path, aws: Mapping[str, str]
) -> tuple[str, subprocess.Popen[bytes]]:
    """A Spark Connect server on ``local[2]``, its executors (in its own JVM) seeing
    the S3 configuration ``aws`` in their environment; returns its ``sc://`` URL."""
    conf = root / "conf"
    conf.mkdir(parents=True, exist_ok=True)
    port = free_port()
    # spark-submit sizes the Connect server's heap as a daemon's (SPARK_DAEMON_MEMORY).
    env = clean_environment(
        conf, {"PYSPARK_PYTHON": sys.executable, "SPARK_DAEMON_MEMORY": "768m", **aws}
    )
    settings = {
        "spark.connect.grpc.binding.address": "127.0.0.1",
        "spark.connect.grpc.binding.port": str(port),
        "spark.pyspark.python": sys.executable,
        "spark.driver.extraJavaOptions": JVM_OPTIONS,
        "spark.ui.enabled": "false",
        "spark.sql.shuffle.partitions": "2",
        "spark.default.parallelism": "2",
        "spark.sql.session.timeZone": "UTC",
        "spark.sql.python.filterPushdown.enabled": "true",
        "spark.sql.warehouse.dir": str(root / "warehouse"),
    }
    args = [
        str(SPARK_HOME / "bin" / "spark-submit"),
        "--master",
        "local[2]",
        "--class",
        "org.apache.spark.sql.connect.service.SparkConnectServer",
        "--name",
        "shoal-connect-tests",
    ]
    for key, value in settings.items():
        args += ["--conf", f"{key}={value}"]
    log = root / "connect-server.log"
    process = daemons.start([*args, "spark-internal"], env, log)

    def listening() -> bool:
        if process.poll() is not None:
            raise RuntimeError(f"the Connect server exited\n{tail(log)}")
        with socket.socket() as s:
            return s.connect_ex(("127.0.0.1", port)) == 0

    wait_for("the Connect server did not listen", listening, 180, [log])
    return f"sc://127.0.0.1:{port}", process


class Runner:
    """``spark_scenarios.py`` in a process of its own, connected once to a cluster or a
    Connect server, running the scenarios it is sent one after another."""

    def __init__(self, args: list[str], env: Mapping[str, str], log: Path) -> None:
        self.log_path = log
        self._log = log.open("wb")
        self.process = subprocess.Popen(
            [sys.executable, str(RUNNER), *args],
            env=dict(env),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._log,
            start_new_session=True,
        )

    def send(self, scenario: str, **arguments: Any) -> None:
        assert self.process.stdin is not None
        line = json.dumps({"scenario": scenario, "arguments": arguments}) + "\n"
        self.process.stdin.write(line.encode())
        self.process.stdin.flush()

    def receive(self) -> Any:
        """The answer to the scenario sent last; raises what the scenario raised."""
        assert self.process.stdout is not None
        for raw in self.process.stdout:
            line = raw.decode()
            if line.startswith(RESULT):
                answer = json.loads(line[len(RESULT) :])
                if "error" in answer:
                    raise AssertionError(f"the scenario failed:\n{answer['error']}")
                return answer["result"]
        raise AssertionError(f"the runner exited ({self.process.wait()})\n{tail(self.log_path)}")

    def run(self, scenario: str, **arguments: Any) -> Any:
        self.send(scenario, **arguments)
        return self.receive()

    def close(self) -> None:
        if self.process.stdin is not None:
            try:
                self.process.stdin.close()  # the runner stops its session and exits
                self.process.wait(timeout=60)
            except (OSError, subprocess.TimeoutExpired):
                pass
        stop_group(self.process)
        if self.process.stdout is not None:
            self.process.stdout.close()
        self._log.close()
