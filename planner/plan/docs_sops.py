"""The "Secrets encrypted with SOPS" section of docs/plan-format.md: which files may carry sops
metadata, what may be encrypted, where the keys come from and what is refused (planner/plan/sealed.py,
planner/sops/), written beside the generator (docs.py), which puts it after the imports section."""

from __future__ import annotations

SOPS_SECTION = """\
## Secrets encrypted with SOPS

A plan's secret values may live in Git encrypted with [SOPS](https://github.com/getsops/sops) for age
recipients, as Flux's kustomize-controller and sops-nix read them. A file encrypted by `sops` carries
its metadata under a top-level `sops:` key (the data key wrapped for each recipient, a MAC, the rule
saying which values are encrypted) and holds each encrypted value as `ENC[AES256_GCM,data:…,iv:…,
tag:…,type:str]`. planner reads such files as they are; nothing is decrypted on disk.

Two shapes, both made by `sops encrypt`:

- **The plan file itself** (Flux's shape: a manifest encrypted with an `encrypted_regex`): only the
  secret values are encrypted, so the rest stays readable and diffable in review.

  ```yaml
  # .sops.yaml at the repository root: what `sops encrypt FILE` does for these files
  creation_rules:
    - path_regex: plans/.*\\.yaml$
      encrypted_regex: ^(data|secretEnv)$
      age: age1l44xcng8dqj32nlv6d930qvvrny05hglzcv9qpc7kxjc6902ma4qufys29
  ```

- **A fragment holding only `secrets:`**, imported by a plain plan file (sops-nix's shape: one secrets
  file beside the configuration). The plan file stays plain, a re-encryption touches only the
  fragment, and a ConfigMap's `data` can never be caught by the rule:

  ```yaml
  # plans/production.yaml
  apiVersion: planner.dev/v1
  kind: Plan
  metadata: {name: shop, namespace: shop}
  imports: [production.secrets.yaml]   # sops encrypt --encrypted-regex '^data$' --in-place production.secrets.yaml
  workloads:
    - {name: web, image: nginx:1.27, envFrom: [{secret: db}]}
  ```

  ```yaml
  # plans/production.secrets.yaml, as sops writes it
  secrets:
    - name: db
      data:
        password: ENC[AES256_GCM,data:HerbyiyR…,iv:aBBeVFSQ…,tag:Y0hlZzxh…,type:str]
  sops:
    age:
      - recipient: age1l44xcng8dqj32nlv6d930qvvrny05hglzcv9qpc7kxjc6902ma4qufys29
        enc: |
          -----BEGIN AGE ENCRYPTED FILE-----
          …
          -----END AGE ENCRYPTED FILE-----
    lastmodified: "2026-12-07T14:14:44Z"
    mac: ENC[AES256_GCM,data:…,type:str]
    encrypted_regex: ^data$
    version: 3.11.0
  ```

Rules:

- **Only secret values may be encrypted**: strings written literally under `secrets[].data`,
  `sandboxes[].secretEnv` or `warmPools[].template.secretEnv`. Those are the values planner never
  prints (outputs, saved plans, generations, Events, status, logs, metrics and web pages all mask
  them), so a decrypted value is masked wherever it goes. A value the file's rule encrypts anywhere
  else — a ConfigMap's `data` under `encrypted_regex: ^data$`, everything under sops's default rule —
  is an error at that value: planner would have to show it. Inline Secret `manifests` are not
  decrypted either. Encrypted values must be `type:str` (quote numbers before encrypting).
- **Each file is its own unit**: its own data key and MAC, checked when the plan is loaded. A value
  changed, added, removed or moved to another key without `sops`, a changed `lastmodified` or `mac`, or
  a plain value where the rule wants an encrypted one, is refused at its line and column; the message
  never holds a value. Edit encrypted files with `sops FILE` (or `sops edit`).
- **Keys**: age identities (`AGE-SECRET-KEY-1…`) and PGP keys; cloud KMS and Vault recipients are named
  in messages but not used, and a file split among several key groups (Shamir) is refused. age stanzas
  are tried first, then PGP ones; the first that opens wins. A rule regular
  expression with a repeated group that repeats or branches inside (`(a+)+`) is refused too: Python's
  matcher, unlike Go's, could take exponential time on it. The command
  line reads them where sops does, all together: `SOPS_AGE_KEY` (identities separated by blanks or
  lines), the file `SOPS_AGE_KEY_FILE` names, and `sops/age/keys.txt` under the user configuration
  directory (`$XDG_CONFIG_HOME`, else `~/.config`; `~/Library/Application Support` on macOS;
  `%AppData%` on Windows). `SOPS_AGE_KEY_CMD`, SSH keys and age plugins are not read. PGP keys are asked
  of the `gpg` command, as sops asks it, with the user's keyring (`GNUPGHOME`, else `~/.gnupg`;
  `SOPS_GPG_EXEC` names another binary by absolute path), non-interactively (`--batch`, no pinentry: a
  key whose passphrase gpg-agent has not cached is refused, saying so). Keys are read only when a file
  is encrypted, gpg only for a file with PGP recipients that no age key opens; without a key that opens
  it, the load fails before any cluster is asked, at the file's `sops:` key, naming the file's
  recipients (age recipients, PGP fingerprints) and every place looked in.
- **A Plan object** (`planner controller`) may carry the `sops:` map and its encrypted values itself
  (`sops encrypt` the Plan's YAML, then `kubectl apply -f` it) and names the Secret holding its
  keys in `decryption: {provider: sops, secretRef: {name}}` (age identities under keys ending in
  `.agekey`, armored PGP secret keys without a passphrase under keys ending in `.asc`, used in memory;
  read as the Plan's ServiceAccount). Its MAC is not checked: the API server stores the object's fields in its own
  order and adds its own, so the values sops hashed are not there in sops's order. Each value is still
  bound to its key by AES-GCM, and whoever may change the object could write any value into it anyway.
  A Plan object cannot import files, and `planner build` refuses to merge a sealed fragment into one.
- `validate` reads no secret value (neither a Secret of the cluster nor an age or PGP key): an encrypted value
  reads as empty there, and the file is not checked against its MAC, so a job without the key can
  still check the plans. `render` decrypts as `plan` does, and masks the values unless
  `--show-secrets`.
"""
