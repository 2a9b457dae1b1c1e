package controller

import (
	"net/netip"
	"slices"
	"time"

	"k8s.io/client-go/tools/cache"
)

// dropped returns the addresses of before that after no longer holds.
func dropped(before, after []netip.Addr) []netip.Addr {
	var out []netip.Addr
	for _, ip := range before {
		if !slices.Contains(after, ip) {
			out = append(out, ip)
		}
	}
	return out
}

// quarantineMoved holds back the addresses a Service gave up in a move
// until its new status is written (releaseMoved). Call with c.mu held.
func (c *Controller) quarantineMoved(key cache.ObjectName, ips []netip.Addr) {
	if len(ips) == 0 {
		return
	}
	c.alloc.Quarantine(ips)
	c.moved[key] = append(c.moved[key], ips...)
}

// releaseMoved starts the hold time of the addresses key gave up, now that
// its status no longer shows them.
func (c *Controller) releaseMoved(key cache.ObjectName) {
	c.mu.Lock()
	ips := c.moved[key]
	delete(c.moved, key)
	c.mu.Unlock()
	c.holdBack(ips)
}

// holdBack keeps released addresses from being handed out again for
// Options.ReleaseHold, so that clients' ARP caches and DNS answers that
// still point at them reach nobody else meanwhile. The addresses must be quarantined already, in the critical section that
// released them.
func (c *Controller) holdBack(ips []netip.Addr) {
	if len(ips) == 0 {
		return
	}
	free := func() {
		c.mu.Lock()
		c.alloc.Unquarantine(ips)
		c.mu.Unlock()
		c.requeuePending()
	}
	if c.opts.ReleaseHold <= 0 {
		free()
		return
	}
	time.AfterFunc(c.opts.ReleaseHold, free)
}
