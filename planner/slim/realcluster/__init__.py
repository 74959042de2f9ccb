"""The embedded cluster's simulation against a real control plane, in the manner of controller-runtime's
envtest and KWOK: `controlplane` starts etcd, kube-apiserver, kube-controller-manager and kube-scheduler
on loopback (for tests and benchmarks), `nodeagent` registers simulated nodes with any API server and
runs the pods scheduled onto them with the embedded cluster's own pod timeline (`planner.slim.podsim`).
"""
