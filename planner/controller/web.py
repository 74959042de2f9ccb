"""The controller's read-only web view: which page a path is, built from what the controller keeps
(`viewmodels`) and drawn as HTML (`pages`). The index reads nothing from the API; a plan's page lists
its generations (one request)."""

from __future__ import annotations

from collections.abc import Callable

from planner.app.history import list_generations
from planner.controller import pages
from planner.controller.sandboxcaches import SandboxCaches
from planner.controller.viewmodels import Known, addressed_plan, overview, plan_view
from planner.errors import ApiError, UnreachableError
from planner.generations import Listed
from planner.kube.client import KubeClient


class WebView:
    def __init__(
        self,
        client: KubeClient,
        caches: SandboxCaches,
        *,
        identity: str,
        leading: Callable[[], bool],
        known: Callable[[], list[Known]],
        timeout: float | None,
        notice: Callable[[str], None],
    ) -> None:
        self.client, self.caches, self.identity, self.leading = client, caches, identity, leading
        self.known = known  # every plan the controller keeps, with its last outcomes
        self.timeout = timeout  # the waits' timeout an apply has, to draw its last apply
        self.notice = notice

    def page(self, path: str) -> str | None:
        """The page at `path` (`/`, `/plans/<namespace>/<name>`); None for no such page."""
        claims, pods = self.caches.snapshot()
        if path == "/":
            return pages.index_page(overview(self.identity, self.leading(), self.known(), claims, pods))
        wanted = addressed_plan(path)
        found = [k for k in self.known() if (k.namespace, k.name) == wanted]
        if not found:
            return None
        known = found[0]
        view = plan_view(
            known, claims, pods, generations=self._generations(known), with_objects=True, timeout=self.timeout
        )
        return pages.plan_page(view)

    def _generations(self, known: Known) -> list[Listed]:
        if not known.namespace:
            return []
        try:
            return list_generations(self.client, known.name, known.namespace)
        except (ApiError, UnreachableError) as failure:
            self.notice(f"web view: the generations of plan {known.name}: {failure}")
            return []
