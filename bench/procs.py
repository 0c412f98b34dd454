"""Running benchmark operations in their own processes, and talking to them.

A probe is a fresh process that prints one JSON object; a ``CommitSession`` is a
long-lived process that serves one commit per request (the line protocol of
``bench.worker``), so the driver can interleave contenders commit by commit.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from bench.paimon_env import REPO_ROOT

RUNNER = Path(__file__).resolve().parent / "pypaimon_runner.py"


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env.pop("PYTHONPATH", None)
    return env


def run_json(cmd: list[str]) -> dict[str, Any]:
    """Run a probe to completion; its one JSON object."""
    done = subprocess.run(
        cmd, cwd=REPO_ROOT, capture_output=True, text=True, env=_env(), check=False
    )
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed ({done.returncode}):\n{done.stderr}")
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def worker_cmd(*args: str) -> list[str]:
    return [sys.executable, "-m", "bench.worker", *args]


def pypaimon_cmd(python: Path, *args: str) -> list[str]:
    # -P: do not put bench/ on sys.path, so its modules never shadow anything
    return [str(python), "-P", str(RUNNER), *args]


def rotate(names: list[str], by: int) -> list[str]:
    """``names`` starting at position ``by`` (mod its length): a fair rotating order."""
    k = by % len(names)
    return names[k:] + names[:k]


class CommitSession:
    """A long-lived committer process (the line protocol of ``bench.worker``)."""

    def __init__(self, cmd: list[str], log_path: Path) -> None:
        self._log_path = log_path
        self._log = log_path.open("w")
        self._proc = subprocess.Popen(
            cmd,
            cwd=REPO_ROOT,
            env=_env(),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._log,
            text=True,
            bufsize=1,
        )
        self.latencies: list[float] = []
        self._expect("ready")

    def _line(self) -> str:
        assert self._proc.stdout is not None
        line = self._proc.stdout.readline()
        if not line:
            self._proc.wait()
            self._log.close()
            raise RuntimeError(
                f"committer {self._proc.args!r} died ({self._proc.returncode}):\n"
                + self._log_path.read_text()[-4000:]
            )
        return line.strip()

    def _send(self, command: str) -> None:
        assert self._proc.stdin is not None
        self._proc.stdin.write(command + "\n")
        self._proc.stdin.flush()

    def _expect(self, word: str) -> None:
        line = self._line()
        if line != word:
            raise RuntimeError(f"committer said {line!r}, expected {word!r}")

    def commit(self, index: int) -> None:
        """Commit batch number ``index``; its latency (timed in the process) is kept."""
        self._send(str(index))
        self.latencies.append(float(self._line()))

    def finish(self) -> dict[str, Any]:
        self._send("stop")
        result: dict[str, Any] = json.loads(self._line())
        self._proc.wait()
        self._log.close()
        return result


def interleave(sessions: dict[str, CommitSession], commits: int) -> dict[str, dict[str, Any]]:
    """Commit ``commits`` batches in every session, one at a time, rotating the order;
    then stop them all and return what each reported."""
    order = list(sessions)
    for i in range(commits):
        for name in rotate(order, i):
            sessions[name].commit(i)
    return {name: session.finish() for name, session in sessions.items()}
