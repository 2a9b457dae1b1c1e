// Package leader runs the controller's work as the single active replica:
// Lease leader election (client-go's, with kube-controller-manager's
// timings) and the Fence that closes the leader's writes before another
// replica may take over.
package leader
