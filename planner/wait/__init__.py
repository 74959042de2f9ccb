"""Waiting for what was written to be ready: the rules (`readiness`), why a wait is held up (`reasons`),
what the cluster showed (`evidence`) and the waits themselves (`waiting`)."""
