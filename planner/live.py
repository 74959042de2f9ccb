"""The live side of a diff: what the cluster holds for one plan (docs/design.md §4).

Reading is cheap by construction: the ApplySet's parent Secret is read once; the scope it lists
(`planner.state.applyset`), joined with what the new render adds, says where members can be; then one LIST per
(kind, namespace) selected by the part-of label finds every member, one LIST of namespaces says which
exist, and a few planned creates of a kind in a namespace cost a GET each (to find a same-named object
this plan does not own; more cost one LIST of that kind there), and
a StatefulSet the plan removes one LIST of the PVCs its claim templates made. So a no-op plan costs O(kinds × namespaces) requests, never O(objects).
Those LISTs are not paged (a page of 500 made a plan of 10,000 workloads read 20 times per kind), and
go out together, a few at a time, as do the namespaces' read.

`read_parents` lists the ApplySet parents planner wrote in some namespaces, for the monitor's record of
the Jobs that ran.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from planner.errors import ForbiddenError, NotFoundError
from planner.kinds import NAMESPACE, PERSISTENT_VOLUME_CLAIM, SECRET, KindInfo, declared_kinds
from planner.kube.client import KubeClient, resource_path
from planner.kube.discovery import Kinds, UnknownKindError
from planner.objects import (
    Manifest,
    ObjectRef,
    claim_templates,
    claims_selector,
    metadata_of,
    ref_of,
    stateful_claims,
)
from planner.state.applyset import (
    LABEL_APPLYSET_ID,
    Scope,
    is_parent,
    is_planners,
    listed_scope,
    member_selector,
    parent_ref,
)

LIST_PAGE = 500
# LISTs in flight at once while reading a plan's live state: the server answers one while the next is
# decoded here.
READERS = 8


@dataclass(frozen=True, kw_only=True)
class LiveState:
    """The plan's objects as the cluster returned them.

    `members` are the ApplySet members (part-of label); `parent` is the ApplySet parent Secret, None when
    the plan was never applied; `foreign` holds same-named objects without this plan's label, found by a
    GET per planned create, and a Secret at the parent's place that is not the plan's parent (never
    read as one: its data and annotations are someone else's); `namespaces` are the namespaces in scope
    that exist, None when not known; `claims` are the PVCs the claim templates of each StatefulSet
    member made (`objects.stateful_claims`), by that StatefulSet: the diff prunes those of a set it
    prunes after it with `--allow-data-loss`, and tells which of a kept set's are smaller than its
    template now.
    """

    members: Mapping[ObjectRef, Manifest] = field(default_factory=dict)
    parent: Manifest | None = None
    foreign: Mapping[ObjectRef, Manifest] = field(default_factory=dict)
    namespaces: frozenset[str] | None = None
    claims: Mapping[ObjectRef, tuple[Manifest, ...]] = field(default_factory=dict)


def read_live(
    client: KubeClient,
    *,
    desired: Sequence[Manifest],
    plan: str,
    namespace: str,
    probe_foreign: bool = True,
    known_namespaces: frozenset[str] = frozenset(),
) -> LiveState:
    """The plan's live objects: parent, members in scope, existing namespaces, and (with `probe_foreign`)
    same-named objects the plan does not own, one GET per planned create. `apply` skips the probes: its
    create meets such an object as a 409 and refuses it there, one request instead of two.
    `known_namespaces` exist for certain (a held run lock's Lease lives in its plan's namespace): when
    they are all the plan's, namespaces are not listed."""
    found = get_or_none(client, SECRET, namespace, plan)
    at_parent = parent_ref(plan, namespace)
    parent = found if found is None or is_parent(at_parent, found) else None
    listed = listed_scope(parent)
    kinds = Kinds(client, declared=declared_kinds(desired))
    namespaces = {namespace} | Scope.of(map(ref_of, desired)).namespaces | listed.namespaces
    selector = member_selector(plan, namespace)
    # A cluster-scoped member kind (a Namespace kubectl --applyset added) is listed once.
    places = [
        (kind, ns)
        for kind in _member_kinds(kinds, desired, listed)
        for ns in (sorted(namespaces) if kind.namespaced else [None])
    ]
    with ThreadPoolExecutor(READERS, thread_name_prefix="read") as pool:
        in_scope = (
            None if namespaces <= known_namespaces else pool.submit(existing_namespaces, client, namespaces)
        )
        lists = list(pool.map(lambda place: _list_served(client, *place, label_selector=selector), places))
        existing = frozenset(namespaces) if in_scope is None else in_scope.result()
    members = {ref_of(item): item for items in lists for item in items}
    claims = read_claims_of(client, [m for m in members.values() if claim_templates(m)])
    planned_creates = (m for m in desired if ref_of(m) not in members)
    foreign = _foreign(client, kinds, planned_creates) if probe_foreign else {}
    if found is not None and parent is None:  # a Secret that only has the parent's name
        foreign[at_parent] = found
    return LiveState(members=members, parent=parent, foreign=foreign, namespaces=existing, claims=claims)


def read_claims_of(
    client: KubeClient, stateful_sets: Sequence[Manifest]
) -> dict[ObjectRef, tuple[Manifest, ...]]:
    """The PVCs each StatefulSet's claim templates made, by the set: one LIST of PVCs per namespace
    that holds such a set, then Kubernetes' naming rule (`objects.stateful_claims`)."""
    spaces = sorted({str(metadata_of(s).get("namespace")) for s in stateful_sets})
    listed = [claim for ns in spaces for claim in list_objects(client, PERSISTENT_VOLUME_CLAIM, ns)]
    return {ref_of(s): tuple(stateful_claims(s, listed)) for s in stateful_sets}


def read_stateful_claims(client: KubeClient, stateful_set: Manifest) -> list[Manifest]:
    """The PVCs a live StatefulSet's claim templates made: one LIST by the labels the controller gives
    them, then Kubernetes' naming rule (`objects.stateful_claims`)."""
    namespace = metadata_of(stateful_set).get("namespace")
    listed = list_objects(
        client, PERSISTENT_VOLUME_CLAIM, namespace, label_selector=claims_selector(stateful_set)
    )
    return stateful_claims(stateful_set, listed)


FEW_NAMESPACES = 3  # looked up by name; more are read in one LIST of every namespace


def list_objects(
    client: KubeClient,
    kind: KindInfo,
    namespace: str | None,
    *,
    label_selector: str = "",
    field_selector: str = "",
    page: int | None = LIST_PAGE,
) -> list[Manifest]:
    """Every object of a kind in a namespace, `page` objects a request (None: all in one); items get
    back their kind and apiVersion."""
    items: list[Manifest] = []
    query = {"limit": str(page)} if page is not None else {}
    query |= {"labelSelector": label_selector} if label_selector else {}
    query |= {"fieldSelector": field_selector} if field_selector else {}
    while True:
        answer = client.request("GET", resource_path(kind, namespace), query=query, verb="list")
        items += [
            {"apiVersion": kind.api_version, "kind": kind.kind, **item} for item in answer.get("items", [])
        ]
        token = metadata_of(answer).get("continue")
        if not token:
            return items
        query = query | {"continue": token}


def _member_kinds(kinds: Kinds, desired: Sequence[Manifest], listed: Scope) -> list[KindInfo]:
    """Every kind members can be of: the rendered ones (at the version the plan writes) and those the
    parent lists (found through discovery; one the cluster no longer serves holds nothing)."""
    found: dict[str, KindInfo] = {}
    for manifest in desired:
        kind = kinds.for_manifest(manifest)
        if not kind.namespaced and metadata_of(manifest).get("namespace"):
            raise UnknownKindError(
                f"{ref_of(manifest).described}: the cluster serves {kind.kind} cluster-scoped, but "
                "render took it for namespaced (it knows only common kinds and the plan's own CRDs): "
                "declare its CustomResourceDefinition in the plan, or leave the object to another tool"
            )
        found.setdefault(kind.group_kind, kind)
    for group_kind in sorted(listed.group_kinds - found.keys()):
        if (listed_kind := kinds.of_group_kind(group_kind)) is not None:
            found[group_kind] = listed_kind
    return [found[group_kind] for group_kind in sorted(found)]


def _list_served(
    client: KubeClient, kind: KindInfo, namespace: str | None, *, label_selector: str
) -> list[Manifest]:
    """`list_objects` in one request whatever the count (a plan's reads are one LIST per kind and
    namespace), and nothing for a kind not served yet (a CRD of the plan that apply creates)."""
    try:
        return list_objects(client, kind, namespace, label_selector=label_selector, page=None)
    except NotFoundError:
        return []


def get_or_none(client: KubeClient, kind: KindInfo, namespace: str | None, name: str) -> Manifest | None:
    try:
        return client.request("GET", resource_path(kind, namespace, name), verb="get")
    except NotFoundError:
        return None


FEW_PROBES = 3  # planned creates of one kind and namespace probed by name; more in one LIST


def _foreign(
    client: KubeClient, kinds: Kinds, planned_creates: Iterable[Manifest]
) -> dict[ObjectRef, Manifest]:
    """Same-named objects without the plan's label where the plan would create: a GET each for a few
    creates of a kind in a namespace, one LIST of that kind there for more (each place on its own
    thread), so a first plan of 10,000 objects costs a LIST per kind and namespace, not a request per
    object."""
    by_place: dict[tuple[KindInfo, str | None], dict[ObjectRef, Manifest]] = {}
    for manifest in planned_creates:
        ref = ref_of(manifest)
        by_place.setdefault((kinds.for_manifest(manifest), ref.namespace), {})[ref] = manifest

    def probed(place: tuple[KindInfo, str | None]) -> list[Manifest]:
        (kind, namespace), planned = place, by_place[place]
        live = _listed(client, kind, namespace) if len(planned) > FEW_PROBES else None
        if live is None:
            live = [obj for ref in planned if (obj := get_or_none(client, kind, namespace, ref.name))]
        return [obj for obj in live if ref_of(obj) in planned]

    with ThreadPoolExecutor(READERS, thread_name_prefix="probe") as pool:
        return {ref_of(obj): obj for found in pool.map(probed, list(by_place)) for obj in found}


def _listed(client: KubeClient, kind: KindInfo, namespace: str | None) -> list[Manifest] | None:
    """Every object of `kind` in `namespace`; None when listing is forbidden (a GET may not be)."""
    try:
        return _list_served(client, kind, namespace, label_selector="")
    except ForbiddenError:
        return None


def existing_namespaces(client: KubeClient, namespaces: set[str]) -> frozenset[str] | None:
    """Which namespaces in scope exist; None when listing namespaces is forbidden (then assume all do).
    A few are listed by name (a cluster of thousands of namespaces is not read for one plan's), more in
    one LIST of all; both need only the `list` verb."""
    try:
        if len(namespaces) <= FEW_NAMESPACES:
            listed = [
                ns
                for name in sorted(namespaces)
                for ns in list_objects(client, NAMESPACE, None, field_selector=f"metadata.name={name}")
            ]
        else:
            listed = list_objects(client, NAMESPACE, None)
    except ForbiddenError:
        return None
    return frozenset(ref_of(ns).name for ns in listed) & frozenset(namespaces)


def read_parents(client: KubeClient, namespaces: frozenset[str] | None) -> list[Manifest]:
    """The ApplySet parents planner wrote in `namespaces` (None: everywhere), one LIST per namespace;
    another ApplySet tool's parents are left out."""
    parents = [
        parent
        for namespace in (sorted(namespaces) if namespaces is not None else [None])
        for parent in list_objects(client, SECRET, namespace, label_selector=LABEL_APPLYSET_ID)
    ]
    return [parent for parent in parents if is_planners(parent)]
