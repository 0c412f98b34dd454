"""The pypaimon virtualenv: ``.venvs/pypaimon`` under the repository root.

pypaimon 2.1.0 pins ``pyarrow<20``, so it cannot share the project's interpreter.
The same location is used by the interop tests; whoever comes first creates it.
"""

from __future__ import annotations

import fcntl
import subprocess
import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
VENV = REPO_ROOT / ".venvs" / "pypaimon"
PYPAIMON_VERSION = "2.1.0"

_VERSION_PROBE = "import importlib.metadata as m; print(m.version('pypaimon'))"


def venv_python() -> Path:
    return VENV / "bin" / "python"


def installed_version() -> str | None:
    """pypaimon's version in the virtualenv, or None when it is missing or broken."""
    python = venv_python()
    if not python.exists():
        return None
    done = subprocess.run(
        [str(python), "-c", _VERSION_PROBE], capture_output=True, text=True, check=False
    )
    return done.stdout.strip() if done.returncode == 0 else None


def ensure_pypaimon() -> Path:
    """The virtualenv's python, creating the virtualenv and installing pypaimon if needed."""
    if installed_version() == PYPAIMON_VERSION:
        return venv_python()
    VENV.parent.mkdir(parents=True, exist_ok=True)
    with open(VENV.parent / "pypaimon.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if installed_version() != PYPAIMON_VERSION:
            print(f"creating {VENV} with pypaimon=={PYPAIMON_VERSION} ...", file=sys.stderr)
            if not venv_python().exists():
                subprocess.run([sys.executable, "-m", "venv", str(VENV)], check=True)
            subprocess.run(
                [str(venv_python()), "-m", "pip", "install", "-q", f"pypaimon=={PYPAIMON_VERSION}"],
                check=True,
            )
    if installed_version() != PYPAIMON_VERSION:
        raise RuntimeError(f"could not install pypaimon=={PYPAIMON_VERSION} into {VENV}")
    return venv_python()
