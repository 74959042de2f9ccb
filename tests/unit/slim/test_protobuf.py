"""The protobuf codec: Kubernetes JSON <-> `application/vnd.kubernetes.protobuf`, checked three ways.

Every object a real kube-apiserver returned (`tests/golden/k8s/`) survives JSON -> protobuf -> JSON
unchanged; bodies kubectl 1.33 wrote with Go's protobuf encoder decode to exactly what Go's JSON
encoder writes for the same object (`tests/golden/protobuf/`); and single fields, read back with the
plain protobuf API rather than the codec, hold the values the wire format prescribes.
"""

from __future__ import annotations

import json
import struct
from pathlib import Path
from typing import Any

import pytest

from planner.slim import protobuf
from planner.slim.protobuf.messages import schema
from planner.slim.resources import RESOURCES, ResourceType
from tests.paths import GOLDEN, GOLDEN_PROTOBUF

MAGIC = b"k8s\x00"


def golden_objects() -> list[tuple[str, dict[str, Any]]]:
    """(id, object) for each response object of a kind that has a protobuf message."""
    found = []
    for path in sorted(GOLDEN.glob("*.json")):
        if path.name.startswith("_"):
            continue
        body = json.loads(path.read_text())["response_body"]
        events = body if isinstance(body, list) else None
        for index, obj in enumerate(events or [body]):
            if events is not None:
                obj = obj["object"]
            if isinstance(obj, dict) and protobuf.can_encode(obj.get("apiVersion", ""), obj.get("kind", "")):
                label = f"{path.stem} event {index}" if events is not None else path.stem
                found.append((f"{label}: {obj['kind']}", obj))
    return found


GOLDEN_OBJECTS = golden_objects()


def without_item_type_meta(obj: dict[str, Any]) -> dict[str, Any]:
    """A list's items carry no apiVersion/kind on the wire (their message has no TypeMeta field):
    the protobuf form of a PartialObjectMetadataList loses them in the real server too."""
    if obj["kind"] != "PartialObjectMetadataList":
        return obj
    items = [{k: v for k, v in item.items() if k not in ("apiVersion", "kind")} for item in obj["items"]]
    return {**obj, "items": items}


def test_the_golden_recordings_cover_objects_lists_events_and_errors() -> None:
    kinds = {obj["kind"] for _, obj in GOLDEN_OBJECTS}
    assert {"Deployment", "DeploymentList", "Pod", "Secret", "Lease", "Status", "Service"} <= kinds
    assert len(GOLDEN_OBJECTS) > 90


@pytest.mark.parametrize(("label", "obj"), GOLDEN_OBJECTS, ids=[label for label, _ in GOLDEN_OBJECTS])
def test_golden_object_survives_protobuf_unchanged(label: str, obj: dict[str, Any]) -> None:
    encoded = protobuf.encode(obj)
    assert encoded.startswith(MAGIC)
    assert protobuf.decode(encoded) == without_item_type_meta(obj)


KUBECTL_BODIES = sorted(GOLDEN_PROTOBUF.glob("*.pb"))


@pytest.mark.parametrize("body", KUBECTL_BODIES, ids=[p.stem.replace("_", " ") for p in KUBECTL_BODIES])
def test_kubectl_body_decodes_as_go_writes_it_in_json(body: Path) -> None:
    assert protobuf.decode(body.read_bytes()) == json.loads(body.with_suffix(".json").read_text())


# --- encoding, read back with the plain protobuf API ------------------------------------------------------


def raw_message(obj: dict[str, Any]) -> Any:
    """The kind's message inside an encoded object, parsed by protobuf itself."""
    encoded = protobuf.encode(obj)
    unknown: Any = schema().message_class("k8s.io.apimachinery.pkg.runtime.Unknown").FromString(encoded[4:])
    assert (unknown.typeMeta.apiVersion, unknown.typeMeta.kind) == (obj["apiVersion"], obj["kind"])
    name = schema().message_name(obj["apiVersion"], obj["kind"])
    assert name is not None
    return schema().message_class(name).FromString(unknown.raw)


def deployment(spec: dict[str, Any], **metadata: Any) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", **metadata},
        "spec": spec,
    }


def pod_spec(**fields: Any) -> dict[str, Any]:
    return {"template": {"spec": {"containers": [{"name": "c", "image": "nginx"}], **fields}}}


def test_a_pointer_zero_is_sent_as_a_value() -> None:
    spec = raw_message(deployment({"replicas": 0, "paused": False})).spec
    assert spec.HasField("replicas") and spec.replicas == 0


def test_a_null_creation_timestamp_is_an_empty_time() -> None:
    metadata = raw_message(deployment({}, creationTimestamp=None)).metadata
    assert metadata.HasField("creationTimestamp") and not metadata.creationTimestamp.HasField("seconds")


def test_a_time_is_whole_seconds_since_the_epoch() -> None:
    metadata = raw_message(deployment({}, creationTimestamp="2026-11-29T10:30:42Z")).metadata
    assert metadata.creationTimestamp.seconds == 1795948242
    assert not metadata.creationTimestamp.HasField("nanos")


def test_a_micro_time_keeps_its_microseconds() -> None:
    lease = {
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": {"name": "l"},
        "spec": {"renewTime": "1970-01-02T00:00:00.123456Z"},
    }
    renew = raw_message(lease).spec.renewTime
    assert (renew.seconds, renew.nanos) == (86400, 123456000)


def test_a_quantity_is_its_string() -> None:
    spec = pod_spec()
    spec["template"]["spec"]["containers"][0]["resources"] = {"limits": {"cpu": "500m", "memory": "1Gi"}}
    limits = raw_message(deployment(spec)).spec.template.spec.containers[0].resources.limits
    assert {name: q.string for name, q in limits.items()} == {"cpu": "500m", "memory": "1Gi"}


def test_an_int_or_string_keeps_which_one_it_is() -> None:
    service = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "s"},
        "spec": {"ports": [{"port": 80, "targetPort": 8080}, {"port": 443, "targetPort": "https"}]},
    }
    ports = raw_message(service).spec.ports
    assert (ports[0].targetPort.type, ports[0].targetPort.intVal) == (0, 8080)
    assert (ports[1].targetPort.type, ports[1].targetPort.strVal) == (1, "https")


def test_secret_data_is_sent_as_bytes() -> None:
    secret = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"}, "data": {"k": "aGk=", "e": ""}}
    assert dict(raw_message(secret).data) == {"k": b"hi", "e": b""}


def test_managed_fields_carry_their_field_set_as_json_bytes() -> None:
    entry = {
        "manager": "m",
        "operation": "Update",
        "fieldsType": "FieldsV1",
        "fieldsV1": {"f:data": {".": {}}},
    }
    metadata = raw_message(deployment({}, managedFields=[entry])).metadata
    assert json.loads(metadata.managedFields[0].fieldsV1.Raw) == {"f:data": {".": {}}}


def test_a_volume_source_inlined_in_json_is_its_own_message_on_the_wire() -> None:
    spec = raw_message(deployment(pod_spec(volumes=[{"name": "v", "emptyDir": {"medium": "Memory"}}]))).spec
    volume = spec.template.spec.volumes[0]
    assert volume.name == "v" and volume.volumeSource.emptyDir.medium == "Memory"


def test_fields_a_v1_28_server_does_not_know_are_dropped() -> None:
    metadata = raw_message(deployment({}, notAField=1)).metadata
    assert metadata.name == "web"


def test_a_list_is_the_list_message_with_bare_items() -> None:
    listing = {
        "apiVersion": "apps/v1",
        "kind": "DeploymentList",
        "metadata": {"resourceVersion": "7"},
        "items": [{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "a"}}],
    }
    message = raw_message(listing)
    assert message.metadata.resourceVersion == "7" and [i.metadata.name for i in message.items] == ["a"]


# --- decoding what Go writes ------------------------------------------------------------------------------


def enveloped(message: Any, api_version: str, kind: str) -> bytes:
    unknown: Any = schema().message_class("k8s.io.apimachinery.pkg.runtime.Unknown")()
    unknown.typeMeta.apiVersion, unknown.typeMeta.kind = api_version, kind
    unknown.raw = message.SerializeToString()
    return MAGIC + unknown.SerializeToString()


def test_zero_values_of_non_pointer_fields_are_unset_as_in_go_json() -> None:
    """Go's protobuf encoder writes every non-pointer field; its JSON encoder drops the zero ones
    that have omitempty (hostPort) and keeps those without (containerPort)."""
    message: Any = schema().message_class("k8s.io.api.core.v1.Pod")()
    container = message.spec.containers.add()
    container.name, container.image, container.workingDir, container.tty = "c", "nginx", "", False
    port = container.ports.add()
    port.hostPort, port.containerPort, port.protocol = 0, 0, ""
    decoded = protobuf.decode(enveloped(message, "v1", "Pod"))
    assert decoded["spec"]["containers"] == [{"name": "c", "image": "nginx", "ports": [{"containerPort": 0}]}]


def test_unset_pointers_and_lists_without_omitempty_are_null_but_list_items_are_empty() -> None:
    deployment_message: Any = schema().message_class("k8s.io.api.apps.v1.Deployment")()
    deployment_message.spec.template.spec.SetInParent()
    decoded = protobuf.decode(enveloped(deployment_message, "apps/v1", "Deployment"))
    assert decoded["spec"]["selector"] is None
    assert decoded["spec"]["template"]["spec"]["containers"] is None
    listing: Any = schema().message_class("k8s.io.api.apps.v1.DeploymentList")()
    listing.metadata.resourceVersion = "3"
    assert protobuf.decode(enveloped(listing, "apps/v1", "DeploymentList"))["items"] == []


# --- errors and watch frames ------------------------------------------------------------------------------

BAD_BODIES = [
    ("a JSON body", b'{"kind": "Pod"}', "does not appear to be a protobuf message"),
    ("garbage after the magic", MAGIC + b"\xff\xff\xff", "unable to decode Unknown"),
    (
        "an unregistered kind",
        enveloped(schema().message_class("k8s.io.api.core.v1.Pod")(), "v1", "Gadget"),
        'no kind "Gadget" is registered for version "v1"',
    ),
]


@pytest.mark.parametrize(("label", "body", "message"), BAD_BODIES, ids=[label for label, _, _ in BAD_BODIES])
def test_undecodable_bodies_say_why(label: str, body: bytes, message: str) -> None:
    with pytest.raises(protobuf.ProtobufError, match=message):
        protobuf.decode(body)


BAD_OBJECTS = [
    ("a string where an integer belongs", deployment({"replicas": "2"}), r"\.spec\.replicas"),
    (
        "Secret data that is not base64",
        {"apiVersion": "v1", "kind": "Secret", "data": {"k": "%%"}},
        r"\.data\.k",
    ),
    ("a list where an object belongs", deployment({"selector": []}), r"\.spec\.selector: expected an object"),
    (
        "a kind without a message",
        {"apiVersion": "example.com/v1", "kind": "Widget"},
        "has no protobuf message",
    ),
]


@pytest.mark.parametrize(("label", "obj", "message"), BAD_OBJECTS, ids=[label for label, _, _ in BAD_OBJECTS])
def test_unencodable_objects_name_the_field(label: str, obj: dict[str, Any], message: str) -> None:
    with pytest.raises(protobuf.ProtobufError, match=message):
        protobuf.encode(obj)


# CustomResourceDefinitions, APIServices and the flowcontrol betas are served as JSON only: Kubernetes'
# .proto files committed here have no apiextensions, kube-aggregator or beta messages (the apiserver
# answers JSON to a protobuf-first Accept for them too, as for custom resources).
JSON_ONLY_GROUPS = ("apiextensions.k8s.io", "apiregistration.k8s.io", "flowcontrol.apiserver.k8s.io")
WITH_MESSAGES = [r for r in RESOURCES if r.group not in JSON_ONLY_GROUPS]


@pytest.mark.parametrize(
    "resource", WITH_MESSAGES, ids=[f"{r.group_version} {r.kind}" for r in WITH_MESSAGES]
)
def test_every_served_kind_and_its_list_have_messages(resource: ResourceType) -> None:
    """Every kind has a message, and every kind that can be listed a list message (the access and
    token reviews are only ever created)."""
    assert protobuf.can_encode(resource.group_version, resource.kind)
    assert protobuf.can_encode(resource.group_version, resource.list_kind) == ("list" in resource.verbs)


def test_only_built_in_kinds_have_messages() -> None:
    assert protobuf.can_encode("apps/v1", "Deployment") and protobuf.can_encode("v1", "Status")
    assert not protobuf.can_encode("example.com/v1", "Widget") and not protobuf.can_encode(
        "meta.k8s.io/v1", "Table"
    )


def test_a_watch_frame_is_a_length_and_a_bare_watch_event_holding_the_enveloped_object() -> None:
    obj = deployment({"replicas": 2, "selector": {"matchLabels": {"app": "web"}}})
    frame = protobuf.encode_watch_event({"type": "MODIFIED", "object": obj})
    (length,) = struct.unpack(">I", frame[:4])
    assert length == len(frame) - 4
    event: Any = (
        schema().message_class("k8s.io.apimachinery.pkg.apis.meta.v1.WatchEvent").FromString(frame[4:])
    )
    assert event.type == "MODIFIED"
    assert protobuf.decode(event.object.raw) == obj
