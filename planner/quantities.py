"""Kubernetes quantities as the apiserver parses and re-serializes them (`resources`, `capacity` and the
like): one grammar and one arithmetic for the embedded cluster, which stores their canonical form, and
for planner's plan checks and comparisons (`planner.kube.quantity`).

Parsing follows apimachinery's `resource.ParseQuantity`: a sign, digits with an optional point, and a
suffix (binary `Ki…Ei`, decimal `n…E`, or an exponent `eN`); anything else is refused with the
apiserver's own words, which the embedded server puts in a 400. `exact` gives the value the text
writes; `kept` what the apiserver keeps of it: the value exactly, except that a non-zero value finer
than 1n is rounded away from zero to a whole nano-unit, and a binary-suffixed value beyond 2^63-1 is
clamped to it (so `99999Ei` is stored as 9223372036854775807). Huge decimal values (`1e400`) are kept as
they are: arithmetic works on (digits, exponent), never on the expanded number. `parse` reads a text as
the apiserver does, exponent and all: it trims spaces, and reads an exponent as an int64 that it then
wraps to an int32.

Serializing prints the canonical form: the suffix family of the input is kept, the largest suffix that
keeps the mantissa an integer is chosen (a decimal exponent a multiple of 3), and binary values below
1024 or with a fraction fall back to decimal. So `0.5` → `500m`, `1000m` → `1`, `1024Mi` → `1Gi`,
`1536Mi` stays, `0.5Gi` → `512Mi`, `1e400` → `10e399`. A decimal-SI value past `E` is printed with an
exponent (current apimachinery; v1.28 dropped the suffix, printing `1000E` as `1`).

A leaf: it imports nothing from planner.
"""

from __future__ import annotations

import re
from decimal import MAX_EMAX, MIN_EMIN, ROUND_UP, Context, Decimal, InvalidOperation

FORMAT_WRONG = "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
SUFFIX_WRONG = "unable to parse quantity's suffix"
MAX_ALLOWED = Decimal(2**63 - 1)
NANO = Decimal("1e-9")

# parseQuantityString: sign, number, then suffix letters, an optional sign and digits, and nothing else
_SCAN = re.compile(r"([+-]?)([0-9]*)(?:\.([0-9]*))?([eEinumkKMGTP]*[+-]?[0-9]*)")
_BINARY = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}
_DECIMAL = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
_DECIMAL_SUFFIX = {exp: suffix for suffix, exp in _DECIMAL.items()}
_BINARY_SUFFIX = {exp: suffix for suffix, exp in _BINARY.items()}


class QuantityError(ValueError):
    """The text is not a quantity; the message is the apiserver's."""


def parse(text: str) -> tuple[Decimal, str]:
    """The value the apiserver keeps and its format ("BinarySI", "DecimalSI", "DecimalExponent")."""
    text = text.strip()  # Quantity.UnmarshalJSON trims spaces
    number, base, exponent, family = _scan(text)
    if family == "DecimalExponent":
        exponent = _as_go_reads(exponent)
    value = kept(_value(number, base, exponent, _exact(text)), family)
    if family == "BinarySI" and 0 < abs(value) < 1:
        family = "DecimalSI"
    return value, family


def exact(text: str) -> tuple[Decimal, str]:
    """The value `text` writes, exactly (its exponent as written: no int32 wrap), and its format."""
    number, base, exponent, family = _scan(text)
    try:
        return _value(number, base, exponent, _exact(text)), family
    except InvalidOperation as exc:  # an exponent beyond what a Decimal can hold
        raise QuantityError(SUFFIX_WRONG) from exc


def kept(value: Decimal, family: str) -> Decimal:
    """What the apiserver keeps of an exact value: rounded away from zero to 1n when finer, and a
    BinarySI value clamped to ±(2^63-1)."""
    _, digits, exponent = value.as_tuple()
    if value and _finite(exponent) < -9:
        context = Context(prec=len(digits) + 2, Emax=MAX_EMAX, Emin=MIN_EMIN)
        value = value.quantize(NANO, rounding=ROUND_UP, context=context)
    if family == "BinarySI" and abs(value) > MAX_ALLOWED:
        value = MAX_ALLOWED.copy_sign(value)
    return value


def _scan(text: str) -> tuple[str, int, int, str]:
    """parseQuantityString: (the number's text, base, exponent, format); QuantityError when it is none."""
    scanned = _SCAN.fullmatch(text)
    if not text or scanned is None:
        raise QuantityError(FORMAT_WRONG)
    sign, whole, fraction, suffix = scanned.groups()
    base, exponent, family = _interpret(suffix)
    return f"{sign}{whole or '0'}.{fraction or '0'}", base, exponent, family


def _value(number: str, base: int, exponent: int, context: Context) -> Decimal:
    if base == 10:
        return Decimal(f"{number}e{exponent}", context)
    return context.multiply(Decimal(number), 2**exponent)


def _interpret(suffix: str) -> tuple[int, int, str]:
    """(base, exponent, format) of a suffix, as apimachinery's suffixer reads it."""
    if suffix in _DECIMAL:
        return 10, _DECIMAL[suffix], "DecimalSI"
    if suffix in _BINARY:
        return 2, _BINARY[suffix], "BinarySI"
    if len(suffix) > 1 and suffix[0] in "eE" and re.fullmatch(r"[+-]?[0-9]+", suffix[1:]):
        return 10, int(suffix[1:]), "DecimalExponent"
    raise QuantityError(SUFFIX_WRONG)


def _as_go_reads(exponent: int) -> int:
    """strconv.ParseInt(…, 64), then an int32 conversion that wraps."""
    if not -(2**63) <= exponent < 2**63:
        raise QuantityError(SUFFIX_WRONG)
    return (exponent + 2**31) % 2**32 - 2**31


def _exact(text: str) -> Context:
    """Room for every digit the text writes plus 2^60's, and any exponent it can write."""
    return Context(prec=len(text) + 40, Emax=MAX_EMAX, Emin=MIN_EMIN)


def canonical(text: str) -> str:
    return formatted(*parse(text))


def formatted(value: Decimal, family: str) -> str:
    """A value in its format, as `Quantity.String()` writes it (`parse` gives both)."""
    if value == 0:
        return "0"
    if family == "BinarySI" and abs(value) >= 1024 and value == value.to_integral_value(ROUND_UP):
        return _binary(int(value))
    return _decimal(value, exponent_form=family == "DecimalExponent")


def _binary(value: int) -> str:
    exponent = 0
    while exponent < 60 and value % 1024 == 0:
        value //= 1024
        exponent += 10
    return f"{value}{_BINARY_SUFFIX.get(exponent, '')}"


def _decimal(value: Decimal, *, exponent_form: bool) -> str:
    """Mantissa and a multiple-of-3 exponent, worked on the digits (a mantissa may be thousands long)."""
    sign, digit_tuple, exponent = value.as_tuple()
    digits = "".join(map(str, digit_tuple))
    mantissa = digits.rstrip("0")
    power = _finite(exponent) + len(digits) - len(mantissa)
    mantissa += "0" * (power % 3)
    power -= power % 3
    text = f"{'-' if sign else ''}{mantissa}"
    if not exponent_form and power in _DECIMAL_SUFFIX:
        return f"{text}{_DECIMAL_SUFFIX[power]}"
    return text if power == 0 else f"{text}e{power}"


def _finite(exponent: int | str) -> int:
    """A parsed value's exponent (never NaN's or Infinity's letter)."""
    assert isinstance(exponent, int)
    return exponent


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
