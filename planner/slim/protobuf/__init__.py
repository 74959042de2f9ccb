"""Kubernetes protobuf (`application/vnd.kubernetes.protobuf`) for the embedded server.

kubectl 1.32+ and controller-runtime clients send built-in kinds as protobuf and never fall back to
JSON, so the server decodes protobuf request bodies into the JSON objects it works with, and encodes
responses, lists and watch frames as protobuf when a client asks for it first. The schema is
Kubernetes v1.28.7's own (`schema`), the field conversion follows Go's JSON rules (`convert`) and the
envelope and watch framing are the apiserver's (`codec`). Pure: no I/O beyond loading the committed
schema once.
"""

from planner.slim.protobuf.codec import (
    MEDIA_TYPE,
    WATCH_MEDIA_TYPE,
    ProtobufError,
    can_encode,
    decode,
    encode,
    encode_watch_event,
)

__all__ = [
    "MEDIA_TYPE",
    "WATCH_MEDIA_TYPE",
    "ProtobufError",
    "can_encode",
    "decode",
    "encode",
    "encode_watch_event",
]
