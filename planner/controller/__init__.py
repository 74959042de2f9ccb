"""The long-running controller: continuous reconcile, warm pools, the idle reaper, health and metrics,
leader election. `manager` runs it; `leader`, `metrics` and `health` are its parts."""
