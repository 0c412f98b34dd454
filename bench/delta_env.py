"""The deltalake virtualenv: ``.venvs/deltalake`` under the repository root.

deltalake is a peer in the cleanup benchmarks only; it gets its own virtualenv so
that it never changes what the project's interpreter has installed.
"""

from __future__ import annotations

import fcntl
import subprocess
import sys
from pathlib import Path

from bench.paimon_env import REPO_ROOT

VENV = REPO_ROOT / ".venvs" / "deltalake"
DELTALAKE_VERSION = "1.6.6"
RUNNER = Path(__file__).resolve().parent / "delta_runner.py"

_VERSION_PROBE = "import importlib.metadata as m, pyarrow, deltalake; print(m.version('deltalake'))"


def venv_python() -> Path:
    return VENV / "bin" / "python"


def installed_version() -> str | None:
    """deltalake's version in the virtualenv, or None when it is missing or broken."""
    python = venv_python()
    if not python.exists():
        return None
    done = subprocess.run(
        [str(python), "-c", _VERSION_PROBE], capture_output=True, text=True, check=False
    )
    return done.stdout.strip() if done.returncode == 0 else None


def ensure_deltalake() -> Path:
    """The virtualenv's python, creating the virtualenv and installing deltalake (and
    pyarrow, to read the benchmark data) if needed."""
    if installed_version() == DELTALAKE_VERSION:
        return venv_python()
    VENV.parent.mkdir(parents=True, exist_ok=True)
    with open(VENV.parent / "deltalake.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if installed_version() != DELTALAKE_VERSION:
            print(f"creating {VENV} with deltalake=={DELTALAKE_VERSION} ...", file=sys.stderr)
            if not venv_python().exists():
                subprocess.run([sys.executable, "-m", "venv", str(VENV)], check=True)
            subprocess.run(
                [
                    str(venv_python()),
                    "-m",
                    "pip",
                    "install",
                    "-q",
                    f"deltalake=={DELTALAKE_VERSION}",
                    "pyarrow",
                ],
                check=True,
            )
    if installed_version() != DELTALAKE_VERSION:
        raise RuntimeError(f"could not install deltalake=={DELTALAKE_VERSION} into {VENV}")
    return venv_python()


def delta_cmd(python: Path, *args: str) -> list[str]:
    # -P: do not put bench/ on sys.path, so its modules never shadow anything
    return [str(python), "-P", str(RUNNER), *args]
