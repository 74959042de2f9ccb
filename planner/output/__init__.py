"""Printers: everything planner shows a person or a program is formatted here, and only here.

Secret masking lives here too, so no stage can leak a value by printing: stages hand over data and the
printer decides what a reader may see (DESIGN §5: Secret values and Secret hashes are `***` unless the
user asks with `--show-secrets`).
"""
