"""Quantities as the API server reads them: the texts it accepts and the value it keeps.

Expected values follow apimachinery's resource.ParseQuantity: its grammar (`1K`, `1e3Mi`, `Infinity`
are refused although the Python client's parser takes them), rounding away from zero to 1n, and the
clamp of binary-suffixed values at 2^63-1.
"""

from __future__ import annotations

from decimal import Decimal

import pytest

from planner.kube.quantity import MAX_QUANTITY, parse_quantity, stored_quantity

KEPT = [
    ("500m", Decimal("0.5"), "a milli value"),
    ("1Gi", Decimal(2**30), "a binary suffix"),
    ("1e3", Decimal(1000), "an exponent"),
    ("1E3", Decimal(1000), "an exponent with a capital E"),
    ("1E", Decimal(10**18), "exa, not an exponent"),
    ("1.", Decimal(1), "a trailing point"),
    (".5", Decimal("0.5"), "a leading point"),
    ("+1", Decimal(1), "a plus sign"),
    ("0.0000000001", Decimal("1e-9"), "a value finer than 1n is rounded up to 1n"),
    ("1.0000000001", Decimal("1.000000001"), "a fraction beyond nano is rounded away from zero"),
    ("-0.0000000001", Decimal("-1e-9"), "a negative one away from zero too"),
    ("8Ei", MAX_QUANTITY, "8Ei is one more than 2^63-1: clamped"),
    ("99999999999999999999999999Ei", MAX_QUANTITY, "a huge binary value is clamped"),
    ("1000E", Decimal(10**21), "a decimal value is not clamped"),
    ("1e400", Decimal("1e400"), "nor is a decimal exponent"),
    (
        "1.00000000000000000000001Ei",
        Decimal("1152921504606846976.000011530"),
        "27 significant digits times 2^60 stay exact before the rounding",
    ),
]

REFUSED = [
    ("1K", "a capital K (only k is kilo)"),
    ("1ki", "a lowercase binary suffix"),
    ("1e3Mi", "an exponent with a suffix"),
    ("Infinity", "Infinity"),
    ("NaN", "NaN"),
    ("1_000", "an underscore"),
    (" 1", "a leading space"),
    ("1e", "an exponent without digits"),
    ("0x10", "hexadecimal"),
    ("1.5.5", "two points"),
    ("", "nothing"),
]


@pytest.mark.parametrize(("text", "kept"), [case[:2] for case in KEPT], ids=[case[2] for case in KEPT])
def test_the_value_the_server_keeps(text: str, kept: Decimal) -> None:
    assert stored_quantity(text) == kept


@pytest.mark.parametrize("text", [case[0] for case in REFUSED], ids=[case[1] for case in REFUSED])
def test_texts_the_server_refuses_are_not_quantities(text: str) -> None:
    with pytest.raises(ValueError):
        parse_quantity(text)


def test_parse_keeps_the_exact_value_so_bounds_can_be_checked() -> None:
    assert parse_quantity("8Ei") == MAX_QUANTITY + 1
    assert parse_quantity("0.0000000001") == Decimal("1e-10")
