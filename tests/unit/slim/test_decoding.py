"""Body decoding as the apiserver's Go decoders do it: the messages are the ones a v1.28 apiserver writes
(type errors from encoding/json, strict errors from sigs.k8s.io/json, the unstructured converter's,
structured-merge-diff's, and the unmarshalers of Quantity, IntOrString, Time and MicroTime)."""

from __future__ import annotations

from typing import Any

import pytest

from planner.slim import applyschema, decoding, fieldvalidation, gotime, media, unstructured, yamljson
from planner.slim.openapi.schemas import GoType, schemas
from planner.slim.status_errors import StatusError

S = schemas()


def kind(api_version: str, name: str) -> GoType:
    found = S.type_of(api_version, name)
    assert found is not None
    return found


DEPLOYMENT = kind("apps/v1", "Deployment")

TYPE_ERRORS: list[tuple[str, str, str, bytes, str]] = [
    (
        "a boolean ConfigMap value",
        "v1",
        "ConfigMap",
        b'{"data": {"enabled": true}}',
        "json: cannot unmarshal bool into Go struct field ConfigMap.data of type string",
    ),
    (
        "a string replica count",
        "apps/v1",
        "Deployment",
        b'{"spec": {"replicas": "2"}}',
        "json: cannot unmarshal string into Go struct field DeploymentSpec.spec.replicas of type int32",
    ),
    (
        "a fractional replica count",
        "apps/v1",
        "Deployment",
        b'{"spec": {"replicas": 2.50}}',
        "json: cannot unmarshal number 2.50 into Go struct field DeploymentSpec.spec.replicas of type int32",
    ),
    (
        "an int32 out of range",
        "apps/v1",
        "Deployment",
        b'{"spec": {"replicas": 3000000000}}',
        "json: cannot unmarshal number 3000000000 into Go struct field DeploymentSpec.spec.replicas of type int32",
    ),
    (
        "a string for a list: the path has no index, the struct is the list's holder",
        "apps/v1",
        "Deployment",
        b'{"spec": {"template": {"spec": {"containers": "web"}}}}',
        "json: cannot unmarshal string into Go struct field PodSpec.spec.template.spec.containers "
        "of type []v1.Container",
    ),
    (
        "a number for a string inside a list item",
        "apps/v1",
        "Deployment",
        b'{"spec": {"template": {"spec": {"containers": [{"name": "web", "image": 7}]}}}}',
        "json: cannot unmarshal number into Go struct field Container.spec.template.spec.containers.image "
        "of type string",
    ),
    (
        "a list for a struct",
        "v1",
        "Pod",
        b'{"metadata": []}',
        "json: cannot unmarshal array into Go struct field Pod.metadata of type v1.ObjectMeta",
    ),
    (
        "a top-level array",
        "v1",
        "Pod",
        b"[]",
        "json: cannot unmarshal array into Go value of type v1.Pod",
    ),
    (
        "a named string type is named as Go names it",
        "v1",
        "Pod",
        b'{"spec": {"containers": [{"name": "a", "ports": [{"containerPort": 80, "protocol": 6}]}]}}',
        "json: cannot unmarshal number into Go struct field ContainerPort.spec.containers.ports.protocol "
        "of type v1.Protocol",
    ),
    (
        "a list of a named type",
        "v1",
        "PersistentVolumeClaim",
        b'{"spec": {"accessModes": "ReadWriteOnce"}}',
        "json: cannot unmarshal string into Go struct field PersistentVolumeClaimSpec.spec.accessModes "
        "of type []v1.PersistentVolumeAccessMode",
    ),
    (
        "a named map type",
        "v1",
        "Pod",
        b'{"spec": {"containers": [{"name": "a", "resources": {"limits": "1"}}]}}',
        "json: cannot unmarshal string into Go struct field ResourceRequirements.spec.containers.resources.limits "
        "of type v1.ResourceList",
    ),
    (
        "IntOrString's own unmarshaler",
        "apps/v1",
        "Deployment",
        b'{"spec": {"strategy": {"rollingUpdate": {"maxSurge": 1.5}}}}',
        "json: cannot unmarshal number 1.5 into Go value of type int32",
    ),
    (
        "Quantity's own unmarshaler",
        "v1",
        "Pod",
        b'{"spec": {"containers": [{"resources": {"limits": {"cpu": true}}}]}}',
        "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'",
    ),
    (
        "bytes that are not base64 (golden error_secret_bad_base64)",
        "v1",
        "Secret",
        b'{"data": {"x": "not base64!!"}}',
        "illegal base64 data at input byte 3",
    ),
    (
        "a MicroTime without its fraction (golden lease_put_renew_seconds_precision)",
        "coordination.k8s.io/v1",
        "Lease",
        b'{"spec": {"renewTime": "2024-01-01T00:00:10Z"}}',
        'parsing time "2024-01-01T00:00:10Z" as "2006-01-02T15:04:05.000000Z07:00": cannot parse "Z" as ".000000"',
    ),
    (
        "a Time that is a number",
        "v1",
        "Pod",
        b'{"metadata": {"creationTimestamp": 5}}',
        "json: cannot unmarshal number into Go value of type string",
    ),
]


@pytest.mark.parametrize(
    ("label", "api_version", "name", "raw", "message"), TYPE_ERRORS, ids=[case[0] for case in TYPE_ERRORS]
)
def test_type_errors_carry_go_messages(
    label: str, api_version: str, name: str, raw: bytes, message: str
) -> None:
    findings = decoding.decode_json(S, decoding.parse(raw).value, kind(api_version, name))
    assert findings.error == message


def test_unknown_and_duplicate_fields_are_collected_with_their_paths_in_document_order() -> None:
    raw = (
        b'{"spec": {"replicas": 1, "replicas": 2, "bogus": {"deeper": 1},'
        b' "template": {"spec": {"containers": [{"name": "a"}, {"name": "b", "resource": {}}]}}},'
        b' "metadata": {"labels": {"app": "x", "app": "y"}}}'
    )
    findings = decoding.decode_json(S, decoding.parse(raw).value, DEPLOYMENT)
    assert findings.error is None
    assert findings.strict == [
        'duplicate field "spec.replicas"',
        'unknown field "spec.bogus"',
        'unknown field "spec.template.spec.containers[1].resource"',
        'duplicate field "metadata.labels.app"',
    ]


def test_the_decoded_value_is_what_the_go_struct_holds() -> None:
    """Unknown fields are gone, the last duplicate wins, a repeated struct is decoded into the first."""
    raw = (
        b'{"spec": {"paused": true, "x": 1}, "spec": {"replicas": 3}, "metadata": {"name": "a", "name": "b"}}'
    )
    findings = decoding.decode_json(S, decoding.parse(raw).value, DEPLOYMENT)
    assert findings.value == {"spec": {"paused": True, "replicas": 3}, "metadata": {"name": "b"}}


def test_a_type_error_wins_over_strict_errors() -> None:
    findings = decoding.decode_json(
        S, decoding.parse(b'{"bogus": 1, "spec": {"paused": "yes"}}').value, DEPLOYMENT
    )
    assert findings.error is not None and findings.strict == []


def test_parsing_notes_repeated_keys_and_fractions_and_keeps_the_rest_plain() -> None:
    repeated = decoding.parse(b'{"a": [{"b": 1, "b": 2}], "c": 1.50}')
    assert (repeated.repeats, repeated.fractions) == (True, True)
    assert repeated.duplicates() == ['duplicate field "a[0].b"']
    assert repeated.plain() == {"a": [{"b": 2}], "c": 1.5}
    assert type(repeated.plain()["a"][0]) is dict and type(repeated.plain()["c"]) is float
    assert repeated.value["c"].text == "1.50"

    usual = decoding.parse(b'{"a": [{"b": 1}], "c": 2}')
    assert (usual.repeats, usual.fractions) == (False, False)
    assert usual.duplicates() == []
    assert usual.plain() is usual.value  # nothing to convert: no copy


STORED = {
    "metadata": {"name": "web", "labels": {"app": "web"}},
    "spec": {
        "replicas": 1,
        "selector": {"matchLabels": {"app": "web"}},
        "template": {
            "spec": {"containers": [{"name": "web", "image": "nginx", "ports": [{"containerPort": 80}]}]}
        },
    },
}
PATCHED: list[tuple[str, dict[str, Any], decoding.Changed]] = [
    (
        "an unknown field among known ones",
        {"spec": {"replicas": 2, "bogus": 1}},
        {"spec": {"replicas": None, "bogus": None}},
    ),
    (
        "a wrong type in a map",
        {"metadata": {"labels": {"app": "web", "tier": 3}}},
        {"metadata": {"labels": {"tier": None}}},
    ),
    (
        "a list item's unknown field (the list changes whole)",
        {"spec": {"template": {"spec": {"containers": [{"name": "web", "image": "nginx", "imagee": "x"}]}}}},
        {"spec": {"template": {"spec": {"containers": None}}}},
    ),
    ("a wrong type at the top", {"metadata": "web"}, {"metadata": None}),
]


@pytest.mark.parametrize(("why", "change", "changed"), PATCHED, ids=[p[0] for p in PATCHED])
def test_decoding_only_what_a_patch_changed_finds_what_decoding_everything_finds(
    why: str, change: dict[str, Any], changed: decoding.Changed
) -> None:
    patched = {
        **STORED,
        **{k: v if not isinstance(v, dict) else {**STORED[k], **v} for k, v in change.items()},
    }
    whole = decoding.decode_json(S, patched, DEPLOYMENT, plain_input=True)
    part = decoding.decode_json(S, patched, DEPLOYMENT, plain_input=True, changed=changed)
    assert (part.error, part.strict, part.value) == (whole.error, whole.strict, whole.value)
    assert whole.error is not None or whole.strict


def test_raw_extensions_and_managed_fields_take_any_json() -> None:
    raw = b'{"metadata": {"managedFields": [{"fieldsV1": {"f:spec": {"anything": 1}}}]}}'
    assert decoding.decode_json(S, decoding.parse(raw).value, DEPLOYMENT).strict == []


CONVERSIONS: list[tuple[str, dict[str, Any], str | None, list[str]]] = [
    ("a string for an int32", {"spec": {"replicas": "2"}}, "unrecognized type: int32", []),
    ("a whole float for an int32 converts", {"spec": {"replicas": 2.0}}, None, []),
    ("a fraction for an int32", {"spec": {"replicas": 2.5}}, "cannot convert float64 to int32", []),
    (
        "an int for a string",
        {"spec": {"template": {"metadata": {"labels": {"a": 1}}}}},
        "cannot convert int64 to string",
        [],
    ),
    ("a string for a struct", {"spec": {"strategy": "x"}}, "cannot restore struct from: string", []),
    (
        "a string for a list",
        {"spec": {"template": {"spec": {"volumes": "x"}}}},
        "cannot restore slice from string",
        [],
    ),
    (
        "unknown fields, sorted",
        {"spec": {"zeta": 1, "alpha": {"x": 1}}},
        None,
        ['unknown field "spec.alpha"', 'unknown field "spec.zeta"'],
    ),
]


@pytest.mark.parametrize(
    ("label", "patched", "error", "unknown"), CONVERSIONS, ids=[case[0] for case in CONVERSIONS]
)
def test_strategic_merge_results_go_through_the_unstructured_converter(
    label: str, patched: dict[str, Any], error: str | None, unknown: list[str]
) -> None:
    findings = unstructured.from_unstructured(S, patched, DEPLOYMENT)
    assert (findings.error, findings.strict) == (error, unknown)


def test_apply_configurations_are_checked_against_the_apply_schema_with_apply_paths() -> None:
    """Every mistyped value and the first undeclared field of each object (structured-merge-diff stops
    walking an object at its first)."""
    config = {
        "spec": {
            "replicas": "2",
            "template": {
                "spec": {
                    "containers": [
                        {
                            "name": "web",
                            "ports": [{"containerPort": 80, "protocol": "TCP", "x": 1}],
                            "resource": {},
                        }
                    ],
                    "tolerations": [{"key": "k", "bogus": True}],
                }
            },
        }
    }
    assert applyschema.apply_errors(S, config, DEPLOYMENT) == [
        ".spec.replicas: expected numeric (int or float), got string",
        '.spec.template.spec.containers[name="web"].ports[containerPort=80,protocol="TCP"].x: '
        "field not declared in schema",
        '.spec.template.spec.containers[name="web"].resource: field not declared in schema',
        ".spec.template.spec.tolerations[0].bogus: field not declared in schema",
    ]


TIMES = [
    ("RFC 3339", gotime.RFC3339, "2024-01-02T03:04:05Z", None),
    ("a fraction the layout does not ask for", gotime.RFC3339, "2024-01-02T03:04:05.5+01:00", None),
    (
        "a date alone",
        gotime.RFC3339,
        "2024-01-02",
        'parsing time "2024-01-02" as "2006-01-02T15:04:05Z07:00": cannot parse "" as "T"',
    ),
    (
        "a month out of range",
        gotime.RFC3339,
        "2024-13-02T03:04:05Z",
        'parsing time "2024-13-02T03:04:05Z": month out of range',
    ),
    (
        "February 30th",
        gotime.RFC3339,
        "2024-02-30T03:04:05Z",
        'parsing time "2024-02-30T03:04:05Z": day out of range',
    ),
    (
        "trailing text",
        gotime.RFC3339,
        "2024-01-02T03:04:05Zjunk",
        'parsing time "2024-01-02T03:04:05Zjunk": extra text: "junk"',
    ),
    (
        "a missing zone",
        gotime.RFC3339,
        "2024-01-02T03:04:05",
        'parsing time "2024-01-02T03:04:05" as "2006-01-02T15:04:05Z07:00": cannot parse "" as "Z07:00"',
    ),
    ("MicroTime", gotime.RFC3339_MICRO, "2024-01-02T03:04:05.000001Z", None),
]


@pytest.mark.parametrize(("label", "layout", "value", "error"), TIMES, ids=[case[0] for case in TIMES])
def test_timestamps_parse_as_go_parses_them(label: str, layout: str, value: str, error: str | None) -> None:
    assert gotime.parse_error(layout, value) == error


def test_yaml_duplicate_keys_are_reported_as_go_yaml_does_and_the_last_wins() -> None:
    converted = yamljson.convert(
        "spec:\n  replicas: 1\n  replicas: 2\n  replicas: 3\nmetadata: {labels: {a: b, a: c}}\n"
    )
    assert converted.value == {"spec": {"replicas": 3}, "metadata": {"labels": {"a": "c"}}}
    assert converted.strict_error == (
        "error converting YAML to JSON: yaml: unmarshal errors:\n"
        '  line 3: key "replicas" already set in map\n'
        '  line 4: key "replicas" already set in map\n'
        '  line 4: key "replicas" already set in map\n'
        '  line 5: key "a" already set in map'
    )


@pytest.mark.parametrize(
    ("value", "text"), [(1.5, "1.5"), (2.0, "2"), (1e6, "1e+06"), (123456.5, "123456.5"), (1e-05, "1e-05")]
)
def test_yaml_floats_are_written_into_json_as_go_writes_them(value: float, text: str) -> None:
    assert decoding.number_text(value) == text


DIRECTIVES: list[tuple[str, str, int | None, str, list[str]]] = [
    (
        "Strict rejects",
        "Strict",
        400,
        'Deployment in version "v1" cannot be handled as a Deployment: strict decoding error: unknown field "spec.bogus"',
        [],
    ),
    ("Warn warns", "Warn", None, "", ['unknown field "spec.bogus"']),
    ("Ignore says nothing", "Ignore", None, "", []),
]


@pytest.mark.parametrize(
    ("label", "directive", "code", "message", "warnings"), DIRECTIVES, ids=[case[0] for case in DIRECTIVES]
)
def test_bodies_follow_the_field_validation_directive(
    label: str, directive: str, code: int | None, message: str, warnings: list[str]
) -> None:
    raw = b'{"apiVersion": "apps/v1", "kind": "Deployment", "spec": {"bogus": 1, "paused": true}}'
    check = fieldvalidation.Check("apps/v1", "Deployment", directive, [])
    if code is not None:
        with pytest.raises(StatusError) as caught:
            media.decode_body(raw, None, "Deployment", check)
        assert (caught.value.code, caught.value.body["message"]) == (code, message)
        return
    body = media.decode_body(raw, None, "Deployment", check)
    assert body == {"apiVersion": "apps/v1", "kind": "Deployment", "spec": {"paused": True}}
    assert check.warnings == warnings


def test_type_errors_fail_even_under_ignore() -> None:
    check = fieldvalidation.Check("v1", "ConfigMap", "Ignore", [])
    with pytest.raises(StatusError) as caught:
        media.decode_body(b'{"data": {"enabled": true}}', None, "ConfigMap", check)
    assert caught.value.body["message"] == (
        'ConfigMap in version "v1" cannot be handled as a ConfigMap: '
        "json: cannot unmarshal bool into Go struct field ConfigMap.data of type string"
    )


def test_yaml_duplicates_warn_line_by_line() -> None:
    check = fieldvalidation.Check("v1", "ConfigMap", "Warn", [])
    body = media.decode_body(b"data:\n  a: '1'\n  a: '2'\n", "application/yaml", "ConfigMap", check)
    assert body == {"data": {"a": "2"}}
    assert check.warnings == ['line 3: key "a" already set in map']


def test_an_unknown_directive_is_the_options_422() -> None:
    with pytest.raises(StatusError) as caught:
        fieldvalidation.directive("Loose", "CreateOptions")
    assert caught.value.code == 422
    assert caught.value.body["message"] == (
        'CreateOptions.meta.k8s.io "" is invalid: fieldValidation: Unsupported value: "Loose": '
        'supported values: "", "Ignore", "Strict", "Warn"'
    )
