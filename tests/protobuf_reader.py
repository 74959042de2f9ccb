"""Kubernetes protobuf for tests, built straight from the committed descriptor set with the plain
protobuf API: it shares the schema with the server's codec but none of its conversion code, so a
response decoded here is checked against the wire format, not against the codec's own idea of it.

`read_object` unwraps the `k8s\\x00` + `runtime.Unknown` envelope; `read_frames` splits a watch stream
into its length-prefixed `WatchEvent`s; `build` makes a message to send as Go would (every field the
test sets is present, zero values included); `raw_http` sends and receives bytes.
"""

from __future__ import annotations

import gzip
import struct
import urllib.error
import urllib.request
from dataclasses import dataclass
from functools import cache
from typing import Any

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

from planner.slim.cluster import ClusterHandle
from planner.testing.slimadmin import urlopen
from tests.paths import REPO

DESCRIPTORS = REPO / "planner" / "slim" / "protobuf" / "k8s.desc.gz"
MAGIC = b"k8s\x00"
PROTOBUF = "application/vnd.kubernetes.protobuf"
PACKAGES = {
    "v1": "k8s.io.api.core.v1",
    "apps/v1": "k8s.io.api.apps.v1",
    "batch/v1": "k8s.io.api.batch.v1",
    "rbac.authorization.k8s.io/v1": "k8s.io.api.rbac.v1",
    "autoscaling/v1": "k8s.io.api.autoscaling.v1",
    "autoscaling/v2": "k8s.io.api.autoscaling.v2",
    "authorization.k8s.io/v1": "k8s.io.api.authorization.v1",
    "authentication.k8s.io/v1": "k8s.io.api.authentication.v1",
}
META = "k8s.io.apimachinery.pkg.apis.meta.v1"


@cache
def _pool() -> descriptor_pool.DescriptorPool:
    pool = descriptor_pool.DescriptorPool()
    files = descriptor_pb2.FileDescriptorSet.FromString(gzip.decompress(DESCRIPTORS.read_bytes()))
    for file in files.file:
        pool.Add(file)
    return pool


def message_class(full_name: str) -> Any:
    return message_factory.GetMessageClass(_pool().FindMessageTypeByName(full_name))


def type_name(api_version: str, kind: str) -> str:
    return f"{META}.Status" if kind == "Status" else f"{PACKAGES[api_version]}.{kind}"


def build(api_version: str, kind: str) -> Any:
    return message_class(type_name(api_version, kind))()


def envelope(message: Any, api_version: str, kind: str) -> bytes:
    unknown = message_class("k8s.io.apimachinery.pkg.runtime.Unknown")()
    unknown.typeMeta.apiVersion, unknown.typeMeta.kind = api_version, kind
    unknown.raw = message.SerializeToString()
    return MAGIC + unknown.SerializeToString()


@dataclass(frozen=True)
class Decoded:
    api_version: str
    kind: str
    message: Any


def read_object(body: bytes) -> Decoded:
    assert body.startswith(MAGIC), body[:40]
    unknown = message_class("k8s.io.apimachinery.pkg.runtime.Unknown").FromString(body[len(MAGIC) :])
    api_version, kind = unknown.typeMeta.apiVersion, unknown.typeMeta.kind
    return Decoded(api_version, kind, message_class(type_name(api_version, kind)).FromString(unknown.raw))


def read_frames(stream: bytes) -> list[tuple[str, Decoded]]:
    """(event type, object) per frame of a protobuf watch stream."""
    events = []
    while stream:
        (length,) = struct.unpack(">I", stream[:4])
        frame, stream = stream[4 : 4 + length], stream[4 + length :]
        event = message_class(f"{META}.WatchEvent").FromString(frame)
        events.append((event.type, read_object(event.object.raw)))
    return events


@dataclass(frozen=True)
class RawResponse:
    status: int
    content_type: str
    body: bytes


def raw_http(
    cluster: ClusterHandle, method: str, path: str, body: bytes | None = None, **headers: str
) -> RawResponse:
    """One request with byte bodies; headers by name (`Accept=…`, `Content_Type=…`)."""
    sent = {name.replace("_", "-"): value for name, value in headers.items()}
    try:
        with urlopen(cluster, path, method=method, data=body, headers=sent) as reply:
            return RawResponse(reply.status, reply.headers.get("Content-Type", ""), reply.read())
    except urllib.error.HTTPError as error:
        return RawResponse(error.code, error.headers.get("Content-Type", ""), error.read())
