"""The only code that talks to a cluster, and the only importer of the kubernetes client (docs/design.md §2)."""
