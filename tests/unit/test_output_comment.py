"""The pull-request comment (`plan -o markdown`), fed ChangeSets the real diff makes from rendered plans,
and read back as GitHub would: through a CommonMark parser with tables (markdown-it-py)."""

from __future__ import annotations

import base64
import dataclasses
import re
from typing import Any

from markdown_it import MarkdownIt
from markdown_it.token import Token

from planner.diff import Change, ChangeSet, FieldChange, diff
from planner.objects import ObjectRef
from planner.output.comment import LIMIT, to_markdown
from planner.plan.model import Claim, Ingress, Rootfs
from planner.state.applyset import CurrentGeneration
from planner.workloads.cronjob import CronJobSpec, CronSchedule
from planner.workloads.job import JobSpec
from tests.unit.diff_support import (
    NAMESPACE,
    PLAN,
    config_map,
    live_state,
    rendered,
    sandbox,
    secret,
    served,
    workload,
)

HEX64 = re.compile(r"\b[0-9a-f]{64}\b")


def parse(text: str) -> list[Token]:
    return MarkdownIt("commonmark").enable("table").parse(text)


def headings(text: str) -> list[str]:
    tokens = parse(text)
    return [tokens[i + 1].content for i, t in enumerate(tokens) if t.type == "heading_open"]


def table_rows(text: str) -> dict[str, list[str]]:
    """Each body row's cells (symbol, action, cause, object, notes), keyed by the object without its
    backticks."""
    tokens = parse(text)
    rows: dict[str, list[str]] = {}
    cells: list[str] = []
    inside = False
    for token in tokens:
        if token.type == "tbody_open":
            inside = True
        elif token.type == "tbody_close":
            inside = False
        elif inside and token.type == "tr_open":
            cells = []
        elif inside and token.type == "inline":
            cells.append(token.content)
        elif inside and token.type == "tr_close":
            rows[cells[3].strip("`")] = cells
    return rows


def planned(desired: list[dict[str, Any]], live: list[dict[str, Any]], **options: Any) -> ChangeSet:
    state = live_state(*(served(m) for m in live), namespaces=[NAMESPACE])
    return diff(desired, state, plan=options.pop("plan", PLAN), namespace=NAMESPACE, **options)


def job_image_change(plan: str = PLAN) -> ChangeSet:
    before = rendered(workloads=(workload("migrate", kind="job", image="migrate:1"),))
    after = rendered(workloads=(workload("migrate", kind="job", image="migrate:2"),))
    return planned(after, before, plan=plan)


def workspace_class_change(*, allow: bool) -> ChangeSet:
    before = rendered(sandboxes=(sandbox(),))
    after = rendered(sandboxes=(sandbox(workspace=Claim(size="20Gi", storage_class="fast")),))
    return planned(after, before, allow_data_loss=allow)


# --- headings ---


def test_every_plans_heading_renders_as_a_heading_even_after_the_previous_plans_folded_details() -> None:
    text = to_markdown([job_image_change("shop"), job_image_change("tools")])

    assert headings(text) == [
        "planner plan `shop` (namespace `shop`)",
        "planner plan `tools` (namespace `shop`)",
    ]
    assert all("### " not in t.content for t in parse(text) if t.type in ("html_block", "inline", "fence"))


# --- data loss ---


def test_a_claim_replaced_without_allow_data_loss_is_cautioned_first_and_marked_in_the_table() -> None:
    text = to_markdown([workspace_class_change(allow=False)])
    tokens = parse(text)

    assert tokens[0].type == "blockquote_open"  # before anything else, the heading included
    caution = text.split("\n\n")[0]
    assert caution.startswith("> [!CAUTION]\n> **This plan destroys data** (1 object): ")
    assert "`--allow-data-loss` was not given, so apply refuses this plan" in caution
    assert (
        "> - `persistentvolumeclaim/shop/alice-workspace`: replaced (forced by spec.storageClassName)"
        in caution
    )
    row = table_rows(text)["persistentvolumeclaim/shop/alice-workspace"]
    assert row[4] == "forced by spec.storageClassName; **destroys data**"


def test_with_allow_data_loss_the_caution_says_it_was_given() -> None:
    caution = to_markdown([workspace_class_change(allow=True)]).split("\n\n")[0]

    assert "`--allow-data-loss` was given: apply deletes it for good" in caution


def test_a_rebase_dropping_a_rootfs_is_marked_as_destroying_data_that_needs_no_flag() -> None:
    before = rendered(sandboxes=(sandbox(),))
    after = rendered(sandboxes=(sandbox(rootfs=Rootfs(size="10Gi", generation=2)),))
    text = to_markdown([planned(after, before)])

    caution = text.split("\n\n")[0]
    assert "`--allow-data-loss` was not given, and none is needed" in caution
    assert (
        "`persistentvolumeclaim/shop/alice-rootfs-g1`: deleted (rebase g1→g2), declared by the sandbox's"
        in caution
    )
    rows = table_rows(text)
    assert rows["persistentvolumeclaim/shop/alice-rootfs-g1"][4] == (
        "rebase g1→g2; **destroys data, declared by the rebase**"
    )
    assert "destroys data" not in rows["persistentvolumeclaim/shop/alice-rootfs-g2"][4]


def test_a_plan_that_destroys_nothing_has_no_caution() -> None:
    text = to_markdown([job_image_change()])

    assert parse(text)[0].type == "heading_open"
    assert "CAUTION" not in text and "destroys data" not in text


# --- creates, run-keys ---


def test_creates_show_their_key_fields_and_a_secret_only_its_keys() -> None:
    web = workload("web", replicas=2, port=8080, expose=True, cpu="0.5", memory="256Mi")
    desired = rendered(
        workloads=(web,),
        sandboxes=(sandbox(),),
        config_maps=(config_map("settings", LOG_LEVEL="info"),),
        secrets=(secret("creds", password="hunter2-very-secret"),),
    )
    text = to_markdown([planned(desired, [])])
    notes = {name: cells[4] for name, cells in table_rows(text).items()}

    assert notes["deployment/shop/web"] == (
        "replicas 2; web: image `ghcr.io/acme/web:1.4.2`, ports 8080, limits cpu=0.5 memory=256Mi"
    )
    assert notes["service/shop/web-svc"] == "ports 8080"
    assert notes["configmap/shop/settings"] == "keys LOG_LEVEL"
    assert notes["secret/shop/creds"] == "keys password"
    assert notes["persistentvolumeclaim/shop/alice-rootfs-g1"] == "size 10Gi; volumeMode Block"
    assert notes["pod/shop/alice"].startswith("sandbox: image `ghcr.io/acme/devbox:2026.11`")
    assert "hunter2" not in text
    assert base64.b64encode(b"hunter2-very-secret").decode() not in text


def test_a_cronjob_shows_its_schedule_and_container_and_an_ingress_its_route_and_tls() -> None:
    backup = workload(
        "backup",
        kind="cronjob",
        spec=CronJobSpec(schedule=CronSchedule(schedule="0 3 * * *", time_zone="UTC"), job=JobSpec()),
    )
    web = workload("web", port=8080, expose=True, ingress=Ingress(host="shop.example.com", tls_secret="tls"))
    text = to_markdown([planned(rendered(workloads=(backup, web)), [])])
    notes = {name: cells[4] for name, cells in table_rows(text).items()}

    assert notes["cronjob/shop/backup"] == (
        "schedule 0 3 * * *; timeZone UTC; backup: image `ghcr.io/acme/web:1.4.2`"
    )
    assert notes["ingress/shop/web"] == "routes `shop.example.com/` → web-svc:8080; tls tls"


def test_a_jobs_run_key_change_reads_as_a_new_run_not_as_two_digests() -> None:
    text = to_markdown([job_image_change()])

    fence = next(t for t in parse(text) if t.type == "fence")
    assert '.metadata.annotations["planner.dev/run-key"]: new run: template changed' in fence.content
    assert '.spec.template.spec.containers[name=migrate].image: "migrate:1" → "migrate:2"' in fence.content
    assert HEX64.search(text) is None


# --- the limit ---


def many_deployments(count: int) -> ChangeSet:
    desired = rendered(workloads=tuple(workload(f"web-{i:04d}", replicas=2, cpu="0.5") for i in range(count)))
    return planned(desired, [])


def test_a_comment_over_the_limit_keeps_the_first_rows_and_says_what_it_left_out_and_where_the_rest_is() -> (
    None
):
    text = to_markdown([many_deployments(1000)], saved="shop.plan.json")

    assert len(text) <= LIMIT
    rows = table_rows(text)
    assert 100 < len(rows) < 1000
    assert list(rows)[:2] == ["deployment/shop/web-0000", "deployment/shop/web-0001"]
    left = 1000 - len(rows)
    note = text.split("\n\n")[0]
    assert note == (
        "> [!NOTE]\n"
        f"> This comment was cut to fit: left out {left:,} changes ({left:,} create) from the tables. "
        "`planner plan -o text` prints the whole plan; the saved plan `shop.plan.json` holds every change "
        "(`planner apply shop.plan.json` applies exactly it)."
    )
    assert text.rstrip().endswith(
        f"*… and {left:,} more changes ({left:,} create), left out: see the note at the top.*"
    )
    assert "**Plan: 1000 to create, 0 to update, 0 to replace, 0 to delete (0 drift, 1000 pending).**" in text
    assert rows["deployment/shop/web-0000"][2] == "pending"


def big_config_changes(count: int, size: int) -> ChangeSet:
    before = rendered(config_maps=tuple(config_map(f"cm-{i:03d}", blob="a" * size) for i in range(count)))
    after = rendered(config_maps=tuple(config_map(f"cm-{i:03d}", blob="b" * size) for i in range(count)))
    return planned(after, before)


def test_field_changes_are_cut_before_any_table_row() -> None:
    text = to_markdown([big_config_changes(40, 2_000)])

    assert len(text) <= LIMIT
    assert len(table_rows(text)) == 40
    fence = next(t for t in parse(text) if t.type == "fence")
    shown = [line.split()[1] for line in fence.content.splitlines() if line.startswith("~ ")]
    assert 0 < len(shown) < 40
    assert shown == [f"configmap/shop/cm-{i:03d}" for i in range(len(shown))]
    assert f"left out the field changes of {40 - len(shown)} objects." in text
    assert "saved plan" not in text  # none was written


def test_a_chart_that_fits_is_kept_before_the_field_changes_and_rows() -> None:
    chart = 'flowchart LR\n  g0["update ConfigMap × 40"]\n'
    text = to_markdown([big_config_changes(40, 2_000)], graphs=[chart])

    assert len(text) <= LIMIT
    assert "Graph (what apply runs" in text and len(table_rows(text)) == 40
    assert "left out the graph" not in text and "left out the field changes of" in text


def test_a_chart_too_big_to_fit_is_left_out_without_taking_the_tables_room() -> None:
    graph = "".join(f"create configmap/shop/cm-{i:05d} <- parent secret/shop/shop\n" for i in range(2_000))
    text = to_markdown([big_config_changes(3, 100)], graphs=[graph])

    assert len(text) <= LIMIT
    assert "Field changes" in text and "Graph (what apply runs" not in text
    assert "left out the graph of 1 plan." in text


def test_a_comment_under_the_limit_is_whole_and_says_nothing_about_cuts() -> None:
    text = to_markdown([big_config_changes(3, 100)], graphs=['flowchart LR\n  t0["ensure namespace/shop"]\n'])

    assert "NOTE" not in text and "left out" not in text
    assert "<details><summary>Graph (what apply runs, in order)</summary>" in text
    assert '```mermaid\nflowchart LR\n  t0["ensure namespace/shop"]\n```' in text


# --- the generation the cluster is at ---


def at_generation(changeset: ChangeSet, number: int, result: str) -> ChangeSet:
    return dataclasses.replace(changeset, generation=CurrentGeneration(number, result))


def test_each_plan_says_under_its_heading_which_generation_the_cluster_is_at() -> None:
    text = to_markdown([at_generation(job_image_change("shop"), 7, "failed"), job_image_change("tools")])

    parts = text.split("\n\n")
    shop = parts.index("### planner plan `shop` (namespace `shop`)")
    assert parts[shop + 1] == "*cluster is at generation 7 of plan shop (failed)*"
    assert parts[shop + 2].startswith("**Plan: ")
    tools = parts.index("### planner plan `tools` (namespace `shop`)")
    assert parts[tools + 1].startswith("**Plan: ")  # never recorded: no generation line
    assert text.count("cluster is at generation") == 1


def test_the_generation_line_stays_when_the_comment_is_cut() -> None:
    text = to_markdown([at_generation(many_deployments(1000), 3, "converged")], saved="shop.plan.json")

    assert len(text) <= LIMIT and len(table_rows(text)) < 1000
    parts = text.split("\n\n")
    assert parts[1:3] == [
        "### planner plan `shop` (namespace `shop`)",
        "*cluster is at generation 3 of plan shop (converged)*",
    ]


def test_an_update_row_names_what_a_reviewer_decides_on() -> None:
    """An image bump beside a ConfigMap change: the row says the image in one line, not only the roll."""
    web = ObjectRef(group="apps", kind="Deployment", namespace="shop", name="web")
    container = ".spec.template.spec.containers[name=web]"
    change = Change(
        ref=web,
        action="update",
        desired={},
        live={},
        reason="rolls because configMap web-config changed",
        fields=(
            FieldChange(path=f"{container}.image", before="nginx:1.28", after="nginx:1.29"),
            FieldChange(path=".spec.replicas", before=2, after=3),
            FieldChange(path=f"{container}.resources.limits.cpu", before="500m", after="1"),
            FieldChange(path=f"{container}.env[name=LOG_LEVEL].value", before="info", after="debug"),
            FieldChange(path=".spec.template.metadata.annotations.x", before="a", after="b"),
        ),
    )
    markdown = to_markdown([ChangeSet(plan="shop", namespace="shop", changes=(change,))])
    row = next(line for line in markdown.splitlines() if line.startswith("| `~` |"))
    assert row == (
        "| `~` | update | pending | `deployment/shop/web` | rolls because configMap web-config changed; "
        "image web: nginx:1.28 → nginx:1.29; replicas: 2 → 3; resources web: limits.cpu 500m → 1; "
        "env web: LOG_LEVEL info → debug |"
    )
