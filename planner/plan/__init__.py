"""The plan: its format (schemas/plan.schema.json), the loader that checks a plan file and builds the
model, and the model every later stage reads."""

from planner.plan.load import LoadResult, load_plans
from planner.plan.model import (
    Claim,
    ConfigMap,
    Container,
    Plan,
    Position,
    Probe,
    Rootfs,
    Sandbox,
    SandboxTemplate,
    Scheduling,
    Secret,
    Source,
    Volume,
    WarmPool,
    Workload,
)

__all__ = [
    "Claim",
    "ConfigMap",
    "Container",
    "LoadResult",
    "Plan",
    "Position",
    "Probe",
    "Rootfs",
    "Sandbox",
    "SandboxTemplate",
    "Scheduling",
    "Secret",
    "Source",
    "Volume",
    "WarmPool",
    "Workload",
    "load_plans",
]
