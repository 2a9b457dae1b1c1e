// Package service reads what a Kubernetes Service asks of Herald: whether
// it is Herald's at all (type and loadBalancerClass), which addresses,
// pool, sharing key and families it requests, and which addresses its
// status already carries. Pure: no client, no clock.
package service
