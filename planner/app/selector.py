"""Which plans a command acts on: plan files and directories, `NAME` (in `-n`'s namespace) or `NS/NAME`.

Every command that acts on a plan already applied (history, diff-generations, rollback, unlock, status)
takes the same selectors, so `planner history plans/web-stack.yaml`, `planner history shop -n shop` and
`planner history shop/shop` name one plan. A file or directory names the plans it declares, each in
the namespace the plan gives (else `-n`'s, else the context's); a name is checked before any request.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from planner.app.target import Target
from planner.errors import UsageError
from planner.plan import load_plans
from planner.plan.secrets import unread_secrets
from planner.render import is_dns_label, plan_namespace
from planner.sops.keys import unread_keys


@dataclass(frozen=True, order=True)
class PlanRef:
    """One plan as the cluster knows it: its namespace and its name."""

    namespace: str
    name: str

    def __str__(self) -> str:
        return f"{self.namespace}/{self.name}"


def selected_plans(selectors: Sequence[str], *, target: Target) -> list[PlanRef]:
    """The plans the selectors name, once each, in the order given (a directory's in path order)."""
    refs: list[PlanRef] = []
    for selector in selectors:
        refs += _from_files(selector, target) if Path(selector).exists() else [_from_name(selector, target)]
    return list(dict.fromkeys(refs))


def selected_plan(selector: str, *, target: Target) -> PlanRef:
    """The one plan the selector names; a directory of several plans is refused."""
    refs = selected_plans([selector], target=target)
    if len(refs) != 1:
        found = ", ".join(str(ref) for ref in refs) or "none"
        raise UsageError(f"{selector} names {len(refs)} plans ({found}): name one")
    return refs[0]


def _from_files(path: str, target: Target) -> list[PlanRef]:
    loaded = load_plans([path], secret_refs=unread_secrets, sops_keys=unread_keys)
    fallback = target.default_namespace()
    return [PlanRef(plan_namespace(plan, fallback), plan.name) for plan in loaded.plans]


def _from_name(selector: str, target: Target) -> PlanRef:
    namespace, slash, name = selector.rpartition("/")
    if slash and not is_dns_label(namespace):
        raise UsageError(
            f"{selector!r} is neither a plan file nor NAMESPACE/NAME: {namespace!r} is not a namespace name"
        )
    if not is_dns_label(name):
        raise UsageError(
            f"{selector!r} is neither a plan file nor a plan name: a plan name is at most 63 lowercase "
            "letters, digits and '-', starting and ending with a letter or digit"
        )
    return PlanRef(namespace if slash else target.default_namespace(), name)
