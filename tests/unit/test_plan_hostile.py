"""Hostile plan files are refused with one diagnostic at the offending byte, never a hang or a traceback.

Each case is raw bytes (no header) and the exact line the loader prints; positions were counted by hand.
The limits themselves are checked at their edges: the largest allowed input is read, one more is refused.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from planner.errors import PlanError
from planner.plan import load_plans
from planner.plan.input_limits import MAX_ALIAS_EXPANSIONS, MAX_DEPTH, MAX_FILE_BYTES
from planner.plan.schema import plan_schema

HEAD = b"apiVersion: planner.dev/v1\nkind: Plan\nmetadata: {name: x}\n"  # the body starts on line 4
LAUGHS = b"".join(
    b"%s: &%s [%s]\n" % (bytes([level]), bytes([level]), b",".join([b"*" + bytes([level - 1])] * 9))
    for level in range(ord("b"), ord("j"))
)
BILLION_LAUGHS = HEAD + b'a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]\n' + LAUGHS
EXPANSIONS = (
    f"more than {MAX_ALIAS_EXPANSIONS:,} alias expansions in one file (an alias inside an anchored node "
    "counts each time that node is copied): write the repeated part out or use fewer aliases"
)
TOO_DEEP = (
    f"nested more than {MAX_DEPTH} levels deep: planner reads plans nested at most {MAX_DEPTH} levels "
    "(is a bracket left open?)"
)

CASES: list[tuple[str, bytes, str]] = [
    (
        "a billion-laughs alias bomb stops at the alias that passes the expansion limit",
        BILLION_LAUGHS,
        # b: 9 expansions, c: 9 x 10 = 90, d: 9 x 91 = 819 (918 in all); e's first alias adds 820
        "{f}:8:8: " + EXPANSIONS,
    ),
    (
        "100,000 open brackets stop at the first level past the limit, before any composing",
        HEAD + b"a: " + b"[" * 100_000,  # the root is level 1: the 64th bracket, column 67, opens level 65
        "{f}:4:67: " + TOO_DEEP,
    ),
    (
        "nested block mappings count like brackets",
        HEAD + b"".join(b"  " * level + b"k:\n" for level in range(MAX_DEPTH + 1)),
        # the first `k:` is a key of the root mapping (level 1); the one indented 2n opens level n + 1
        "{f}:68:129: " + TOO_DEEP,
    ),
    (
        "a self-referencing anchor is refused at the alias",
        HEAD + b"extra: &m {name: x, self: *m}\n",
        '{f}:4:27: alias "*m" refers to the node that contains it: a plan cannot contain itself',
    ),
    (
        "a merge key that merges its own mapping is a self-reference too",
        HEAD + b"extra: &m\n  <<: *m\n",
        '{f}:5:7: alias "*m" refers to the node that contains it: a plan cannot contain itself',
    ),
    (
        "an alias to a deep node placed deep is as deep as its expansion",
        HEAD + b"a: &d " + b"[" * 40 + b"1" + b"]" * 40 + b"\nb: " + b"[" * 30 + b"*d" + b"]" * 30 + b"\n",
        '{f}:5:34: alias "*d" nests more than 64 levels deep: planner reads plans nested at most 64 levels',
    ),
    (
        "one big anchored node copied many times passes the copy budget",
        HEAD + b"a: &big [" + b",".join([b"1"] * 60_000) + b"]\nb: [*big, *big, *big]\n",
        # 9 nodes in HEAD, 60,002 under `a`, 2 for `b`: 60,013 written; each alias copies 60,001, and the
        # second brings the copies to 120,002, past max(60,013, 100,000)
        "{f}:5:11: aliases copy 180,003 nodes, more than the 60,013 the file writes itself: planner lets "
        "aliases copy at most as many nodes as a file writes (or 100,000)",
    ),
    (
        "a NUL byte is named with its position",
        HEAD + b"workloads:\n  - name: w\x00\n",
        '{f}:5:12: control character U+0000 is not allowed in YAML (quote it as an escape, e.g. "\\u0000")',
    ),
    (
        "an escape character inside a quoted string is still a control character",
        HEAD + b'extra: "a\x1b[31m"\n',
        '{f}:4:10: control character U+001B is not allowed in YAML (quote it as an escape, e.g. "\\u001b")',
    ),
    (
        "a byte that is not UTF-8 is reported where it is, counted in characters",
        HEAD + "extra: é".encode() + b" caf\xe9\n",
        "{f}:4:13: not UTF-8: byte 0xE9 cannot be decoded (save the file as UTF-8)",
    ),
    (
        "an integer too long for Python is a YAML error at the value, not a traceback",
        HEAD + b"extra: " + b"9" * 5000 + b"\n",
        "{f}:4:8: invalid YAML: cannot read this !!int value",
    ),
    (
        "a hex integer over Python's 4,300 printable digits is a YAML error at the value",
        HEAD + b"extra: 0x" + b"f" * 4000 + b"\n",
        "{f}:4:8: invalid YAML: cannot read this !!int value",
    ),
    (
        "an explicitly tagged empty integer is a YAML error at the value",
        HEAD + b"extra: !!int\n",
        "{f}:4:8: invalid YAML: cannot read this !!int value",
    ),
]


def _errors(path: Path) -> list[str]:
    with pytest.raises(PlanError) as raised:
        load_plans([path])
    return [str(diagnostic) for diagnostic in raised.value.diagnostics]


@pytest.mark.parametrize(("data", "expected"), [case[1:] for case in CASES], ids=[case[0] for case in CASES])
def test_hostile_yaml_is_one_diagnostic_at_its_position(tmp_path: Path, data: bytes, expected: str) -> None:
    path = tmp_path / "plan.yaml"
    path.write_bytes(data)
    assert _errors(path) == [expected.format(f=path)]


def test_a_file_over_the_size_limit_is_refused_without_being_read(tmp_path: Path) -> None:
    path = tmp_path / "plan.yaml"
    with path.open("wb") as sparse:  # 55 MB of nothing on disk: the loader must not read it
        sparse.truncate(55_000_000)
    assert _errors(path) == [
        f"{path}:1:1: plan file is 55,000,000 bytes (52.5 MiB), over the limit of 8,388,608 bytes (8 MiB) per "
        "plan file: split it into several plans"
    ]


def test_a_file_of_exactly_the_size_limit_is_read(tmp_path: Path) -> None:
    path = tmp_path / "plan.yaml"
    comment = b"# " + b"x" * 1021 + b"\n"  # 1 KiB lines
    path.write_bytes(comment * (MAX_FILE_BYTES // len(comment)))
    assert path.stat().st_size == MAX_FILE_BYTES
    assert _errors(path) == [f"{path}:1:1: empty plan file: expected a plan (apiVersion, kind, metadata)"]
    path.write_bytes(path.read_bytes() + b"\n")
    assert _errors(path) == [
        f"{path}:1:1: plan file is 8,388,609 bytes (8.0 MiB), over the limit of 8,388,608 bytes (8 MiB) per "
        "plan file: split it into several plans"
    ]


def _nested(levels: int) -> bytes:
    return HEAD + b"workloads: " + b"[" * (levels - 1) + b"]" * (levels - 1) + b"\n"


def test_nesting_up_to_the_limit_is_read_and_one_more_level_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "plan.yaml"
    path.write_bytes(_nested(MAX_DEPTH))  # the root mapping is level 1
    assert all("nested more than" not in line for line in _errors(path))  # schema errors, not the limit
    path.write_bytes(_nested(MAX_DEPTH + 1))
    assert _errors(path) == [
        f"{path}:4:{11 + MAX_DEPTH}: " + TOO_DEEP
    ]  # bracket k, column 11 + k, opens k + 1


def _aliases(count: int) -> bytes:
    return HEAD + b"a: &a 1\nb: [" + b",".join([b"*a"] * count) + b"]\n"


def test_alias_expansions_up_to_the_limit_are_read_and_one_more_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "plan.yaml"
    path.write_bytes(_aliases(MAX_ALIAS_EXPANSIONS))
    fields = ", ".join(plan_schema()["properties"])  # every top-level field, in the schema's order
    assert _errors(path) == [
        f'{path}:4:1: a: unknown field "a" (expected one of: {fields})',
        f'{path}:5:1: b: unknown field "b" (expected one of: {fields})',
    ]
    path.write_bytes(_aliases(MAX_ALIAS_EXPANSIONS + 1))
    column = 5 + 3 * MAX_ALIAS_EXPANSIONS  # `b: [` then `*a,` per alias
    assert _errors(path) == [f"{path}:5:{column}: " + EXPANSIONS]


def test_aliases_and_merge_keys_within_the_limits_still_work(tmp_path: Path) -> None:
    path = tmp_path / "plan.yaml"
    path.write_text(
        "apiVersion: planner.dev/v1\nkind: Plan\nmetadata: {name: x}\n"
        "workloads:\n"
        "  - &web {name: web, image: nginx, env: &env {MODE: prod}}\n"
        "  - {<<: *web, name: api, env: *env}\n"
    )
    web, api = load_plans([path]).plans[0].workloads
    assert (api.image, dict(api.env), dict(web.env)) == ("nginx", {"MODE": "prod"}, {"MODE": "prod"})


def test_a_long_list_of_unsortable_items_is_checked_in_one_pass(tmp_path: Path) -> None:
    """jsonschema's uniqueItems compares every pair of items that do not sort: with these 5,001 mappings
    it ran for 48 s (8 MiB of them: days). Each item gets its type error, and the repeat is found."""
    items = b", ".join(b"{a: %d}" % index for index in range(5_000))
    path = tmp_path / "plan.yaml"
    path.write_bytes(
        HEAD + b"workloads:\n  - name: w\n    image: i\n    dependsOn: [" + items + b", {a: 7}]\n"
    )
    errors = _errors(path)
    assert len(errors) == 5_002
    assert f"{path}:7:" in errors[-1] and errors[-1].endswith('dependsOn[5000]: {"a": 7} is listed twice')
