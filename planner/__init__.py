"""planner: a Nix-style declarative reconciler for Kubernetes."""

__version__ = "0.1.0"
