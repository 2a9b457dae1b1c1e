// Package probe is the packet work of the lab's prober (e2e/cmd/labprobe),
// run inside a lab network namespace: ARP who-has and IPv6 neighbor
// solicitations sent on a raw socket with every answer recorded, a
// continuous prober for failover measurements, a watcher of gratuitous
// ARP and unsolicited neighbor advertisements, and a plain HTTP GET.
//
// It also defines the JSON records the prober prints, which e2e/lab reads.
// It never configures interfaces, addresses or routes, and never sends to
// anything but the one address it is asked about (or the link-layer
// broadcast and solicited-node multicast groups that ARP and NDP use).
package probe
