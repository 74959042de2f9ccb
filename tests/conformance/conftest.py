"""Real kubectl against the embedded cluster: `tests/slimcluster.py`'s fixtures."""

from tests.slimcluster import api_client, apps_v1, batch_v1, cluster, core_v1, kubectl, namespace

__all__ = ["api_client", "apps_v1", "batch_v1", "cluster", "core_v1", "kubectl", "namespace"]
