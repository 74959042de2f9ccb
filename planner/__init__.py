"""planner: a Nix-style declarative reconciler for Kubernetes."""

DISTRIBUTION = "kube-planner"  # "planner" on PyPI is an unrelated package


def __getattr__(name: str) -> str:
    """`__version__`: the installed distribution's version (package metadata), read on first use."""
    if name != "__version__":
        raise AttributeError(f"module 'planner' has no attribute {name!r}")
    from importlib.metadata import version

    found = version(DISTRIBUTION)
    globals()["__version__"] = found
    return found
