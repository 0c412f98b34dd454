"""The line protocol between the benchmark driver and its worker processes.

    worker -> "ready"
    parent -> "<index>"   worker -> "<seconds>"   (time of operation number <index>)
    parent -> "stop"      worker -> one JSON object

Standard library only: the pypaimon runner, which lives in another virtualenv, imports
this module as a sibling file.
"""

from __future__ import annotations

import json
import sys
import time
from typing import Any, Protocol, TextIO


class Appender(Protocol):
    def append(self, index: int) -> None: ...

    def result(self) -> dict[str, Any]: ...


def serve(appender: Appender, out: TextIO) -> None:
    """Answer the parent's append requests until it says stop."""
    out.write("ready\n")
    out.flush()
    for line in sys.stdin:
        command = line.strip()
        if command == "stop":
            break
        start = time.perf_counter()
        appender.append(int(command))
        out.write(f"{time.perf_counter() - start!r}\n")
        out.flush()
    out.write(json.dumps(appender.result()) + "\n")
    out.flush()
