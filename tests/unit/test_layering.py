"""Dependencies point one way (docs/architecture.md, "Layers"): api -> server -> domain ->
store/index -> core, and the clients stand beside the server.

- ``core`` is pure: no I/O, no clock, nothing else of the package.
- The lower layers (``store``, ``index``, ``embed``, ``tokens``) never import a package above
  them.
- Domain packages never import the transport: ``grpc``, protobuf and the generated stubs
  (``planner_svc.api``) are imported only in ``server``, ``client`` and ``api`` itself.
- The server never imports the clients.

Imports are read with ``ast`` (nothing is executed), including imports inside functions,
relative imports, and ``importlib.import_module("...")`` / ``__import__("...")`` with a literal.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "planner_svc"

CORE_FORBIDDEN = (
    # named by the design: I/O, clocks, servers, heavy numerics
    "grpc", "faiss", "sqlite3", "socket", "os", "time", "structlog", "numpy",
    # the same kind of thing under other names
    "google", "subprocess", "pathlib", "io", "shutil", "threading", "multiprocessing",
    "asyncio", "urllib", "http", "logging", "importlib",
)  # fmt: skip
LOWER_LAYERS = ("store", "index", "embed", "tokens")
UPPER_LAYERS = (
    "planner_svc.server", "planner_svc.client", "planner_svc.recall", "planner_svc.research",
    "planner_svc.ingest", "planner_svc.memory", "planner_svc.evaluation", "planner_svc.demo",
    "planner_svc.settings", "planner_svc.cli",
)  # fmt: skip
TRANSPORT = (
    "grpc", "grpc_health", "grpc_reflection", "grpc_status", "google.protobuf", "google.rpc",
    "planner_svc.api",
)  # fmt: skip
"""Modules that know gRPC or protobuf: only the transport packages may import them."""
TRANSPORT_PACKAGES = ("server", "client", "api")


def module_name(path: Path, root: Path) -> str:
    rel = path.relative_to(root.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imports_of(path: Path, root: Path = PACKAGE) -> Iterator[tuple[int, str]]:
    """(line, absolute module name) for every import in ``path`` (a file under ``root``)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    name = module_name(path, root)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                target = ".".join([*base, node.module] if node.module else base)
            else:
                target = node.module or ""
            if target == "__future__":
                continue
            yield node.lineno, target
            for alias in node.names:  # `from pkg import module` imports pkg.module
                yield node.lineno, f"{target}.{alias.name}"
        elif isinstance(node, ast.Call) and node.args:
            func = node.func
            called = (
                func.attr
                if isinstance(func, ast.Attribute)
                else func.id
                if isinstance(func, ast.Name)
                else ""
            )
            first = node.args[0]
            if (
                called in ("import_module", "__import__")
                and isinstance(first, ast.Constant)
                and isinstance(first.value, str)
            ):
                yield node.lineno, first.value


def under(module: str, prefixes: Iterable[str]) -> bool:
    return any(module == p or module.startswith(p + ".") for p in prefixes)


def core_violations(files: Iterable[Path], root: Path = PACKAGE) -> list[str]:
    out = []
    for path in files:
        for line, mod in imports_of(path, root):
            outside_core = under(mod, ("planner_svc",)) and not under(mod, ("planner_svc.core",))
            if under(mod, CORE_FORBIDDEN) or outside_core:
                out.append(f"{path.relative_to(root.parent)}:{line} imports {mod}")
    return sorted(set(out))


def lower_layer_violations(files: Iterable[Path], root: Path = PACKAGE) -> list[str]:
    out = []
    for path in files:
        for line, mod in imports_of(path, root):
            if under(mod, UPPER_LAYERS):
                out.append(f"{path.relative_to(root.parent)}:{line} imports {mod}")
    return sorted(set(out))


def transport_violations(files: Iterable[Path], root: Path = PACKAGE) -> list[str]:
    out = []
    for path in files:
        for line, mod in imports_of(path, root):
            if under(mod, TRANSPORT):
                out.append(f"{path.relative_to(root.parent)}:{line} imports {mod}")
    return sorted(set(out))


def client_violations(files: Iterable[Path], root: Path = PACKAGE) -> list[str]:
    out = []
    for path in files:
        for line, mod in imports_of(path, root):
            if under(mod, ("planner_svc.client",)):
                out.append(f"{path.relative_to(root.parent)}:{line} imports {mod}")
    return sorted(set(out))


def python_files(directory: Path) -> list[Path]:
    return sorted(directory.rglob("*.py"))


def outside_transport(root: Path = PACKAGE) -> list[Path]:
    """Every module of the package outside ``server``, ``client`` and ``api``."""
    keep = [root / name for name in TRANSPORT_PACKAGES]
    return [p for p in python_files(root) if not any(p.is_relative_to(k) for k in keep)]


def test_core_is_pure() -> None:
    files = python_files(PACKAGE / "core")
    assert len(files) >= 9
    assert core_violations(files) == []


def test_store_and_index_do_not_reach_up() -> None:
    files = [p for layer in LOWER_LAYERS for p in python_files(PACKAGE / layer)]
    assert files, "store/ and index/ have no modules"
    assert lower_layer_violations(files) == []


def test_only_the_transport_packages_know_grpc_and_protobuf() -> None:
    files = outside_transport()
    assert len(files) >= 80
    assert transport_violations(files) == []


def test_the_server_never_imports_the_clients() -> None:
    files = python_files(PACKAGE / "server")
    assert files
    assert client_violations(files) == []


# ---- the checker itself catches what it must -----------------------------------------------


@pytest.fixture
def fake_package(tmp_path: Path) -> Path:
    root = tmp_path / "planner_svc"
    for sub in ("core", "store", "server", "research", "api"):
        (root / sub).mkdir(parents=True)
        (root / sub / "__init__.py").write_text("")
    (root / "__init__.py").write_text("")
    return root


@pytest.mark.parametrize(
    ("source", "culprit"),
    [
        ("import os\n", "os"),
        ("import os.path\n", "os.path"),
        ("from time import monotonic\n", "time"),
        ("import numpy as np\n", "numpy"),
        ("def f():\n    import grpc\n", "grpc"),
        ("from google.protobuf import json_format\n", "google.protobuf"),
        ("from planner_svc.store import Store\n", "planner_svc.store"),
        ("from planner_svc import convert\n", "planner_svc.convert"),
        ("from .. import server\n", "planner_svc.server"),
        ("from ..recall.planner import x\n", "planner_svc.recall.planner"),
        ("import importlib\nimportlib.import_module('faiss')\n", "faiss"),
        ("__import__('sqlite3')\n", "sqlite3"),
    ],
)
def test_checker_flags_impure_core_imports(fake_package: Path, source: str, culprit: str) -> None:
    path = fake_package / "core" / "bad.py"
    path.write_text(source)
    found = core_violations([path], fake_package)
    assert any(v.endswith(f"imports {culprit}") for v in found), found


@pytest.mark.parametrize(
    "source",
    [
        "from __future__ import annotations\nimport math, struct, bisect\n",
        "from planner_svc.core.model import SpanRef\nfrom . import model\n",
        "from .errors import InvalidRequest\nimport blake3\nimport typing\n",
        "import timeit_like_name_is_not_time\n",
    ],
)
def test_checker_accepts_pure_imports(fake_package: Path, source: str) -> None:
    path = fake_package / "core" / "ok.py"
    path.write_text(source)
    assert core_violations([path], fake_package) == []


def test_checker_flags_lower_layers_reaching_up(fake_package: Path) -> None:
    bad = fake_package / "store" / "bad.py"
    bad.write_text("from ..server.app import create\nfrom planner_svc.recall import x\n")
    good = fake_package / "store" / "good.py"
    good.write_text("from planner_svc.core.model import SpanRef\nfrom . import bad\n")
    assert lower_layer_violations([bad, good], fake_package) == [
        "planner_svc/store/bad.py:1 imports planner_svc.server.app",
        "planner_svc/store/bad.py:1 imports planner_svc.server.app.create",
        "planner_svc/store/bad.py:2 imports planner_svc.recall",
        "planner_svc/store/bad.py:2 imports planner_svc.recall.x",
    ]


@pytest.mark.parametrize(
    ("source", "culprit"),
    [
        ("import grpc\n", "grpc"),
        ("def f():\n    from grpc_status import rpc_status\n", "grpc_status"),
        ("from google.protobuf import json_format\n", "google.protobuf"),
        ("from planner_svc.api.planner.v1 import plan_pb2\n", "planner_svc.api.planner.v1"),
        ("from ..api.planner.v1 import research_pb2\n", "planner_svc.api.planner.v1"),
        ("from .. import api\n", "planner_svc.api"),
        ("import importlib\nimportlib.import_module('grpc_health.v1')\n", "grpc_health.v1"),
    ],
)
def test_checker_flags_transport_outside_the_transport_packages(
    fake_package: Path, source: str, culprit: str
) -> None:
    path = fake_package / "research" / "bad.py"
    path.write_text(source)
    assert path in outside_transport(fake_package)
    found = transport_violations([path], fake_package)
    assert any(v.endswith(f"imports {culprit}") for v in found), found


def test_checker_leaves_the_transport_packages_alone(fake_package: Path) -> None:
    served = fake_package / "server" / "ok.py"
    served.write_text("import grpc\nfrom ..api.planner.v1 import plan_pb2\n")
    generated = fake_package / "api" / "stub.py"
    generated.write_text("import grpc\n")
    assert served not in outside_transport(fake_package)
    assert generated not in outside_transport(fake_package)
    assert transport_violations([fake_package / "research" / "__init__.py"], fake_package) == []


def test_checker_flags_the_server_importing_a_client(fake_package: Path) -> None:
    path = fake_package / "server" / "bad.py"
    path.write_text("from ..client.common import question_request\n")
    assert client_violations([path], fake_package) == [
        "planner_svc/server/bad.py:1 imports planner_svc.client.common",
        "planner_svc/server/bad.py:1 imports planner_svc.client.common.question_request",
    ]
