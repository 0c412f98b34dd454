"""The documentation runs, so it stays true.

Every page (README.md and docs/*.md) is a script: its ```python blocks and the
``$ shoal ...`` lines of its ```console blocks run in the order they appear, the
Python blocks in one namespace, everything in a fresh temporary working directory
(relative warehouse paths land there). A command passes when it exits 0; its output
in the page is not compared. docs/spark.md gets the suite's SparkSession as the
variable ``spark``; it and docs/cli.md (whose commands start Spark) are marked
``spark``. Tracebacks name the page and the line of the failing example.

Links between the pages must resolve, and docs/options.md must list exactly the
options of ``shoal/options.py``, each with its declared default.
"""

from __future__ import annotations

import os
import re
import runpy
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from shoal import options as O
from tests.spark.conftest import spark  # noqa: F401  (the suite's SparkSession, for SESSION_PAGES)

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
PAGES = [ROOT / "README.md", *sorted(DOCS.glob("*.md"))]
SESSION_PAGES = {"spark.md"}  # pages that get the suite's SparkSession as ``spark``
SPARK_PAGES = {"spark.md", "cli.md"}  # pages that need Spark and Java (marked ``spark``)
COMMAND_TIMEOUT = 300  # seconds; a command that starts Spark needs a JVM first

_FENCE = re.compile(r"^```(\w*)[^\n]*\n(.*?)^```[ \t]*$", re.DOTALL | re.MULTILINE)


@dataclass(frozen=True)
class Block:
    language: str
    code: str
    line: int  # the line of the page where the code starts (1-based)


def blocks(page: Path) -> list[Block]:
    """The fenced code blocks of ``page``, in order."""
    text = page.read_text()
    return [
        Block(m.group(1), m.group(2), text.count("\n", 0, m.start(2)) + 1)
        for m in _FENCE.finditer(text)
    ]


def commands(block: Block) -> list[tuple[int, list[str]]]:
    """The ``$ ...`` lines of a console block (a trailing backslash continues a line)
    with their page line; every other line is output."""
    found: list[tuple[int, list[str]]] = []
    lines = block.code.splitlines()
    i = 0
    while i < len(lines):
        line, start = lines[i], block.line + i
        i += 1
        if not line.startswith("$ "):
            continue
        text = line[2:]
        while text.endswith("\\") and i < len(lines):
            text = text[:-1] + " " + lines[i].strip()
            i += 1
        found.append((start, shlex.split(text, comments=True)))
    return found


def _shoal() -> str:
    """The installed ``shoal`` entry point (beside this Python's executable first)."""
    beside = Path(sys.executable).with_name("shoal")
    if beside.exists():
        return str(beside)
    found = shutil.which("shoal")
    if found is None:
        raise AssertionError("the shoal command is not installed: pip install -e .")
    return found


def _run_command(page: Path, line: int, argv: list[str]) -> None:
    assert argv[:1] == ["shoal"], f"{page.name}:{line}: only shoal commands run: {argv}"
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable}
    env.pop("SHOAL_WAREHOUSE", None)
    done = subprocess.run(
        [_shoal(), *argv[1:]], capture_output=True, text=True, env=env,
        timeout=COMMAND_TIMEOUT, check=False,
    )
    assert done.returncode == 0, (
        f"{page.name}:{line}: `{shlex.join(argv)}` exited {done.returncode}\n"
        f"stdout:\n{done.stdout}\nstderr:\n{done.stderr}"
    )


def run_page(page: Path, namespace: dict[str, Any]) -> None:
    """Run the page's examples in order in the current directory."""
    for block in blocks(page):
        if block.language == "python":
            # Padded so that a traceback gives the line in the page.
            code = compile("\n" * (block.line - 1) + block.code, str(page), "exec")
            exec(code, namespace)
        elif block.language == "console":
            for line, argv in commands(block):
                _run_command(page, line, argv)


def _params() -> list[Any]:
    marks = {name: [pytest.mark.spark] for name in SPARK_PAGES}
    return [
        pytest.param(page, id=str(page.relative_to(ROOT)), marks=marks.get(page.name, []))
        for page in PAGES
    ]


def test_every_page_has_examples() -> None:
    assert DOCS.is_dir()
    for page in PAGES:
        runnable = [b for b in blocks(page) if b.language in ("python", "console")]
        assert runnable, f"{page.name} has no runnable example"


@pytest.mark.parametrize("page", _params())
def test_page_examples_run(
    page: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest
) -> None:
    namespace: dict[str, Any] = {"__name__": "__main__"}
    if page.name in SESSION_PAGES:
        namespace["spark"] = request.getfixturevalue("spark")
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("SHOAL_WAREHOUSE", raising=False)
    run_page(page, namespace)


_LINK = re.compile(r"\]\(([^)\s]+)\)")


def _anchors(page: Path) -> set[str]:
    """GitHub's anchors of the page's headings."""
    headings = re.findall(r"^#+\s+(.+?)\s*$", _FENCE.sub("", page.read_text()), re.MULTILINE)
    return {re.sub(r"[^\w\- ]", "", h.lower()).replace(" ", "-") for h in headings}


@pytest.mark.parametrize("page", PAGES, ids=[str(p.relative_to(ROOT)) for p in PAGES])
def test_links_between_pages_resolve(page: Path) -> None:
    for target in _LINK.findall(_FENCE.sub("", page.read_text())):
        if re.match(r"[a-z]+://", target):
            continue
        path, _, anchor = target.partition("#")
        linked = (page.parent / path).resolve() if path else page
        assert linked.exists(), f"{page.name}: broken link {target}"
        if anchor:
            assert anchor in _anchors(linked), f"{page.name}: no heading for {target}"


# --- docs/options.md ----------------------------------------------------------------------------
_OPTION_ROW = re.compile(r"^\|\s*`([^`]+)`\s*\|\s*([^|]*?)\s*\|", re.MULTILINE)
_NO_DEFAULT = "(none)"


def documented_options() -> dict[str, str]:
    """Key to default cell of the option tables of docs/options.md."""
    rows = _OPTION_ROW.findall((DOCS / "options.md").read_text())
    keys = [key for key, _ in rows]
    assert len(keys) == len(set(keys)), "an option is listed twice"
    return dict(rows)


def test_options_page_lists_every_declared_option() -> None:
    declared = {option.key for option in O.declared()}
    assert set(documented_options()) == declared


@pytest.mark.parametrize("option", list(O.declared()), ids=lambda o: o.key)
def test_options_page_gives_the_declared_default(option: O.Option[Any]) -> None:
    cell = documented_options()[option.key]
    if cell == _NO_DEFAULT:
        assert option.default in (None, ""), f"{option.key} has a default: {option.default!r}"
        return
    match = re.fullmatch(r"`([^`]*)`", cell)
    assert match, f"{option.key}: the default is `value` or {_NO_DEFAULT}, not {cell!r}"
    assert option.parse(match.group(1)) == option.default


def test_quickstart_runs(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "argv", ["quickstart.py", str(tmp_path)])
    runpy.run_path(str(ROOT / "examples" / "quickstart.py"), run_name="__main__")
    out = capsys.readouterr().out
    assert "snapshot 3: +4 rows (12 in all)" in out
    assert "rows now: 8 | rows at snapshot 3: 12" in out
