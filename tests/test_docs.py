"""The README's examples and the quickstart run, so the docs stay true."""

from __future__ import annotations

import re
import runpy
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _python_blocks(path: Path) -> list[str]:
    return re.findall(r"```python\n(.*?)```", path.read_text(), flags=re.DOTALL)


@pytest.mark.parametrize("index", range(len(_python_blocks(ROOT / "README.md"))))
def test_readme_examples_run(index: int) -> None:
    exec(compile(_python_blocks(ROOT / "README.md")[index], "README.md", "exec"), {})


def test_quickstart_runs(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "argv", ["quickstart.py", str(tmp_path)])
    runpy.run_path(str(ROOT / "examples" / "quickstart.py"), run_name="__main__")
    out = capsys.readouterr().out
    assert "snapshot 3: +4 rows (12 in all)" in out
    assert "rows now: 8 | rows at snapshot 3: 12" in out
