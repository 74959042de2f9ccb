"""The run-key record in the ApplySet parent Secret: which Jobs already ran, so a Job runs once per
run-key even after TTL cleanup deleted it (DESIGN §3; docs/architecture.md "Parent Secret").

The diff reads it to plan an absent Job whose run-key is recorded as `already-ran`; apply's writes add
a created Job's record and trim the data to the current closure. Pure: no I/O.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from planner.kinds import JOB
from planner.objects import ANNOTATION_RUN_KEY, Manifest, annotations_of, canonical_json

__all__ = ["RunRecord", "encode_run_record", "run_records", "trimmed_run_records"]


@dataclass(frozen=True, kw_only=True)
class RunRecord:
    """A Job that ran: parent Secret data key = its run-key, value = base64 of canonical JSON
    `{"name","namespace","runtimeId","uid"}` (`runtimeId` is absent from records older than it; the
    monitor then assumes runtime `k8s`)."""

    run_key: str
    namespace: str
    name: str
    uid: str
    runtime_id: str = ""


def encode_run_record(record: RunRecord) -> str:
    document = {"name": record.name, "namespace": record.namespace, "uid": record.uid}
    if record.runtime_id:
        document["runtimeId"] = record.runtime_id
    return base64.b64encode(canonical_json(document).encode()).decode("ascii")


def run_records(parent: Manifest | None) -> dict[str, RunRecord]:
    """The run-keys recorded in the parent Secret; entries that do not decode are ignored (another
    tool's data, or a hand edit), so a bad entry at worst re-runs a Job."""
    records: dict[str, RunRecord] = {}
    for key, value in ((parent or {}).get("data") or {}).items():
        try:
            document = json.loads(base64.b64decode(str(value), validate=True))
            records[key] = RunRecord(
                run_key=key,
                namespace=str(document["namespace"]),
                name=str(document["name"]),
                uid=str(document["uid"]),
                runtime_id=str(document.get("runtimeId") or ""),
            )
        except (binascii.Error, ValueError, KeyError, TypeError):
            continue
    return records


def trimmed_run_records(records: Mapping[str, RunRecord], closure: Sequence[Manifest]) -> dict[str, str]:
    """The parent Secret's `data`: the records of the run-keys the closure's Jobs still carry."""
    wanted = {annotations_of(m).get(ANNOTATION_RUN_KEY) for m in closure if m.get("kind") == JOB.kind}
    return {key: encode_run_record(records[key]) for key in sorted(records) if key in wanted}
