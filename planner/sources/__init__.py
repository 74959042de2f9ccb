"""Where a Plan object's plan comes from when it is not inline: a Git repository (docs/gitops.md).
`gitref` and `semver` choose the commit a ref names (pure), `gitfetch` fetches and checks it out with
dulwich, `artifacts` shares one fetch per interval among every Plan on the same source, `failures` names
why a source failed, in words that never hold a credential."""
