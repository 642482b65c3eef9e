"""The package's shape, read from the source (README "Architecture"): import layers, no import cycle between layers
or between the modules of one package, sizes, who imports what.

Every import counts: module level, inside functions and under ``TYPE_CHECKING``."""
from __future__ import annotations

import ast
from pathlib import Path
from typing import Iterable, Mapping

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "rescorer"

# Top to bottom: a module may import its own package and the layers below its own, never a layer above or beside.
LAYERS = [
    ("__main__",),             # `python -m rescorer`: runs the command line
    ("cli", "rescorer"),       # the command line; the package's public API (rescorer/__init__.py)
    ("tasks",),                # thin Hydra adapters
    ("studies",),              # PCFG ground truth, minimal pairs, desiderata, distillation as plain functions
    ("pipeline", "benchmark"),  # the main job and the benchmarks as plain functions
    ("tuned",),                # the tuned rescorer: its file, its models named to travel, its bundle
    ("train", "pairs"),        # training loops and objectives; minimal-pair evaluation
    ("engine",),               # runs scorers: store, batching, budgets, scale-out
    ("scorers",),              # model adapters
    ("pcfg",),                 # grammars and exact charts
    ("report",),               # the report as types, written as JSON, Markdown, HTML, plots and a terminal summary
    ("changes",),              # which 1-best texts changed, better or worse, word by word
    ("combine",),
    ("metrics",),
    ("context",),              # which recording each utterance belongs to (by its format), what was said around it
    ("io",),                   # formats
    ("normalise", "store", "shipped", "filehash", "devtools", "options", "outdir", "strictyaml"),  # filehash: content
    # hashes (models, inputs); outdir: the out_dir every task checks and opens; strictyaml: a user's YAML, read strictly
    ("files", "paths"),        # atomic writes; where the configs, demo, data and user cache are
    ("types", "errors", "version", "log", "bulk"),  # log: messages; bulk: many small objects made at once
    ("safetext",),             # input text safe to show people (every warning goes through it)
]
TIER = {name: k for k, names in enumerate(LAYERS) for name in names}
TORCH_FREE = ("io", "context", "metrics", "normalise", "combine", "changes", "report", "filehash", "files",
              "paths", "types", "errors", "version", "safetext")
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


def package(module: str) -> str:
    """The package a module belongs to (a package's ``__init__`` belongs to the package itself)."""
    return module if MODULES[module].name == "__init__.py" else module.rpartition(".")[0]


def find_cycle(graph: Mapping[str, Iterable[str]]) -> list[str] | None:
    """A cycle of the directed ``graph`` as the path that closes it (``[a, b, a]``), or None when there is none."""
    state: dict[str, int] = {}  # 1: on the current path, 2: finished

    def visit(node: str, path: list[str]) -> list[str] | None:
        state[node] = 1
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                loop = [*path, node]
                return [*loop[loop.index(nxt):], nxt]
            if nxt not in state and (found := visit(nxt, [*path, node])):
                return found
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state and (found := visit(node, [])):
            return found
    return None


def test_the_cycle_finder_finds_cycles_and_only_cycles():
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"x": {"y"}, "y": {"x"}}) == ["x", "y", "x"]
    assert find_cycle({"s": {"s"}}) == ["s", "s"]
    assert find_cycle({"a": {"b", "c"}, "b": {"d"}, "c": {"d"}, "d": set()}) is None  # two ways down, no way back


def test_the_package_import_graph_is_acyclic():
    graph = {a: {layer(t) for m in MODULES if layer(m) == a for t in EDGES[m]} - {a} for a in TIER}
    cycle = find_cycle(graph)
    assert cycle is None, f"import cycle: {' -> '.join(cycle)}"


@pytest.mark.parametrize("name", sorted({package(m) for m in MODULES}))
def test_no_import_cycle_between_the_modules_of_a_package(name):
    graph = {m: {t for t in EDGES[m] if t != m and package(t) == name} for m in MODULES if package(m) == name}
    cycle = find_cycle(graph)
    assert cycle is None, f"import cycle in {name}: {' -> '.join(cycle)}"


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


def test_no_module_reaches_into_a_librarys_private_modules():
    """Hydra, OmegaConf and the rest are used through their public API only (``_internal`` changes without notice)."""
    private = {module: sorted(t for t in imports(path) if any(part.startswith("_") and not part.startswith("__")
                                                                for part in t.split(".")[1:]))
               for module, path in MODULES.items()}
    assert {m: names for m, names in private.items() if names} == {}


def test_types_errors_and_version_import_nothing_of_the_package():
    for module in MODULES:
        if layer(module) in ("types", "errors", "version"):
            assert EDGES[module] == set(), f"{module} imports {EDGES[module]}"


def test_task_modules_are_thin_adapters():
    for module, path in MODULES.items():
        if module.startswith("rescorer.tasks."):
            lines = path.read_text().count("\n")
            assert lines <= 40, f"{module}: {lines} lines; its work belongs in a library layer (studies, pipeline, …)"


def test_no_module_over_400_lines_and_no_function_over_60():
    for module, path in MODULES.items():
        source = path.read_text()
        assert source.count("\n") <= 400, f"{module}: {source.count(chr(10))} lines"
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                length = node.end_lineno - node.lineno + 1
                assert length <= 60, f"{module}.{node.name}: {length} lines"



def test_library_code_never_prints_it_logs():
    """Only the command line (cli.py, tasks/, ``__main__`` entry points) writes to the terminal itself; the library
    goes through the ``rescorer`` logger (rescorer.log), so a Python program decides what is shown."""
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        relative = path.relative_to(PACKAGE)
        if relative.parts[0] in ("cli.py", "tasks", "log.py") or path.name == "__main__.py":
            continue  # log.py: where a table is rendered to text and handed to the terminal
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.Call):
                continue
            function = node.func
            if (isinstance(function, ast.Name) and function.id == "print") or (
                    isinstance(function, ast.Attribute) and function.attr == "print") or (
                    isinstance(function, ast.Attribute) and function.attr == "write"
                    and ast.unparse(function.value) in ("sys.stdout", "sys.stderr")):
                found.append(f"{relative}:{node.lineno}")
    assert found == [], found
