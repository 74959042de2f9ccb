"""planner's embedded slim Kubernetes API server (docs/embedded-cluster.md).

Modules, by what they own:

- what the apiserver does to an object of a kind: `defaults`, `validation`, `admission`, `lifecycle`,
  `quantity`, and the list-merge rules in `mergekeys`;
- `resources`: the kinds table, naming each kind's hooks among those rules;
- the verbs' shared steps: `store` (SQLite + watch buffer), `objects` (decoding, type fields, filters),
  `errors` (Status bodies), `meta`, `selectors`, `listing`, `watching`, `deleting`, `patch` (with
  `strategic` and `fieldmanager`);
- `api` (the verbs, HTTP-free, every kind through the same paths) and `subresources`; `discovery`;
  `bootstrap` (what a fresh cluster holds);
- what `kubectl get` asks for: `columns`, `printers`, `views`, and `podstatus` (a Pod's status, as
  the node agent writes it and as kubectl reads it);
- the simulation: `runtime`, `controllers/`, `nodeagent`, `podsim`, `scheduling`, `logs`, `faults`,
  `metrics`, wired together by `simulation`;
- `http/` (aiohttp glue), `server`/`cluster` (processes, kubeconfig), `admin` (a client of the admin
  endpoints).

Nothing here imports the rest of planner.
"""
