"""planner's embedded slim Kubernetes API server (DESIGN.md §6).

Layers, each a module: `resources` (the kinds table) → `defaults`/`validation`/`admission`/`quantity`
(what the apiserver does to an object) → `store` (SQLite + watch buffer) → `api` (the verbs, HTTP-free)
→ `http/` (aiohttp glue) → `server`/`cluster` (processes, kubeconfig). Nothing here imports the rest
of planner.
"""
