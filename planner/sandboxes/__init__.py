"""Pure decisions about sandboxes that run beside a plan: what a warm pool needs created or deleted
(`pools`) and which sandboxes have been idle past their timeout (`idle`). No cluster access here: the
controller and the `sandbox` commands read the cluster, ask these modules, and write."""
