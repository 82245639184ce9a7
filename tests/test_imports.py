"""The import graph of `src/`: layers import downward only, so no module imports itself through others. Read
from the source text (every import, at module level or inside a function), without importing anything.

The package's folders are its stages, in layers: format/ (the contract both runtimes read) < runtime/ <
compiler/ < tools/. A module imports only from its own layer and those below it; nothing imports tools/; the
package's own __init__ (the public API) sits above compiler/ and below tools/."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parent.parent / "src"

pytestmark = pytest.mark.host


def _modules() -> dict[str, Path]:
    out = {}
    for path in SRC.rglob("*.py"):
        parts = list(path.relative_to(SRC).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


def import_graph() -> dict[str, set[str]]:
    """module -> the modules of `src/` it imports (a package's own `__init__` only when named)."""
    modules = _modules()
    graph = {}
    for name, path in modules.items():
        package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
        deps = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom):
                base = package[:len(package) - node.level + 1] if node.level else []
                origin = ".".join(base + ([node.module] if node.module else []))
                for alias in node.names:
                    child = f"{origin}.{alias.name}"
                    deps.add(child if child in modules else origin)
            elif isinstance(node, ast.Import):
                deps.update(alias.name for alias in node.names)
        graph[name] = {d for d in deps if d in modules and d != name}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm, iteratively)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            v, children = work[-1]
            w = next(children, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(sorted(graph[w]))))
                elif w in on_stack:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                component = []
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    component.append(w)
                    if w == v:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_the_graph_is_read():
    graph = import_graph()
    assert "webgpu_torch.runtime.executor" in graph["webgpu_torch.runtime.tuning"]
    assert "webgpu_torch.compiler.builder" in graph["webgpu_torch.compiler.ops.elementwise"]
    assert layer("webgpu_torch.compiler.ops.gemm") == LAYERS.index("compiler")
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_src_has_no_import_cycle():
    assert cycles(import_graph()) == []



LAYERS = ["format", "runtime", "compiler", "api", "tools"]  # bottom to top; "api": the package's __init__


def layer(module: str) -> int:
    parts = module.split(".")
    return LAYERS.index(parts[1] if len(parts) > 1 else "api")


def test_the_top_level_holds_the_stages_only():
    package = SRC / "webgpu_torch"
    assert sorted(p.name for p in package.glob("*.py")) == ["__init__.py"]
    assert sorted(p.name for p in package.iterdir() if (p / "__init__.py").is_file()) == sorted(
        name for name in LAYERS if name != "api")


def test_layers_import_downward_only():
    wrong = [f"{module} imports {dep}" for module, deps in import_graph().items() for dep in sorted(deps)
             if layer(dep) > layer(module)]
    assert wrong == []


def test_loading_a_file_imports_no_compiler():
    """`webgpu_torch.load` of a saved file: the format and the runtime only (no op family, no torch)."""
    code = ("import sys, webgpu_torch; webgpu_torch.load(sys.argv[1]); import json; "
            "print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in ('webgpu_torch', 'torch'))))")
    golden = Path(__file__).parent / "golden" / "mlp.wgpt"
    out = subprocess.run([sys.executable, "-c", code, str(golden)], capture_output=True, text=True, check=True)
    loaded = json.loads(out.stdout)
    assert "torch" not in loaded
    assert [m for m in loaded if m != "webgpu_torch" and layer(m) > LAYERS.index("runtime")] == []
    assert len(loaded) <= 25, loaded  # 57 when the package's __init__ imported the compiler
