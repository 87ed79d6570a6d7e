"""The generated stubs in planner_svc/api must be exactly what protos/ generates."""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[2]
COMMITTED = ROOT / "planner_svc" / "api" / "planner" / "v1"
HINT = "generated stubs are stale: run `make protos` and commit planner_svc/api"


def load_generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("gen_protos", ROOT / "scripts" / "gen_protos.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def stub_files(directory: Path) -> dict[str, bytes]:
    return {
        p.name: p.read_bytes()
        for p in sorted(directory.iterdir())
        if p.is_file() and p.suffix in (".py", ".pyi")
    }


def test_generated_stubs_match_protos(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", os.environ.get("PATH", ""))  # generate() prepends to PATH
    written = load_generator().generate(tmp_path)
    assert written, "protoc wrote nothing"
    fresh = stub_files(tmp_path / "planner" / "v1")
    committed = stub_files(COMMITTED)
    protos = sorted(p.stem for p in (ROOT / "protos" / "planner" / "v1").glob("*.proto"))
    assert protos, "no .proto files found"
    for stem in protos:
        for suffix in ("_pb2.py", "_pb2.pyi", "_pb2_grpc.py", "_pb2_grpc.pyi"):
            assert stem + suffix in fresh, f"protoc did not produce {stem}{suffix}"
    missing = sorted(set(fresh) - set(committed))
    extra = sorted(set(committed) - set(fresh) - {"__init__.py"})
    assert not missing, f"{HINT} (missing: {missing})"
    assert not extra, f"{HINT} (no .proto produces: {extra})"
    stale = sorted(name for name, data in fresh.items() if committed[name] != data)
    assert not stale, f"{HINT} (differs: {stale})"


def test_generated_imports_point_into_the_package() -> None:
    for name, data in stub_files(COMMITTED).items():
        text = data.decode()
        assert "from planner.v1 import" not in text, name
        if name.endswith("_grpc.py"):
            assert "from planner_svc.api.planner.v1 import" in text, name
