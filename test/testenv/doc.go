// Package testenv runs a real Kubernetes control plane for tests: etcd and
// kube-apiserver built from pinned Go modules (hack/build-programs.sh,
// versions in hack/versions.env), started as child processes with a fresh
// PKI in a temporary directory, and stopped by PID.
//
// One control plane per test package: call Main from TestMain and Shared
// from the tests. The lab (e2e/lab) uses Start directly with its own bind
// address. This package never touches the network beyond the addresses it
// is given (127.0.0.1 by default).
package testenv
