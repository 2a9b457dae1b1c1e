// Package deploy installs Herald in a lab (e2e/lab) the way a user does:
// the controller and speaker images built from this checkout
// (hack/images) and imported into every node's containerd, then
// manifests/herald.yaml applied with kubectl (Install) or the chart
// installed with helm (InstallHelm); the controller Deployment and the
// speaker DaemonSet run as Pods under their ServiceAccounts, and the
// speakers read the member-list key from the Secret the controller
// creates. A Herald handle then reaches those Pods: the leader, the
// speaker Pod of a node and its container's process (killed by PID as a
// crash would), logs, metrics and service-account tokens. The end-to-end
// tests and `make demo` use it.
package deploy
