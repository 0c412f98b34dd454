"""Every third-party import is a declared dependency of the part that makes it.

A fresh ``pip install shoal`` installs only what ``pyproject.toml`` declares, so an
import that works only because the machine happens to hold the package fails for the
first user who installs shoal anywhere else. The imports are read from the source
(every ``import``, also inside functions; not those under ``if TYPE_CHECKING:``, which
never run) and matched to the distributions that provide them in this environment.
"""

from __future__ import annotations

import ast
import re
import subprocess
import sys
import textwrap
import tomllib
from collections.abc import Iterator
from functools import cache
from importlib.metadata import packages_distributions
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SRC = ROOT / "src"

# Modules of shoal that belong to an extra, by dotted prefix; the rest need only the
# base dependencies.
EXTRA_OF_MODULE = {
    "shoal.spark": "spark",
    "pyspark_shoal": "spark",
    "shoal.io.s3_file_io": "s3",
    "shoal.io.gcs_file_io": "gcs",
    "shoal.io.azure_file_io": "azure",
    "shoal.read.frames": "polars",  # polars, imported by to_polars only
}
# Trees that run with the development extra installed.
DEV_TREES = ("tests", "bench", "examples")
# Runners that the benchmarks start in the peers' own virtual environments.
OTHER_ENVIRONMENTS = {"bench/pypaimon_runner.py", "bench/delta_runner.py", "bench/delta_rowops.py"}


def _distribution(requirement: str) -> str:
    return _normalize(re.split(r"[\s\[<>=!~;]", requirement, maxsplit=1)[0])


def _normalize(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


@cache
def declared() -> dict[str, frozenset[str]]:
    """The distributions each part declares: ``""`` for the base dependencies, then one
    entry per extra (with the base and the extras it names of shoal itself)."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    base = frozenset(_distribution(r) for r in project["dependencies"])
    extras: dict[str, list[str]] = project["optional-dependencies"]

    def of(extra: str) -> frozenset[str]:
        names = set(base)
        for requirement in extras[extra]:
            own = re.fullmatch(r"shoal\[([\w,\s-]+)\]", requirement.strip())
            if own:
                for inner in own.group(1).split(","):
                    names |= of(inner.strip())
            else:
                names.add(_distribution(requirement))
        return frozenset(names)

    return {"": base, **{extra: of(extra) for extra in extras}}


def _runtime_imports(tree: ast.Module) -> Iterator[tuple[str, int]]:
    """The top-level package and line of every absolute import that can run."""
    skipped: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            skipped.update(id(inner) for child in node.body for inner in ast.walk(child))
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name.split(".")[0], node.lineno
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            yield node.module.split(".")[0], node.lineno


def _module_name(path: Path) -> str:
    parts = path.relative_to(SRC).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _part_of(path: Path) -> str:
    if path.is_relative_to(SRC):
        module = _module_name(path)
        for prefix, extra in EXTRA_OF_MODULE.items():
            if module == prefix or module.startswith(prefix + "."):
                return extra
        return ""
    return "dev"


def _undeclared(paths: list[Path]) -> list[str]:
    providers = packages_distributions()
    local = {"shoal", "pyspark_shoal", *DEV_TREES}
    problems = []
    for path in paths:
        allowed = declared()[_part_of(path)]
        for top, line in _runtime_imports(ast.parse(path.read_text(), str(path))):
            if top in local or top in sys.stdlib_module_names or top == "__future__":
                continue
            owners = {_normalize(d) for d in providers.get(top, [top])}
            if not owners & allowed:
                part = _part_of(path) or "base"
                problems.append(
                    f"{path.relative_to(ROOT)}:{line} imports {top!r} "
                    f"(from {', '.join(sorted(owners))}), which the {part} "
                    "dependencies do not declare"
                )
    return problems


def test_the_package_imports_only_what_its_part_declares() -> None:
    assert not _undeclared(sorted(SRC.rglob("*.py")))


def test_tests_benchmarks_and_examples_import_only_the_dev_extra() -> None:
    paths = [
        p
        for tree in DEV_TREES
        for p in sorted((ROOT / tree).rglob("*.py"))
        if str(p.relative_to(ROOT)) not in OTHER_ENVIRONMENTS
    ]
    assert not _undeclared(paths)


def test_the_check_sees_an_undeclared_import(tmp_path: Path) -> None:
    # A base module importing pyspark, or any package the base does not declare.
    module = SRC / "shoal" / "__init__.py"
    tree = ast.parse("import os\nimport numpy\ndef f():\n    from pyspark.sql import Row\n")
    found = [top for top, _ in _runtime_imports(tree)]
    assert found == ["os", "numpy", "pyspark"]
    assert "numpy" in declared()[_part_of(module)]
    assert "pyspark" not in declared()[_part_of(module)]
    assert "pyspark" in declared()["spark"]
    assert "pandas" in declared()["spark"]
    typing_only = ast.parse("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import x\n")
    assert [top for top, _ in _runtime_imports(typing_only)] == ["typing"]


# Runs in a fresh interpreter where the extras' packages cannot be imported, as after
# ``pip install shoal`` alone.
_WITHOUT_EXTRAS = textwrap.dedent(
    """
    import sys, tempfile

    class NotInstalled:
        def find_spec(self, name, path=None, target=None):
            if name.split(".")[0] in ("pyspark", "pandas", "boto3", "botocore", "azure", "google"):
                raise ModuleNotFoundError(f"No module named {name!r}", name=name)
            return None

    sys.meta_path.insert(0, NotInstalled())
    import pyarrow as pa
    import shoal
    from shoal.cli import cli
    from click.testing import CliRunner

    with tempfile.TemporaryDirectory() as warehouse:
        table = shoal.Catalog(warehouse).create_table("db.t", pa.schema([("id", pa.int64())]))
        table.append(pa.table({"id": [1, 2]}))
        assert table.to_arrow().num_rows == 2
    try:
        import shoal.spark
    except shoal.MissingDependencyError as exc:
        assert exc.extra == "spark", exc
    else:
        raise AssertionError("shoal.spark imported without pyspark")
    try:
        shoal.open_table("s3://bucket/wh/db.db/t")
    except shoal.MissingDependencyError as exc:
        assert exc.extra == "s3", exc
    else:
        raise AssertionError("an s3 table opened without boto3")
    for uri, extra in (
        ("gs://bucket/wh/db.db/t", "gcs"),
        ("abfss://c@account.dfs.core.windows.net/wh/db.db/t", "azure"),
    ):
        try:
            shoal.open_table(uri)
        except shoal.MissingDependencyError as exc:
            assert exc.extra == extra, exc
        else:
            raise AssertionError(f"{uri} opened without the {extra} extra")
    result = CliRunner().invoke(cli, ["demo"])
    assert result.exit_code != 0 and "pip install 'shoal[spark]'" in result.output, result.output
    print("ok")
    """
)


@pytest.mark.timeout(120)
def test_the_base_install_works_and_names_the_extra_it_lacks() -> None:
    done = subprocess.run(
        [sys.executable, "-c", _WITHOUT_EXTRAS],
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().endswith("ok")
