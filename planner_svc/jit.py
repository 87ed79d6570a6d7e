"""Compiled numeric kernels: numba, imported and compiled (or loaded from its cache) on first use.

A few hot loops must add floating-point values in a fixed order (their results enter plan
hashes), which numpy can only do with extra passes and temporaries. numba compiles such a loop
as written: no fast-math, so LLVM neither reorders nor reassociates its additions, and the bits
are those of the same additions in numpy.

numba is imported by :meth:`Kernel.compiled`, not with this module, so commands that never run
a kernel (the clients) do not load it. A kernel's machine code is cached beside its module
(``__pycache__``), or in ``NUMBA_CACHE_DIR``; where numba finds no writable cache directory (a
read-only install) it compiles in memory and logs ``<name>_kernel_uncached``.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any, Generic, TypeVar, cast

import structlog

__all__ = ["Kernel", "compile_all"]

_F = TypeVar("_F", bound=Callable[..., Any])
_log = structlog.get_logger("planner_svc.jit")
_declared: list[Kernel[Any]] = []  # every kernel declared so far, in declaration order
_declared_lock = threading.Lock()


def compile_all() -> int:
    """Compile (or load from numba's cache) every kernel declared so far: those of the modules
    imported by now. A server calls it before it serves, so that no caller's plan pays for a
    first compile (about 0.05-0.3 s a kernel from the cache, 0.2-2.5 s afresh). Returns how many
    kernels there are."""
    with _declared_lock:
        kernels = list(_declared)
    for kernel in kernels:
        kernel.compiled()
    return len(kernels)


class Kernel(Generic[_F]):
    """One numba-compiled function, compiled once per process (thread-safe).

    Args:
        function: the Python function to compile (numba's subset of Python and numpy).
        signatures: given the ``numba.types`` module, the signatures to compile eagerly.
        name: the kernel's name in the log (``<name>_kernel_uncached``).
    """

    def __init__(self, function: Callable[..., Any],
                 signatures: Callable[[Any], list[Any]], *, name: str) -> None:
        self._function = function
        self._signatures = signatures
        self._name = name
        self._compiled: _F | None = None
        self._lock = threading.Lock()
        with _declared_lock:
            _declared.append(self)

    def compiled(self) -> _F:
        """The compiled function: compiled now if it was not yet (about 0.3 s from numba's
        cache, 0.5-1 s afresh)."""
        found = self._compiled
        if found is not None:
            return found
        with self._lock:
            if self._compiled is None:
                import numba
                from numba import types

                signatures = self._signatures(types)

                def jit(cache: bool) -> _F:
                    return cast(_F, numba.njit(signatures, cache=cache, nogil=True,
                                               boundscheck=False)(self._function))

                try:
                    self._compiled = jit(cache=True)
                except RuntimeError as exc:  # no writable cache directory (read-only install)
                    _log.warning(f"{self._name}_kernel_uncached", reason=str(exc),
                                 hint="set NUMBA_CACHE_DIR to a writable directory to keep "
                                      "the compiled kernel between processes")
                    self._compiled = jit(cache=False)
            return self._compiled
