"""Compiled numeric kernels: numba, imported and compiled (or loaded from its cache) on first use.

A few hot loops must add floating-point values in a fixed order (their results enter plan
hashes), which numpy can only do with extra passes and temporaries. numba compiles such a loop
as written: no fast-math, so LLVM neither reorders nor reassociates its additions, and the bits
are those of the same additions in numpy.

numba is imported by :meth:`Kernel.compiled`, not with this module, so commands that never run
a kernel (the clients) do not load it. A kernel's machine code is cached beside its module
(``__pycache__``), or in ``NUMBA_CACHE_DIR``; where numba finds no writable cache directory (a
read-only install) it compiles in memory and logs ``<name>_kernel_uncached``.

Code that several kernels of a module share (a binary search, a power's chain of
multiplications) is written once, as a plain function of that module, and named in each
kernel's ``calls``: compiling a kernel first compiles those functions, in place of their
names in the module, to be inlined where the kernel calls them (numba's ``inline="always"``:
the kernel's code is that of the same lines written out at each call). They must live in
the kernel's own module, because numba keeps a cached kernel until its own source file
changes: an edit to a function in another file would leave callers' machine code stale.
"""

from __future__ import annotations

import dis
import threading
import types
from collections.abc import Callable, Iterator, Sequence
from typing import Any, Generic, TypeVar, cast

import structlog

__all__ = ["Kernel", "compile_all"]

_F = TypeVar("_F", bound=Callable[..., Any])
_log = structlog.get_logger("planner_svc.jit")
_declared: list[Kernel[Any]] = []  # every kernel declared so far, in declaration order
_declared_lock = threading.Lock()
_calls_lock = threading.Lock()  # compiles a module's shared functions once


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
        calls: plain functions of the same module that ``function`` calls by their module
            names, and those they call in turn; each is compiled (once, for every kernel
            that calls it) before ``function``, and its module name then refers to the
            compiled function.

    Raises:
        ValueError: ``function`` (or a function in ``calls``) calls a function of another
            module, or one of its own module that ``calls`` does not name, or ``calls``
            names a function that is not its module's function of that name. (Checked when
            the kernel is declared, from the code, so a missing name fails on import, not
            only in a process that happens to compile this kernel first.)
    """

    def __init__(self, function: Callable[..., Any],
                 signatures: Callable[[Any], list[Any]], *, name: str,
                 calls: Sequence[Callable[..., Any]] = ()) -> None:
        _check_calls(name, function, tuple(calls))
        self._function = function
        self._signatures = signatures
        self._name = name
        self._calls = tuple(calls)
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
                    self._compile_calls(numba, cache)
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

    def _compile_calls(self, numba: Any, cache: bool) -> None:
        """Put a compiled function (typed when the kernel is) in place of each of the
        kernel's ``calls`` in their module, unless a kernel did already."""
        namespace = self._function.__globals__
        with _calls_lock:
            for called in self._calls:
                if namespace.get(called.__name__) is called:
                    namespace[called.__name__] = numba.njit(
                        cache=cache, nogil=True, boundscheck=False, inline="always")(called)


def _check_calls(name: str, function: Callable[..., Any],
                 calls: tuple[Callable[..., Any], ...]) -> None:
    """Refuse a kernel whose code calls a Python function of another module (numpy's and
    the standard library's aside), or of its own module without naming it in ``calls``
    (see :class:`Kernel`). The code's globals, the attributes it reads of a module global,
    its closure's cells and its defaults are what it can call."""
    module, namespace = function.__module__, function.__globals__
    for called in calls:
        if called.__module__ != module:
            raise ValueError(f"{name}: {called.__qualname__} is not in {module}, so its "
                             "changes would not refresh the kernel's cached machine code")
        found = namespace.get(called.__name__)
        if getattr(found, "py_func", found) is not called:
            raise ValueError(f"{name}: {called.__qualname__} is not {module}'s "
                             f"{called.__name__} (a kernel calls functions by module name)")
    listed = {id(called) for called in calls}
    seen: set[int] = set()
    pending = [function]
    while pending:
        current = pending.pop()
        for label, value in _callables(current):
            if isinstance(value, types.ModuleType) and not _library(value.__name__):
                raise ValueError(f"{name}: holds module {value.__name__} ({label}), whose "
                                 "functions it could call; a kernel calls only functions of "
                                 "its own module")
            plain = getattr(value, "py_func", value)  # a compiled one: its Python function
            if not isinstance(plain, types.FunctionType) or id(plain) in seen \
                    or _library(plain.__module__):
                continue
            seen.add(id(plain))
            if plain.__module__ != module:
                raise ValueError(f"{name}: calls {plain.__module__}.{plain.__qualname__}; a "
                                 "kernel calls only functions of its own module (numba's "
                                 "cache follows the kernel's own source file)")
            if id(plain) not in listed or label != plain.__name__:
                raise ValueError(f"{name}: calls {label} without naming it in calls= (by "
                                 "its own name)")
            pending.append(plain)


_LIBRARIES = frozenset({"numpy", "math", "cmath", "operator"})
"""Packages whose functions a kernel may call (numba compiles its own versions)."""
_PASSED_OVER = frozenset({"EXTENDED_ARG", "CACHE", "NOP"})
"""Instructions between a load and the attribute read it is for."""


def _library(module: str | None) -> bool:
    """Whether a function or module of ``module`` is one a kernel may use."""
    return (module or "").partition(".")[0] in _LIBRARIES


def _callables(function: Callable[..., Any]) -> Iterator[tuple[str, Any]]:
    """What ``function``'s code can call, with the name it uses: the globals it loads, the
    attributes it reads of a global that is a module (through submodules: ``pkg.sub.f``),
    its closure's cells and its default arguments, in its code and the code nested in it. A
    module loaded and not read an attribute of at once (bound to a local, say) is yielded
    as the module itself."""
    if not isinstance(function, types.FunctionType):
        return
    namespace = function.__globals__
    codes = [function.__code__]
    while codes:
        code = codes.pop()
        codes.extend(c for c in code.co_consts if isinstance(c, types.CodeType))
        loaded: types.ModuleType | None = None  # the module just pushed, if one was
        label = ""
        for instruction in dis.get_instructions(code):
            if instruction.opname in _PASSED_OVER:
                continue
            if loaded is not None and instruction.opname in ("LOAD_ATTR", "LOAD_METHOD"):
                value = getattr(loaded, instruction.argval, None)
                label = f"{label}.{instruction.argval}"
                if isinstance(value, types.ModuleType):  # a submodule: read on
                    loaded = value
                    continue
                yield label, value
                loaded = None
                continue
            if loaded is not None:  # a module used otherwise than read an attribute of
                yield label, loaded
                loaded = None
            if instruction.opname == "LOAD_GLOBAL":
                value = namespace.get(instruction.argval)
                label = instruction.argval
                if isinstance(value, types.ModuleType) and not _library(value.__name__):
                    loaded = value
                    continue
                yield label, value
        if loaded is not None:
            yield label, loaded
    for cell in function.__closure__ or ():
        yield "a closure cell", cell.cell_contents
    for default in (*(function.__defaults__ or ()), *(function.__kwdefaults__ or {}).values()):
        yield "a default argument", default
