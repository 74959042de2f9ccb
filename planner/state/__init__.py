"""What every stage reads of a plan's bookkeeping in the cluster, below them all: its ApplySet parent
(`applyset`) and its run lock (`runlock`). The records made from a run's results sit above the stages
whose results they keep: `planner.generations` (history) and `planner.savedplan` (`plan --out`)."""
