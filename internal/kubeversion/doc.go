// Package kubeversion decides whether the API server is new enough for
// Herald: the CRDs' validation rules use CEL IP and CIDR functions, which
// CRD rules may use from Kubernetes 1.31, and Services' status
// ipMode needs 1.30. The controller checks at start and refuses to run on
// an older cluster with a message saying so, instead of failing later in
// obscure ways. It reads the version and nothing else.
package kubeversion
