"""The only code that talks to a cluster, and the only importer of the kubernetes client (DESIGN §2)."""
