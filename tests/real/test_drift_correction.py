"""Event-driven drift correction on a real control plane (kube-apiserver v1.28.7): a foreign `kubectl
scale` and `kubectl set image` of a Plan's Deployment are reverted by the controller's watch, long
before its 1h interval, and the Event on the Plan names the field and the writer as the real server's
managedFields record it.
"""

from __future__ import annotations

from tests.e2e.test_controller import Start, controllers
from tests.e2e.test_drift_correction import IMAGE, drift_events, image_of, replicas_of, run_ok, start_shop
from tests.real.conftest import Runner, eventually

__all__ = ["controllers"]  # the fixture, shared with the e2e tier


def test_a_foreign_scale_and_set_image_are_reverted_by_the_watch(
    controllers: Start, planner: Runner, kubectl: Runner, namespace: str
) -> None:
    running = start_shop(controllers, planner, kubectl, namespace)

    run_ok(kubectl, "scale", "deployment/web", "-n", namespace, "--replicas=5")
    eventually(lambda: replicas_of(kubectl, namespace, "web") == 2, timeout=90, what="replicas reverted")
    said = eventually(lambda: drift_events(kubectl, namespace), timeout=30, what="a DriftCorrected Event")
    assert any(".spec.replicas (written by kubectl" in message for message in said), (said, running.output())

    run_ok(kubectl, "set", "image", "deployment/web", "-n", namespace, "web=ghcr.io/acme/other:9")
    eventually(lambda: image_of(kubectl, namespace, "web") == IMAGE, timeout=90, what="image reverted")
    field = f"deployment/{namespace}/web .spec.template.spec.containers[name=web].image (written by kubectl"
    eventually(
        lambda: any(field in message for message in drift_events(kubectl, namespace)),
        timeout=30,
        what="the image's DriftCorrected Event",
    )
