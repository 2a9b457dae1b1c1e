// Package deploy runs Herald in a lab (e2e/lab) the way a cluster runs it:
// the namespace and RBAC from manifests/ applied with kubectl, the
// controller and one speaker per node started with the identities of
// their ServiceAccounts (tokens from the TokenRequest API), the speakers'
// member-list key read from the Secret the controller creates. The
// end-to-end tests and `make demo` use it.
package deploy
