"""The OpenAPI schemas of the built-in kinds, from Kubernetes v1.28's published definitions.

`schemas.py` loads the committed table (`k8s-openapi.json.gz`, written by
`scripts/generate_k8s_openapi.py`) and reads it as the Go types request bodies are decoded into;
`documents.py` serves it as the apiserver's OpenAPI v3 documents.
"""
