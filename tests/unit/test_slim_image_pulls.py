"""The simulated node's pulls from registries in reserved domains, which never resolve."""

from __future__ import annotations

import pytest

from planner.slim.podsim import unresolvable_registry


@pytest.mark.parametrize(
    ("image", "error"),
    [
        (
            "registry.invalid/x",
            'rpc error: code = Unknown desc = failed to pull and unpack image "registry.invalid/x:latest": '
            'failed to resolve reference "registry.invalid/x:latest": failed to do request: Head '
            '"https://registry.invalid/v2/x/manifests/latest": dial tcp: lookup registry.invalid: no such host',
        ),
        (
            "ci.example:5000/team/app:1.2",
            'rpc error: code = Unknown desc = failed to pull and unpack image "ci.example:5000/team/app:1.2": '
            'failed to resolve reference "ci.example:5000/team/app:1.2": failed to do request: Head '
            '"https://ci.example:5000/v2/team/app/manifests/1.2": dial tcp: lookup ci.example: no such host',
        ),
        (
            "a.test/app@sha256:" + "0" * 64,
            f'rpc error: code = Unknown desc = failed to pull and unpack image "a.test/app@sha256:{"0" * 64}": '
            f'failed to resolve reference "a.test/app@sha256:{"0" * 64}": failed to do request: Head '
            f'"https://a.test/v2/app/manifests/sha256:{"0" * 64}": dial tcp: lookup a.test: no such host',
        ),
    ],
)
def test_an_image_from_a_reserved_domain_fails_as_containerd_says(image: str, error: str) -> None:
    assert unresolvable_registry(image) == error


@pytest.mark.parametrize(
    "image", ["nginx:1.27", "ghcr.io/acme/app:1", "invalid/app", "localhost:5000/app", "my.invalid"]
)
def test_other_images_pull(image: str) -> None:
    assert unresolvable_registry(image) is None
