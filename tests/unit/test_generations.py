"""planner.generations (records: encoding, fitting, retention, the default rollback target, the closure
diff), planner.plan.redact and applyset's generation annotation, over hand-built values."""

from __future__ import annotations

import base64
import dataclasses
import gzip
import json
from pathlib import Path
from typing import Any

from planner.changeset import Change
from planner.generations import (
    Generation,
    Listed,
    RootfsMove,
    Who,
    changes_summary,
    closure_of,
    diff_closures,
    expired,
    fitted,
    generation_of,
    listed_of,
    parent_with_runs,
    record_manifest,
    recorded_runs,
    rollback_target,
    rootfs_moves_back,
    secrets_without_data,
    written_changes,
)
from planner.objects import ref_of
from planner.plan.source import ParsedFile, read_plan_file
from planner.state.applyset import (
    CurrentGeneration,
    ParentRecord,
    RunRecord,
    current_generation,
    encode_run_record,
    parent_manifest,
    parent_ref,
    with_generation,
)


def deployment(name: str, image: str, replicas: int = 1, digest: str = "") -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": "shop", "annotations": {"planner.dev/hash": digest or image}},
        "spec": {
            "replicas": replicas,
            "template": {"spec": {"containers": [{"name": name, "image": image}]}},
        },
    }


def secret(value: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": "creds", "namespace": "shop", "annotations": {"planner.dev/hash": value}},
        "data": {"PASSWORD": value},
    }


def rootfs(generation: int) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {
            "name": f"dev-rootfs-g{generation}",
            "namespace": "shop",
            "annotations": {
                "planner.dev/hash": f"r{generation}",
                "planner.dev/runtime-id": "k8s|sandbox|dev",
            },
        },
        "spec": {"resources": {"requests": {"storage": "1Gi"}}},
    }


def generation(number: int, *objects: dict[str, Any], result: str = "converged") -> Generation:
    return Generation(
        plan="shop",
        namespace="shop",
        number=number,
        result="failed" if result == "failed" else "converged",
        started="2026-12-01T08:00:00Z",
        finished="2026-12-01T08:01:00Z",
        who=Who(user="alice", host="ci-7"),
        revision="abc123",
        closure=tuple(objects),
        hashes={
            f"{o['kind'].lower()}/shop/{o['metadata']['name']}": o["metadata"]["annotations"][
                "planner.dev/hash"
            ]
            for o in objects
        },
        changes=({"object": "deployment/shop/web", "action": "create", "fields": []},),
    )


# --- records ----------------------------------------------------------------------------------------


def test_a_record_is_a_typed_labelled_secret_whose_data_is_base64_of_gzip_of_json() -> None:
    made = generation(3, deployment("web", "shop:1"))
    fitting, encoded = fitted(made)
    secret_ = record_manifest(fitting, encoded)
    assert secret_["metadata"]["name"] == "planner.shop.g3"
    assert secret_["type"] == "planner.dev/generation.v1"
    assert secret_["metadata"]["labels"] == {
        "planner.dev/plan": "shop",
        "planner.dev/generation": "3",
        "planner.dev/result": "converged",
    }
    assert secret_["metadata"]["annotations"] == {
        "planner.dev/started": "2026-12-01T08:00:00Z",
        "planner.dev/who": "alice@ci-7",
        "planner.dev/changes": "1 created",
        "planner.dev/revision": "abc123",
    }
    document = json.loads(gzip.decompress(base64.b64decode(secret_["data"]["generation"])))
    assert (document["generation"], document["who"], document["complete"]) == (
        3,
        {"user": "alice", "host": "ci-7"},
        True,
    )
    assert generation_of(secret_) == made


def test_a_record_that_does_not_decode_or_is_no_record_reads_as_none() -> None:
    assert generation_of({"type": "Opaque", "data": {"generation": "eA=="}}) is None
    assert generation_of({"type": "planner.dev/generation.v1", "data": {"generation": "not base64!"}}) is None


def test_a_closure_too_big_for_a_secret_keeps_only_its_hashes_and_cannot_be_rolled_back_to() -> None:
    made = generation(1, *(deployment(f"w{i}", f"shop:{i}" * 40) for i in range(50)))
    _, whole = fitted(made)
    fitting, encoded = fitted(made, limit=len(whole) * 3 // 4 - 1)
    assert fitting.complete is False and fitting.closure == () and fitting.hashes == made.hashes
    assert fitting.sources == made.sources  # the plan files still fit
    assert generation_of(record_manifest(fitting, encoded)) == fitting


def test_without_secret_history_a_secret_is_kept_without_its_data() -> None:
    kept = closure_of([secret("c2VjcmV0"), deployment("web", "shop:1")], secret_data=False)
    assert kept[0] == {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": "creds", "namespace": "shop", "annotations": {"planner.dev/hash": "c2VjcmV0"}},
    }
    assert kept[1] == deployment("web", "shop:1")


def test_the_changes_summary_counts_each_action() -> None:
    assert (
        changes_summary(["create", "update", "update", "delete", "noop"]) == "1 created, 2 updated, 1 deleted"
    )
    assert changes_summary([]) == "nothing"


def test_a_listing_reads_a_records_labels_and_annotations() -> None:
    fitting, encoded = fitted(generation(2, deployment("web", "shop:1")))
    manifest = record_manifest(fitting, encoded)
    manifest["metadata"]["annotations"]["planner.dev/rolled-back-from"] = "1"
    assert listed_of(manifest) == Listed(
        number=2,
        result="converged",
        started="2026-12-01T08:00:00Z",
        revision="abc123",
        who="alice@ci-7",
        changes="1 created",
        rolled_back_from=1,
    )


# --- retention and the rollback target ----------------------------------------------------------------


def listed(number: int, result: str = "converged") -> Listed:
    return Listed(
        number=number, result=result, started="", revision="", who="", changes="", rolled_back_from=None
    )


def test_retention_removes_all_but_the_newest_failed_ones_counting() -> None:
    assert expired([1, 2, 3, 4, 5], 2) == [1, 2, 3]
    assert expired([4, 5], 10) == []
    assert expired([3, 1, 2], 1) == [1, 2]


def test_retention_keeps_the_newest_converged_generation_however_many_failed_after_it() -> None:
    assert expired([1, 2, 3, 4, 5], 2, converged=[1, 2]) == [1, 3]  # 2 is what rollback goes back to
    assert expired([1, 2, 3, 4, 5], 2, converged=[1, 5]) == [1, 2, 3]  # the newest is kept anyway


def test_the_default_rollback_target_is_the_newest_converged_generation_before_the_current() -> None:
    history = [listed(1), listed(2), listed(3, "failed"), listed(4)]
    assert rollback_target(history, 4) == 2
    assert rollback_target(history, 2) == 1
    assert rollback_target(history, None) == 2  # the parent names none: from the newest recorded
    assert rollback_target([listed(1)], 1) is None
    assert rollback_target([listed(1, "failed"), listed(2)], 2) is None


# --- the closure diff -------------------------------------------------------------------------------


def test_the_closure_diff_names_objects_added_removed_and_the_fields_that_changed() -> None:
    old = generation(
        1, deployment("web", "shop:2.4.1", replicas=2), deployment("worker", "w:1"), secret("YQ==")
    )
    new = generation(3, deployment("web", "shop:2.4.2", replicas=3), deployment("api", "a:1"), secret("Yg=="))
    deltas = diff_closures(old, new)
    assert [(d.object, d.change) for d in deltas] == [
        ("deployment/shop/api", "added"),
        ("deployment/shop/web", "changed"),
        ("deployment/shop/worker", "removed"),
        ("secret/shop/creds", "changed"),
    ]
    web = deltas[1]
    assert [(f.path, f.before, f.after) for f in web.fields] == [
        (".spec.replicas", 2, 3),
        (".spec.template.spec.containers[name=web].image", "shop:2.4.1", "shop:2.4.2"),
    ]
    assert deltas[3].fields == ()  # a Secret is only ever "changed"


def test_a_sandboxes_rootfs_moving_generation_is_one_change_going_back_says_disks_are_not_restored() -> None:
    forward = diff_closures(generation(1, rootfs(1)), generation(2, rootfs(2)))
    assert [(d.object, d.change, d.note) for d in forward] == [
        ("persistentvolumeclaim/shop/dev-rootfs-g2", "changed", "")
    ]
    assert [(f.path, f.before, f.after) for f in forward[0].fields] == [("sandbox dev rootfs", "g1", "g2")]
    back = diff_closures(generation(2, rootfs(2)), generation(1, rootfs(1)))
    assert back[0].note == "disk contents are not restored"


# --- rolling back -----------------------------------------------------------------------------------


def change(action: str, manifest: dict[str, Any]) -> Change:
    ref = ref_of(manifest)
    desired = None if action == "delete" else manifest
    live = manifest if action == "delete" else None
    return Change(ref=ref, action=action, desired=desired, live=live)  # type: ignore[arg-type]


def test_the_runs_a_generation_recorded_that_the_parent_lost_are_counted_as_ran_again() -> None:
    ran = RunRecord(run_key="k1", namespace="shop", name="migrate", uid="u-1")
    pending = RunRecord(run_key="k2", namespace="shop", name="seed")
    kept = RunRecord(run_key="k3", namespace="shop", name="index", uid="u-3")
    made = dataclasses.replace(
        generation(1), runs={r.run_key: encode_run_record(r) for r in (ran, pending, kept)}
    )
    parent = {"kind": "Secret", "data": {"k3": encode_run_record(kept), "planner.applied-closure": "x"}}
    assert recorded_runs(made, parent) == (ran,)
    assert parent_with_runs(parent, [ran])["data"] == {
        "k3": encode_run_record(kept),
        "planner.applied-closure": "x",
        "k1": encode_run_record(ran),
    }


def test_a_rootfs_going_back_a_generation_is_found_going_forward_is_not() -> None:
    back = [change("create", rootfs(1)), change("delete", rootfs(2)), change("delete", rootfs(3))]
    assert rootfs_moves_back(back) == [RootfsMove(sandbox="dev", before=3, after=1)]
    assert rootfs_moves_back([change("create", rootfs(2)), change("delete", rootfs(1))]) == []


def test_a_secret_to_write_from_a_record_without_secret_data_is_named() -> None:
    without = dataclasses.replace(generation(1), secret_data=False)
    bare = closure_of([secret("YQ==")], secret_data=False)[0]
    assert secrets_without_data(without, [change("create", bare)]) == ["secret/shop/creds"]
    assert (
        secrets_without_data(without, [Change(ref=ref_of(bare), action="noop", desired=bare, live=None)])
        == []
    )
    assert secrets_without_data(generation(1), [change("create", secret("YQ=="))]) == []


# --- the parent's annotation ------------------------------------------------------------------------


def test_the_parent_names_the_current_generation_and_numbers_only_grow() -> None:
    ref = parent_ref("shop", "shop")
    parent = parent_manifest(ref, None, ParentRecord(group_kinds=(), namespaces=(), run_keys=()))
    marked = with_generation(ref, parent, CurrentGeneration(7, "converged"))
    assert current_generation(marked) == CurrentGeneration(7, "converged")
    assert current_generation(
        with_generation(ref, marked, CurrentGeneration(6, "failed"))
    ) == CurrentGeneration(7, "converged")
    assert current_generation(parent) is None


# --- the plan files as recorded -----------------------------------------------------------------------


def shown(text: str, folder: Path) -> str:
    """The text a generation record keeps of a plan file holding `text`, as the loader reads it."""
    file = folder / "plan.yaml"
    file.write_text(text, encoding="utf-8")
    parsed = read_plan_file(file)
    assert isinstance(parsed, ParsedFile), parsed
    return parsed.shown


def test_literal_secret_values_are_masked_in_place_and_the_rest_of_the_file_is_kept(tmp_path: Path) -> None:
    text = (
        "kind: Plan  # shop\n"
        "secrets:\n"
        "  - name: creds\n"
        "    data:\n"
        "      PASSWORD: hunter2\n"
        "      TOKEN: {valueFrom: {env: TOKEN}}\n"
        "sandboxes:\n"
        "  - name: dev\n"
        "    secretEnv: {API_KEY: 'k-123'}\n"
        "workloads:\n"
        "  - {name: web, image: 'shop:1', env: {MODE: hunter2x}}\n"
    )
    assert shown(text, tmp_path) == (
        "kind: Plan  # shop\n"
        "secrets:\n"
        "  - name: creds\n"
        "    data:\n"
        '      PASSWORD: "***"\n'
        "      TOKEN: {valueFrom: {env: TOKEN}}\n"
        "sandboxes:\n"
        "  - name: dev\n"
        '    secretEnv: {API_KEY: "***"}\n'
        "workloads:\n"
        "  - {name: web, image: 'shop:1', env: {MODE: hunter2x}}\n"
    )
    assert shown("- not a plan\n", tmp_path) == "- not a plan\n"  # nothing in it is a secret


def test_masking_finds_values_after_multibyte_text_and_in_yaml_only_the_1_2_parser_reads(
    tmp_path: Path,
) -> None:
    text = (
        "kind: Plan  # café ☕\n"
        "workloads:\n"
        "  - {name: db, args: [postgres://db:5432]}\n"  # libyaml refuses this flow scalar; YAML 1.2 reads it
        "secrets:\n"
        "  - name: creds\n"
        "    data: {PASSWORD: 'pässwörd', URL: postgres://u:p@db}\n"
    )
    assert shown(text, tmp_path) == (
        "kind: Plan  # café ☕\n"
        "workloads:\n"
        "  - {name: db, args: [postgres://db:5432]}\n"
        "secrets:\n"
        "  - name: creds\n"
        '    data: {PASSWORD: "***", URL: "***"}\n'
    )
    multibyte = "kind: Plan  # ünïcödé\nsecrets:\n  - name: c\n    data:\n      K: välue\n"
    assert (
        shown(multibyte, tmp_path)
        == 'kind: Plan  # ünïcödé\nsecrets:\n  - name: c\n    data:\n      K: "***"\n'
    )


def config_map(name: str, hash_: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": "ns", "annotations": {"planner.dev/hash": hash_}},
    }


def test_a_record_counts_what_was_written_and_what_an_unrecorded_run_wrote() -> None:
    planned = [
        change("create", config_map("written", "a" * 16)),
        change("create", config_map("never-started", "b" * 16)),
        change("noop", config_map("by-a-killed-run", "c" * 16)),
        change("noop", config_map("changed-by-a-killed-run", "d" * 16)),
        change("noop", config_map("as-recorded", "e" * 16)),
    ]
    written = {ref_of(config_map("written", ""))}
    previous = {"configmap/ns/changed-by-a-killed-run": "0" * 16, "configmap/ns/as-recorded": "e" * 16}

    made = written_changes(planned, written, previous)

    assert [(c.ref.name, c.action, c.reason) for c in made] == [
        ("written", "create", ""),
        ("by-a-killed-run", "create", "written by an earlier run that recorded no generation"),
        ("changed-by-a-killed-run", "update", "written by an earlier run that recorded no generation"),
    ]
    assert [c.action for c in written_changes(planned[2:4], set(), None)] == ["create", "create"]


def test_a_job_whose_run_already_ran_is_no_change_of_the_record_whatever_its_hash() -> None:
    job = {**config_map("migrate", "f" * 16), "apiVersion": "batch/v1", "kind": "Job"}
    kept = dataclasses.replace(change("noop", job), transition="already-ran", reason="run-key already ran")
    assert written_changes([kept], set(), {"job/ns/migrate": "0" * 16}) == ()


def test_a_chart_repositorys_literal_credentials_are_masked_and_its_secret_ref_is_kept(
    tmp_path: Path,
) -> None:
    text = (
        "kind: Plan\n"
        "charts:\n"
        "  - name: web\n"
        "    credentials: {username: charts, password: hunter2}\n"
        "  - name: api\n"
        "    credentials: {secretRef: {name: chart-repo}}\n"
    )
    assert shown(text, tmp_path) == (
        "kind: Plan\n"
        "charts:\n"
        "  - name: web\n"
        '    credentials: {username: "***", password: "***"}\n'
        "  - name: api\n"
        "    credentials: {secretRef: {name: chart-repo}}\n"
    )
