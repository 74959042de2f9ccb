"""Where a chart repository's credentials go (`chart_repository.same_origin`): only to the repository's
own scheme, host and port, as Helm sends them without `--pass-credentials`; and never in a repr."""

from __future__ import annotations

import pytest

from planner.plan.chart_repository import Credentials, same_origin

REPO = "https://charts.example.com/stable/"


@pytest.mark.parametrize(
    ("url", "sent"),
    [
        ("https://charts.example.com/stable/index.yaml", True),
        ("https://charts.example.com/other/web-1.0.0.tgz", True),  # same host, another path
        ("https://CHARTS.example.com:443/stable/web-1.0.0.tgz", True),  # the default port, written out
        ("http://charts.example.com/stable/web-1.0.0.tgz", False),  # another scheme
        ("https://charts.example.com:8443/stable/web-1.0.0.tgz", False),  # another port
        ("https://cdn.example.com/stable/web-1.0.0.tgz", False),  # another host
        ("https://charts.example.com.evil.test/web-1.0.0.tgz", False),
        ("https://charts.example.com:x/web-1.0.0.tgz", False),  # a port that is no number
    ],
)
def test_credentials_go_only_to_the_repositorys_own_origin(url: str, sent: bool) -> None:
    assert same_origin(REPO, url) is sent


def test_credentials_show_no_password() -> None:
    credentials = Credentials("charts", "s3cret")
    assert "s3cret" not in repr(credentials) and "s3cret" not in str(credentials)
    assert credentials.header() == "Basic Y2hhcnRzOnMzY3JldA=="
