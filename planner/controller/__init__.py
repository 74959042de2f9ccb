"""The long-running controller: continuous reconcile, warm pools, the idle reaper, health and metrics,
leader election. `app.controller` runs it; `leader`, `prometheus`, `recorder` and `health` are its parts."""
