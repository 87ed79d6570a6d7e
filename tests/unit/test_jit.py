"""The kernel registry: every declared kernel is compiled by ``compile_all``."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import planner_svc.core.fusion
from planner_svc import jit
from planner_svc.core import fusion
from planner_svc.core.fusion import clamp_unit


def _double_into(values: Any, out: Any) -> None:
    for i in range(values.shape[0]):
        out[i] = values[i] * 2.0


def _signatures(types: Any) -> list[Any]:
    return [types.void(types.float64[::1], types.float64[::1])]


def test_compile_all_compiles_a_kernel_declared_after_import(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(jit, "_declared", [])  # the project's kernels are not compiled here
    kernel: jit.Kernel[Any] = jit.Kernel(_double_into, _signatures, name="double")
    assert kernel._compiled is None  # declared, not compiled
    assert jit.compile_all() == 1
    assert kernel._compiled is not None and jit._declared == [kernel]
    out = np.zeros(3)
    kernel.compiled()(np.array([1.0, 2.5, -3.0]), out)
    assert out.tolist() == [2.0, 5.0, -6.0]


def _halved(value: float) -> float:
    return value / 2.0


def _quartered(value: float) -> float:
    return _halved(_halved(value))


def _quarter_into(values: Any, out: Any) -> None:
    for i in range(values.shape[0]):
        out[i] = _quartered(values[i])


def test_a_kernel_calls_the_shared_functions_it_names(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(jit, "_declared", [])
    halved, quartered = _halved, _quartered
    monkeypatch.setitem(globals(), "_halved", halved)  # plain functions again after the test
    monkeypatch.setitem(globals(), "_quartered", quartered)
    kernel: jit.Kernel[Any] = jit.Kernel(_quarter_into, _signatures, name="quarter",
                                         calls=(quartered, halved))
    assert globals()["_halved"] is halved  # compiled with the kernel, not when declared
    out = np.zeros(3)
    kernel.compiled()(np.array([1.0, 2.5, -3.0]), out)
    assert out.tolist() == [0.25, 0.625, -0.75]
    compiled = globals()["_halved"]
    assert compiled is not halved and compiled.py_func is halved  # numba's, in its place
    assert compiled(3.0) == 1.5  # and still callable from Python


def test_a_shared_function_of_another_module_is_refused() -> None:
    with pytest.raises(ValueError, match="not in"):
        jit.Kernel(_double_into, _signatures, name="double", calls=(np.abs,))


def _clamped_into(values: Any, out: Any) -> None:
    for i in range(values.shape[0]):
        out[i] = clamp_unit(values[i])


def test_a_kernel_calling_another_modules_function_is_refused() -> None:
    with pytest.raises(ValueError, match=r"calls planner_svc\.core\.fusion\.clamp_unit"):
        jit.Kernel(_clamped_into, _signatures, name="clamped")


def test_a_shared_function_the_kernel_does_not_name_is_refused_when_declared(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Whatever compiled before (a kernel that names both would make the other work in the
    same process): the code is read when the kernel is declared."""
    monkeypatch.setattr(jit, "_declared", [])
    with pytest.raises(ValueError, match="_halved without naming it"):
        jit.Kernel(_quarter_into, _signatures, name="quarter", calls=(_quartered,))
    with pytest.raises(ValueError, match="_quartered without naming it"):
        jit.Kernel(_quarter_into, _signatures, name="quarter")
    assert jit._declared == []


def test_a_shared_function_under_another_name_is_refused() -> None:
    alias = _halved

    def _halved_again(value: float) -> float:
        return alias(value)

    with pytest.raises(ValueError, match="by module name"):
        jit.Kernel(_double_into, _signatures, name="double", calls=(_halved_again,))


def _clamped_by_module_into(values: Any, out: Any) -> None:
    for i in range(values.shape[0]):
        out[i] = fusion.clamp_unit(values[i])


def shape(value: float) -> float:  # a module function named like an array attribute
    return value


def _sized_into(values: Any, out: Any) -> None:
    for i in range(values.shape[0]):
        out[i] = values[i] * 2.0


_alias = _halved


def _aliased_into(values: Any, out: Any) -> None:
    for i in range(values.shape[0]):
        out[i] = _alias(values[i])


def test_what_the_code_reaches_through_a_module_or_an_alias_is_checked_too(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(jit, "_declared", [])
    with pytest.raises(ValueError, match=r"calls planner_svc\.core\.fusion\.clamp_unit"):
        jit.Kernel(_clamped_by_module_into, _signatures, name="clamped")
    with pytest.raises(ValueError, match="_alias without naming it"):
        jit.Kernel(_aliased_into, _signatures, name="aliased", calls=(_halved,))
    # an attribute (values.shape) is not the module's function of that name
    jit.Kernel(_sized_into, _signatures, name="sized")
    assert shape(1.0) == 1.0


def _chained_into(values: Any, out: Any) -> None:
    for i in range(values.shape[0]):
        out[i] = planner_svc.core.fusion.clamp_unit(values[i])


def _held_module_into(values: Any, out: Any) -> None:
    other = fusion
    for i in range(values.shape[0]):
        out[i] = other.clamp_unit(values[i])


def test_a_module_reached_through_submodules_or_held_in_a_local_is_checked() -> None:
    with pytest.raises(ValueError, match=r"calls planner_svc\.core\.fusion\.clamp_unit"):
        jit.Kernel(_chained_into, _signatures, name="chained")
    with pytest.raises(ValueError, match=r"holds module planner_svc\.core\.fusion"):
        jit.Kernel(_held_module_into, _signatures, name="held")
