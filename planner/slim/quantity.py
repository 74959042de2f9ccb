"""Canonical quantity strings, as the apiserver re-serializes `resources`, `capacity` and the like.

The apiserver parses every quantity and prints it back in canonical form: the suffix family of the
input is kept (binary `Ki…Ei`, decimal `n…E`, or exponent `eN`), the largest suffix that keeps the
mantissa an integer is chosen, and binary values below 1024 or with a fraction fall back to decimal.
So `0.5` → `500m`, `1000m` → `1`, `1024Mi` → `1Gi`, `1536Mi` stays, `0.5Gi` → `512Mi`.
"""

from __future__ import annotations

import re
from decimal import ROUND_CEILING, Decimal, InvalidOperation

_PATTERN = re.compile(r"^([+-]?[0-9.]+)(Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E|[eE][+-]?[0-9]+)?$")
_BINARY = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}
_DECIMAL = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
_DECIMAL_SUFFIX = {exp: suffix for suffix, exp in _DECIMAL.items()}
_BINARY_SUFFIX = {exp: suffix for suffix, exp in _BINARY.items()}


class QuantityError(ValueError):
    """The text is not a quantity; the message is the apiserver's."""


def parse(text: str) -> tuple[Decimal, str]:
    """The value and the format family ("BinarySI", "DecimalSI", "DecimalExponent")."""
    match = _PATTERN.match(text.strip())
    if not match or match.group(1) in {"", ".", "+", "-"}:
        raise QuantityError(
            "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
        )
    try:
        number = Decimal(match.group(1))
    except InvalidOperation as exc:
        raise QuantityError(f"unable to parse quantity's suffix: {text}") from exc
    suffix = match.group(2) or ""
    if suffix in _BINARY:
        return number * (Decimal(2) ** _BINARY[suffix]), "BinarySI"
    if suffix and suffix[0] in "eE":
        return number * (Decimal(10) ** int(suffix[1:])), "DecimalExponent"
    return number * (Decimal(10) ** _DECIMAL[suffix]), "DecimalSI"


def canonical(text: str) -> str:
    value, family = parse(text)
    value = value.quantize(Decimal("1e-9"), rounding=ROUND_CEILING) if value % Decimal("1e-9") else value
    if family == "BinarySI" and value == value.to_integral_value() and abs(value) >= 1024:
        return _binary(int(value))
    return _decimal(value, exponent_form=family == "DecimalExponent")


def _binary(value: int) -> str:
    exponent = 0
    while exponent < 60 and value != 0 and value % 1024 == 0:
        value //= 1024
        exponent += 10
    return f"{value}{_BINARY_SUFFIX.get(exponent, '')}"


def _decimal(value: Decimal, *, exponent_form: bool) -> str:
    if value == 0:
        return "0"
    exponent = -9
    mantissa = value * (Decimal(10) ** 9)
    while exponent < 18 and mantissa % 1000 == 0:
        mantissa /= 1000
        exponent += 3
    digits = str(int(mantissa))
    if exponent_form:
        return digits if exponent == 0 else f"{digits}e{exponent}"
    return f"{digits}{_DECIMAL_SUFFIX[exponent]}"


def canonical_map(values: object) -> object:
    """Canonicalize every value of a ResourceList-like map; anything else is returned untouched."""
    if not isinstance(values, dict):
        return values
    out: dict[str, object] = {}
    for key, raw in values.items():
        out[key] = (
            canonical(str(raw)) if isinstance(raw, str | int | float) and not isinstance(raw, bool) else raw
        )
    return out
