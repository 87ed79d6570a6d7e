"""Transcendental functions computed the same way on every machine.

Plan weights enter the plan hash bit for bit, and the C library's ``log`` is not correctly
rounded everywhere (glibc, musl and macOS may differ in the last bit). The functions here use
only IEEE-754 operations that are exactly rounded (``+ - * /``, ``frexp``) in a fixed order, so
any conforming double-precision implementation, in any language, returns the same bits.
"""

from __future__ import annotations

import math

LN2 = 0.6931471805599453
"""ln 2 rounded to the nearest double."""
_SQRT_HALF = 0.7071067811865476
_ATANH_TERMS = 12
"""Terms of the atanh series: with |z| <= 0.1716 the 13th term is below 2**-60."""


def ln(x: float) -> float:
    """Natural logarithm of a finite ``x > 0``, within about one ulp, reproducible bit for bit.

    ``x = m * 2**e`` with ``m`` in ``[sqrt(1/2), sqrt(2))`` (exact), then
    ``ln x = e * ln 2 + 2 * atanh(z)`` with ``z = (m - 1) / (m + 1)`` and the atanh series
    ``z + z**3/3 + z**5/5 + ...`` summed by Horner's rule from its last term.

    Raises:
        ValueError: ``x`` is not finite or not positive.
    """
    if not (x > 0.0 and math.isfinite(x)):
        raise ValueError(f"ln needs a finite positive number, got {x!r}")
    m, e = math.frexp(x)  # 0.5 <= m < 1, exact
    if m < _SQRT_HALF:
        m *= 2.0
        e -= 1
    z = (m - 1.0) / (m + 1.0)
    z2 = z * z
    acc = 0.0
    for k in range(_ATANH_TERMS, -1, -1):
        acc = acc * z2 + 1.0 / (2 * k + 1)
    return e * LN2 + 2.0 * z * acc
