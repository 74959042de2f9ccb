"""What planner keeps in the cluster about a plan: its ApplySet parent (`applyset`), its run lock
(`lock`), its generations (`generations`) and the saved plans that refer to them (`savedplan`)."""
