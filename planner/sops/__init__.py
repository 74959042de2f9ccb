"""SOPS-encrypted YAML, read as sops itself reads it: its metadata, the data key unwrapped for an age
identity or a PGP key, every value decrypted with AES-256-GCM and the file's MAC checked.

sops (github.com/getsops/sops) encrypts the values of a YAML file, never its keys, each under one
32-byte data key with AES-256-GCM, a 32-byte IV and, as additional data, the value's path: the map keys
from the root joined and ended by `:` (`secrets:data:password:`; list positions are not part of it), so a
value moved to another key no longer decrypts. The data key is wrapped once per recipient (here: age,
in an armored age file under `sops.age[].enc`, or PGP, in an armored OpenPGP message under
`sops.pgp[].enc`), and `sops.mac` is SHA-512 over the plaintext values
(all of them, or only the encrypted ones with `mac_only_encrypted`) in file order, upper-case hex,
itself encrypted with the file's `lastmodified` as additional data. Which values are encrypted is the
file's one rule (`encrypted_regex`, `unencrypted_suffix`, …; `_unencrypted` suffix by default).

This package knows the format only: `metadata` reads the `sops` map, `agekeys` finds age identities
where sops looks for them, `pgpkeys` asks gpg or holds PGP keys given, `keys` joins the two,
`datakey` unwraps the data key, `plaintext` walks the tree. Nothing here
knows plans; `planner.plan.sealed` is the seam between the two. No message ever holds a plaintext
value or a key, only paths, recipients and where keys were looked for.
"""
