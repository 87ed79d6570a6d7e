"""Every package pins its public surface in ``__all__``, and everything there is documented.

For each package of ``planner_svc`` (the generated ``api`` aside): every public name it exposes
is in its ``__all__``; every name in ``__all__`` exists and has a docstring. A class or
function is documented by its own docstring (read from the source, so a dataclass's generated
signature does not count); a constant or type alias by the string literal that follows its
assignment (or a ``#:`` comment before it). The surface is read from the packages themselves,
so it cannot drift from a list kept here.
"""

from __future__ import annotations
import __future__

import ast
import importlib
import inspect
import pkgutil
from functools import cache
from pathlib import Path
from types import ModuleType

import pytest

import planner_svc

ROOT = Path(planner_svc.__file__).resolve().parent


def _packages() -> list[str]:
    names = ["planner_svc"]
    for info in pkgutil.walk_packages([str(ROOT)], prefix="planner_svc."):
        if info.ispkg and not info.name.startswith("planner_svc.api"):
            names.append(info.name)
    return sorted(names)


PACKAGES = _packages()


@cache
def _tree(path: Path) -> ast.Module:
    return ast.parse(path.read_text(encoding="utf-8"))


@cache
def _documented_assignments() -> frozenset[str]:
    """Names assigned at module level anywhere in the package with an attribute docstring (a
    string literal right after the assignment) or a ``#:`` comment on the line before."""
    names: set[str] = set()
    for path in ROOT.rglob("*.py"):
        if "api" in path.relative_to(ROOT).parts[:1]:
            continue
        lines = path.read_text(encoding="utf-8").splitlines()
        body = _tree(path).body
        for i, node in enumerate(body):
            targets: list[ast.expr] = []
            if isinstance(node, ast.Assign):
                targets = list(node.targets)
            elif isinstance(node, ast.AnnAssign):
                targets = [node.target]
            for target in targets:
                if not isinstance(target, ast.Name):
                    continue
                following = body[i + 1] if i + 1 < len(body) else None
                literal = (
                    isinstance(following, ast.Expr)
                    and isinstance(following.value, ast.Constant)
                    and isinstance(following.value.value, str)
                )
                comment = node.lineno >= 2 and lines[node.lineno - 2].lstrip().startswith("#:")
                if literal or comment:
                    names.add(target.id)
    return frozenset(names)


def _has_docstring(name: str, obj: object) -> bool:
    if inspect.isclass(obj) or inspect.isfunction(obj):
        module = inspect.getmodule(obj)
        source = getattr(module, "__file__", None)
        if source is None or not str(source).startswith(str(ROOT)):
            return bool(inspect.getdoc(obj))
        for node in ast.walk(_tree(Path(source))):
            if (
                isinstance(node, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
                and node.name == obj.__name__
            ):
                return bool(ast.get_docstring(node))
        return False
    return name in _documented_assignments()


def _exposed(package: ModuleType) -> set[str]:
    """Public names in the package's namespace that are not modules or ``__future__``
    features."""
    return {
        name
        for name, value in vars(package).items()
        if not name.startswith("_")
        and not inspect.ismodule(value)
        and not isinstance(value, __future__._Feature)
    }


def test_every_package_is_checked() -> None:
    for expected in ("planner_svc.core", "planner_svc.store", "planner_svc.server",
                     "planner_svc.client", "planner_svc.server.convert"):
        assert expected in PACKAGES


@pytest.mark.parametrize("name", PACKAGES)
def test_public_surface_is_pinned_and_documented(name: str) -> None:
    package = importlib.import_module(name)
    exported = getattr(package, "__all__", None)
    assert exported is not None, f"{name} has no __all__"
    assert len(set(exported)) == len(exported), f"{name}.__all__ repeats a name"
    missing = _exposed(package) - set(exported)
    assert not missing, f"{name} exposes names missing from __all__: {sorted(missing)}"
    undocumented = []
    for member in exported:
        assert hasattr(package, member), f"{name}.__all__ names {member!r}, which is absent"
        if not _has_docstring(member, getattr(package, member)):
            undocumented.append(member)
    assert not undocumented, f"{name} exports undocumented names: {sorted(undocumented)}"
