"""Manifests printed as YAML (`planner render`, `planner crd`) read back as kubectl reads them: YAML 1.1,
where `on`, `off`, `yes`, `no`, `y` and `n` unquoted are booleans."""

from __future__ import annotations

import yaml

from planner.output.manifest_yaml import to_yaml


def test_yaml_1_1_booleans_spelt_as_strings_stay_strings_for_kubectl() -> None:
    config = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "flags"},
        "data": {"on": "off", "no": "yes", "mode": "Y", "n": "N", "plain": "fast", "file": "a\nb\n"},
    }
    text = to_yaml([config])
    assert yaml.safe_load(text) == config
    assert '"on": "off"' in text and "plain: fast" in text and "file: |" in text
