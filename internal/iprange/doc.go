// Package iprange owns address ranges of one IP family: parsing the strings
// users write in IPAddressPool.spec.addresses ("198.51.100.64/27",
// "2001:db8::1-2001:db8::ff"), and the arithmetic the allocator and the
// configuration need on them (containment, overlap, exact size, order,
// canonical text).
//
// It never allocates addresses, never reads Kubernetes objects and never
// touches the network: it is pure code on net/netip values.
//
// IPv4-mapped IPv6 addresses (::ffff:a.b.c.d, in any spelling) are refused:
// Go's net package and Kubernetes' validation read such an address as IPv4,
// so a pool entry holding one would be counted as IPv6 here and published
// as IPv4 in a Service's status. The user meant either the IPv4 address or
// a real IPv6 range; the error says which to write.
package iprange
