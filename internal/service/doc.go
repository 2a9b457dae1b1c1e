// Package service reads what a Kubernetes Service asks of Herald: whether
// it is Herald's at all (type and loadBalancerClass), which addresses,
// pool, sharing key and families it requests, and which addresses its
// status already carries. Pure: no client, no clock.
//
// Request and Port, what a Service asks the allocator for, live here so
// that the controller's allocator and the speaker both depend on this
// package and the speaker never links the allocator
// (speaker/deps_test.go checks it).
package service
