"""The package's shape, read from the source (README "Architecture"): import layers, sizes, who imports what.

Every import counts: module level, inside functions and under ``TYPE_CHECKING``."""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "rescorer"

# Top to bottom: a module may import its own package and the layers below its own, never a layer above or beside.
LAYERS = [
    ("__main__",),             # `python -m rescorer`: runs the command line
    ("cli", "rescorer"),       # the command line; the package's public API (rescorer/__init__.py)
    ("tasks",),                # thin Hydra adapters
    ("pipeline", "benchmark"),  # the main job and the benchmarks as plain functions
    ("train", "pairs"),        # training loops and objectives; minimal-pair evaluation
    ("engine",),               # runs scorers: store, batching, budgets, scale-out
    ("scorers",),              # model adapters
    ("pcfg",),                 # grammars and exact charts
    ("plots", "report", "html_report", "summary"),
    ("changes",),              # which 1-best texts changed, better or worse, word by word
    ("combine",),
    ("metrics",),
    ("io",),
    ("normalise", "store", "shipped", "filehash", "devtools", "options"),  # filehash: whole-content model hashes, cached
    ("files", "paths"),        # atomic writes; where the configs, demo, data and user cache are
    ("types", "errors", "version"),
]
TIER = {name: k for k, names in enumerate(LAYERS) for name in names}
TORCH_FREE = ("io", "metrics", "normalise", "combine", "changes", "html_report", "summary", "filehash", "files", "paths",
              "types", "errors", "version")
HEAVY = ("torch", "transformers", "hydra", "omegaconf")


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports(path: Path) -> set[str]:
    """Every module ``path`` imports (absolute names; ``from X import y`` also yields ``X.y``)."""
    name = module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = package.split(".")[: len(package.split(".")) - node.level + 1] if node.level else []
            target = ".".join([*base, *([node.module] if node.module else [])])
            found.add(target)
            found.update(f"{target}.{alias.name}" for alias in node.names)
    return found


def layer(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "rescorer"


MODULES = {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}
EDGES = {m: {t for t in imports(p) if t in MODULES} for m, p in MODULES.items()}


def test_every_module_belongs_to_a_layer():
    assert sorted({layer(m) for m in MODULES} - set(TIER)) == []


@pytest.mark.parametrize("module", sorted(MODULES))
def test_imports_go_down_the_layers(module):
    wrong = [t for t in EDGES[module] if layer(t) != layer(module) and TIER[layer(t)] <= TIER[layer(module)]]
    assert wrong == [], f"{module} imports {wrong}: a layer above or beside its own"


def test_the_package_import_graph_is_acyclic():
    graph = {a: {layer(t) for m in MODULES if layer(m) == a for t in EDGES[m]} - {a} for a in TIER}
    state: dict[str, int] = {}

    def visit(node: str, path: list[str]) -> None:
        state[node] = 1
        for nxt in graph.get(node, ()):
            assert state.get(nxt) != 1, f"import cycle: {' -> '.join([*path, node, nxt])}"
            if nxt not in state:
                visit(nxt, [*path, node])
        state[node] = 2

    for node in graph:
        if node not in state:
            visit(node, [])


def test_nothing_imports_the_cli_and_tasks_never_import_each_other():
    for module, targets in EDGES.items():
        assert "rescorer.cli" not in targets or module == "rescorer.__main__", module  # `python -m rescorer` runs it
        if module.startswith("rescorer.tasks."):
            others = [t for t in targets if t.startswith("rescorer.tasks.") and t != module]
            assert others == [], f"{module} imports {others}"


def test_only_the_cli_and_tasks_use_hydra_and_the_lower_layers_no_torch():
    for module, path in MODULES.items():
        heavy = {t.split(".")[0] for t in imports(path)} & set(HEAVY)
        if layer(module) not in ("cli", "tasks"):
            assert not heavy & {"hydra", "omegaconf"}, f"{module} imports {heavy}"
        if layer(module) in TORCH_FREE:
            assert not heavy, f"{module} imports {heavy}"
            assert not {layer(t) for t in EDGES[module]} & {"scorers", "engine"}, module


def test_types_errors_and_version_import_nothing_of_the_package():
    for module in MODULES:
        if layer(module) in ("types", "errors", "version"):
            assert EDGES[module] == set(), f"{module} imports {EDGES[module]}"


def test_no_module_over_400_lines_and_no_function_over_60():
    for module, path in MODULES.items():
        source = path.read_text()
        assert source.count("\n") <= 400, f"{module}: {source.count(chr(10))} lines"
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                length = node.end_lineno - node.lineno + 1
                assert length <= 60, f"{module}.{node.name}: {length} lines"

