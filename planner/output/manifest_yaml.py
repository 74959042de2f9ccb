"""Manifests as YAML documents or a JSON `List`, ready for `kubectl apply -f -`."""

from __future__ import annotations

import io
import json
from collections.abc import Iterable
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.scalarstring import DoubleQuotedScalarString, LiteralScalarString

from planner.objects import Manifest
from planner.output.masking import mask_manifest

# Strings YAML 1.1 reads as booleans. ruamel writes YAML 1.2, where they are plain strings, but kubectl
# reads YAML 1.1: `off` unquoted would reach the API server as false.
_YAML11_BOOLEANS = frozenset({"y", "yes", "n", "no", "on", "off"})


def _literal_blocks(value: Any) -> Any:
    """Multi-line strings as YAML literal blocks, so a config file in a ConfigMap stays readable; YAML
    1.1's booleans spelt as strings quoted, so kubectl reads them as strings."""
    if isinstance(value, dict):
        return {_unambiguous(key): _literal_blocks(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_literal_blocks(item) for item in value]
    if isinstance(value, str) and "\n" in value:
        return LiteralScalarString(value)
    return _unambiguous(value)


def _unambiguous(value: Any) -> Any:
    if isinstance(value, str) and value.lower() in _YAML11_BOOLEANS:
        return DoubleQuotedScalarString(value)
    return value


def _visible(manifests: Iterable[Manifest], show_secrets: bool) -> list[Manifest]:
    return [m if show_secrets else mask_manifest(m) for m in manifests]


def to_yaml(manifests: Iterable[Manifest], *, show_secrets: bool = False) -> str:
    yaml = YAML()
    yaml.default_flow_style = False
    yaml.width = 4096
    out = io.StringIO()
    yaml.dump_all((_literal_blocks(m) for m in _visible(manifests, show_secrets)), out)
    return out.getvalue()


def to_json(manifests: Iterable[Manifest], *, show_secrets: bool = False) -> str:
    document = {"apiVersion": "v1", "kind": "List", "items": _visible(manifests, show_secrets)}
    return json.dumps(document, indent=2) + "\n"
