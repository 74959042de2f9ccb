"""planner.quantities, the quantity arithmetic the embedded cluster and planner's checks share: the
exact value a text writes, what the apiserver keeps of it, and how the apiserver reads an exponent
(the canonical forms are in tests/unit/slim/test_units.py, planner's stricter grammar in
tests/unit/test_kube_quantity.py)."""

from __future__ import annotations

from decimal import Decimal

import pytest

from planner import quantities

MAX = Decimal(2**63 - 1)

EXACT = [
    ("1.5Ki", Decimal(1536), "BinarySI", "a binary suffix multiplies by 2^10"),
    ("5n", Decimal("0.000000005"), "DecimalSI", "nano"),
    ("0.0000000001", Decimal("1e-10"), "DecimalSI", "finer than 1n, as written"),
    ("8Ei", MAX + 1, "BinarySI", "past 2^63-1, as written"),
    ("1e4294967296", Decimal("1e4294967296"), "DecimalExponent", "an exponent as written"),
]


@pytest.mark.parametrize(("text", "value", "family"), [c[:3] for c in EXACT], ids=[c[3] for c in EXACT])
def test_the_exact_value_a_text_writes(text: str, value: Decimal, family: str) -> None:
    assert quantities.exact(text) == (value, family)


KEPT = [
    (Decimal("1e-10"), "DecimalSI", Decimal("1e-9"), "finer than 1n rounds up to 1n"),
    (Decimal("-1.0000000001"), "DecimalSI", Decimal("-1.000000001"), "away from zero"),
    (Decimal("2.5"), "DecimalSI", Decimal("2.5"), "a value no finer than 1n stays"),
    (MAX + 1, "BinarySI", MAX, "a binary value past 2^63-1 is clamped"),
    (-(MAX + 1), "BinarySI", -MAX, "on either side"),
    (MAX + 1, "DecimalSI", MAX + 1, "a decimal one is not"),
]


@pytest.mark.parametrize(("value", "family", "kept"), [c[:3] for c in KEPT], ids=[c[3] for c in KEPT])
def test_what_the_apiserver_keeps(value: Decimal, family: str, kept: Decimal) -> None:
    assert quantities.kept(value, family) == kept


def test_the_apiserver_wraps_an_exponent_to_an_int32_and_refuses_one_past_an_int64() -> None:
    assert quantities.parse("1e4294967296") == (Decimal(1), "DecimalExponent")
    # 2^31 wraps to -2^31: 1e-2147483648, finer than 1n, kept as 1n
    assert quantities.parse("1e2147483648") == (Decimal("1e-9"), "DecimalExponent")
    with pytest.raises(quantities.QuantityError, match=quantities.SUFFIX_WRONG):
        quantities.parse("1e9223372036854775808")


def test_the_apiserver_trims_spaces_and_a_binary_fraction_turns_decimal() -> None:
    assert quantities.parse(" 1Gi ") == (Decimal(2**30), "BinarySI")
    assert quantities.parse("0.5Ki") == (Decimal(512), "BinarySI")
    assert quantities.parse("0.0001Ki") == (Decimal("0.1024"), "DecimalSI")
