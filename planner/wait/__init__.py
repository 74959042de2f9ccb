"""Judging what was written, below every stage that waits on it: the rules that say whether an object is
ready (`readiness`), why it is not yet (`reasons`) and the pods and Events that say so (`evidence`).
The executor's, the monitor's and `plan`'s verdicts all come from here; the waits themselves are
`planner.waiting`, beside the executor and the writes."""
