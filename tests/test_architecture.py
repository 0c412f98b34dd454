"""The rules of ARCHITECTURE.md, held against the imports of the source.

Every import of a shoal module points down the layers (or stays inside its own
package); packages that stand side by side on one layer stay apart; imports inside
functions are kept for optional dependencies; and no module grows past the size the
project chooses. The imports are read from the source (not run), as in
``tests/test_dependencies.py``.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SRC = ROOT / "src"

# Bottom up; a module may import its own layer's modules and the layers below.
LAYERS: tuple[tuple[str, ...], ...] = (
    ("shoal.errors",),
    ("shoal.format", "shoal.io", "shoal.option_keys", "shoal.option_values"),
    ("shoal.options",),
    ("shoal.features",),
    ("shoal.core",),
    ("shoal.primary_key",),
    ("shoal.event_time",),
    ("shoal.write",),
    ("shoal.read",),
    ("shoal.compaction",),
    ("shoal.cleanup",),
    ("shoal.transaction", "shoal.scan", "shoal.row_ops", "shoal.row_merge"),
    ("shoal.table",),
    ("shoal.catalog",),
    ("shoal",),  # the package's face: the public names
    ("shoal.spark", "pyspark_shoal"),
    ("shoal.cli",),
)
# Side by side on one layer, and apart.
APART = (
    ("shoal.format", "shoal.io"),
    ("shoal.format", "shoal.option_keys"),
    ("shoal.transaction", "shoal.scan"),
)
# Imports inside functions, each of a module that needs an optional dependency.
LOCAL_IMPORTS = {
    ("shoal.cli", "shoal.spark"),  # pyspark: commands that run no Spark start without it
    ("shoal.io.file_io", "shoal.io.s3_file_io"),  # boto3, for s3:// tables only
    ("shoal.io.file_io", "shoal.io.gcs_file_io"),  # a gs:// FileIO, built on FileIO
    ("shoal.io.file_io", "shoal.io.azure_file_io"),  # an Azure FileIO, built on FileIO
    # numba (its compiler takes half a second to load): plans of large tables only
    ("shoal.scan", "shoal.core.columnar_plan"),
}
MAX_LINES = 800


def _module(path: Path) -> str:
    parts = path.relative_to(SRC).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _group(module: str, groups: tuple[str, ...]) -> str | None:
    """The longest of ``groups`` that ``module`` is or lies inside."""
    found = [g for g in groups if module == g or module.startswith(g + ".")]
    return max(found, key=len) if found else None


ALL_GROUPS = tuple(g for layer in LAYERS for g in layer)


def _layer(module: str) -> int:
    group = _group(module, ALL_GROUPS)
    assert group is not None, f"{module} is on no layer of ARCHITECTURE.md"
    return next(i for i, layer in enumerate(LAYERS) if group in layer)


def _imports(tree: ast.Module) -> list[tuple[str, int, bool]]:
    """Each imported shoal module, its line, and whether the import sits in a function
    (imports under ``if TYPE_CHECKING:`` never run, and are left out)."""
    typing_only: set[int] = set()
    local: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            typing_only.update(id(n) for child in node.body for n in ast.walk(child))
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            local.update(id(n) for child in node.body for n in ast.walk(child))
    found = []
    for node in ast.walk(tree):
        if id(node) in typing_only:
            continue
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            # "from shoal.format import avro" imports the module shoal.format.avro;
            # "from shoal.format.tag import Tag" imports shoal.format.tag
            module = node.module
            names = [
                f"{module}.{alias.name}" if _is_module(f"{module}.{alias.name}") else module
                for alias in node.names
            ]
        for name in names:
            if name.split(".")[0] in ("shoal", "pyspark_shoal"):
                found.append((name, node.lineno, id(node) in local))
    return found


def _sources() -> list[tuple[str, Path, ast.Module]]:
    return [
        (_module(path), path, ast.parse(path.read_text(), str(path)))
        for path in sorted(SRC.rglob("*.py"))
    ]


def _is_module(name: str) -> bool:
    dotted = SRC / Path(*name.split("."))
    return dotted.with_suffix(".py").exists() or (dotted / "__init__.py").exists()


def test_every_import_points_down_the_layers() -> None:
    upward = []
    for module, path, tree in _sources():
        own = _layer(module)
        for name, line, _ in _imports(tree):
            if _layer(name) > own:
                upward.append(f"{path.relative_to(ROOT)}:{line} imports {name} (a layer up)")
    assert not upward


def test_packages_side_by_side_stay_apart() -> None:
    crossing = []
    for module, path, tree in _sources():
        for first, second in APART:
            for a, b in ((first, second), (second, first)):
                if _group(module, (a,)) is None:
                    continue
                for name, line, _ in _imports(tree):
                    if _group(name, (b,)) is not None:
                        crossing.append(f"{path.relative_to(ROOT)}:{line} imports {name}")
    assert not crossing


def test_imports_inside_functions_are_of_optional_dependencies() -> None:
    local = []
    for module, path, tree in _sources():
        for name, line, inside in _imports(tree):
            if not inside:
                continue
            allowed = any(
                _group(module, (a,)) is not None and _group(name, (b,)) is not None
                for a, b in LOCAL_IMPORTS
            )
            if not allowed:
                local.append(f"{path.relative_to(ROOT)}:{line} imports {name} in a function")
    assert not local


def test_modules_stay_small() -> None:
    large = {
        str(path.relative_to(ROOT)): n
        for path in SRC.rglob("*.py")
        if (n := len(path.read_text().splitlines())) > MAX_LINES
    }
    assert not large


def _mapped() -> set[str]:
    """The packages and modules that ARCHITECTURE.md's table names, as ``shoal/...``."""
    text = (ROOT / "ARCHITECTURE.md").read_text()
    return {
        line.split("`")[1].rstrip("/")
        for line in text.splitlines()
        if line.startswith(("| `shoal/", "| `pyspark_shoal"))
    }


def test_the_map_names_every_package_and_module() -> None:
    package = SRC / "shoal"
    modules = {f"shoal/{p.name}" for p in package.glob("*.py") if p.name != "__init__.py"}
    inits = package.glob("**/__init__.py")
    packages = {str(p.parent.relative_to(SRC)) for p in inits if p.parent != package}
    assert _mapped() == modules | packages | {"pyspark_shoal"}


def test_the_checks_see_what_they_look_for() -> None:
    tree = ast.parse(
        "from shoal.cleanup.expire import x\n"
        "def f():\n    import shoal.spark\n"
        "if TYPE_CHECKING:\n    from shoal.table import Table\n"
    )
    assert [(n, inside) for n, _, inside in _imports(tree)] == [
        ("shoal.cleanup.expire", False),
        ("shoal.spark", True),
    ]
    assert _layer("shoal.write.commit") < _layer("shoal.cleanup.expire") < _layer("shoal.table")
    assert _layer("shoal") < _layer("shoal.spark.jobs")
    assert _is_module("shoal.write.commit")
    assert not _is_module("shoal.write.commit.x")
