"""Content negotiation: the Accept headers real clients send pick the format the apiserver would
answer in, and request bodies are read from JSON, YAML or protobuf."""

from __future__ import annotations

from typing import Any

import pytest

from planner.slim import media, protobuf
from planner.slim.status_errors import StatusError

PB = "application/vnd.kubernetes.protobuf"
TABLE = "as=Table;v=v1;g=meta.k8s.io"
NEGOTIATIONS = [
    ("kubectl 1.32+ and client-go's protobuf default", f"{PB},application/json", PB, None),
    ("JSON first", f"application/json,{PB}", "application/json", None),
    ("a lower q moves JSON behind protobuf", f"application/json;q=0.5,{PB}", PB, None),
    ("no Accept header", "", "application/json", None),
    ("anything", "*/*", "application/json", None),
    ("a protobuf watch", f"{PB};stream=watch", PB, None),
    ("an unknown parameter is ignored", f"{PB};type=watch", PB, None),
    (
        "kubectl get's Table request",
        f"application/json;{TABLE},application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json",
        "application/json",
        "Table",
    ),
    (
        "a protobuf Table falls through to JSON",
        f"{PB};{TABLE},application/json;{TABLE}",
        "application/json",
        "Table",
    ),
    ("a protobuf Table alone falls back to plain JSON", f"{PB};{TABLE}", "application/json", None),
    (
        "the metadata client's protobuf PartialObjectMetadataList",
        f"{PB};as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json",
        PB,
        "PartialObjectMetadataList",
    ),
    (
        "a conversion outside meta.k8s.io is not acceptable",
        "application/json;as=Table;g=x;v=v1,*/*",
        "application/json",
        None,
    ),
    ("YAML only falls back to JSON", "application/yaml", "application/json", None),
]


@pytest.mark.parametrize(
    ("label", "accept", "media_type", "conversion"), NEGOTIATIONS, ids=[case[0] for case in NEGOTIATIONS]
)
def test_negotiation(label: str, accept: str, media_type: str, conversion: str | None) -> None:
    assert media.negotiate(accept) == media.Output(media_type, conversion)


CONFIGMAP = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"a": "1"}}
BODIES: list[tuple[str, bytes, str | None]] = [
    (
        "JSON",
        b'{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"a": "1"}}',
        None,
    ),
    (
        "JSON with a charset",
        b'{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c"},"data":{"a":"1"}}',
        "application/json; charset=utf-8",
    ),
    ("YAML", b"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\ndata:\n  a: '1'\n", "application/yaml"),
    ("protobuf", protobuf.encode(CONFIGMAP), PB),
]


@pytest.mark.parametrize(("label", "raw", "content_type"), BODIES, ids=[case[0] for case in BODIES])
def test_request_bodies_in_every_accepted_format(label: str, raw: bytes, content_type: str | None) -> None:
    assert media.decode_body(raw, content_type, "ConfigMap") == CONFIGMAP


def test_yaml_timestamps_stay_strings() -> None:
    body = media.decode_body(
        b"metadata: {annotations: {at: 2024-01-02T03:04:05Z}}", "application/yaml", "Pod"
    )
    assert body == {"metadata": {"annotations": {"at": "2024-01-02T03:04:05Z"}}}


REFUSALS: list[tuple[str, bytes, str, int, str]] = [
    (
        "an unknown media type",
        b"x",
        "text/plain",
        415,
        "the body of the request was in an unknown format - accepted media types include: "
        "application/json, application/yaml, application/vnd.kubernetes.protobuf",
    ),
    ("broken YAML", b"a: [", "application/yaml", 400, "error converting YAML to JSON"),
    ("protobuf that is not", b"{}", PB, 400, "must be of type ConfigMap"),
    (
        "broken JSON",
        b"{oops",
        "application/json",
        400,
        "invalid character 'o' looking for beginning of object key",
    ),
]


@pytest.mark.parametrize(
    ("label", "raw", "content_type", "code", "message"), REFUSALS, ids=[case[0] for case in REFUSALS]
)
def test_unreadable_bodies_are_refused_as_the_apiserver_does(
    label: str, raw: bytes, content_type: str, code: int, message: str
) -> None:
    with pytest.raises(StatusError) as caught:
        media.decode_body(raw, content_type, "ConfigMap")
    body: Any = caught.value.body
    assert caught.value.code == code and message in body["message"]
