package speaker

import (
	"net/netip"
	"slices"
	"time"

	"github.com/herald-lb/herald/internal/announce"
	"github.com/herald-lb/herald/internal/layer2"
)

// l2State remembers what this node announces in L2 mode, and the
// addresses it is handing over to another node.
type l2State struct {
	owned     map[netip.Addr]announce.L2Owner
	releasing map[netip.Addr]*release
	spare     map[netip.Addr]announce.L2Owner // the next plan's owned, reused
	// incremental: the last plan looked at every address, with options
	// under which planChanged may follow it (ungated).
	incremental bool
}

// release is an address this node lost to another live node: it keeps
// answering until the new owner announces itself or the grace period ends.
type release struct {
	owner     announce.L2Owner // what this node announced, interfaces included
	newOwner  string
	since     time.Time
	takenOver bool
}

func newL2State() l2State {
	return l2State{owned: map[netip.Addr]announce.L2Owner{}, releasing: map[netip.Addr]*release{}}
}

func (l *l2State) yielded(ip netip.Addr) {
	if r := l.releasing[ip]; r != nil {
		r.takenOver = true
	}
}

func (l *l2State) announcedCount() int { return len(l.owned) + len(l.releasing) }

// dropAll stops announcing everything at once, handovers included.
func (l *l2State) dropAll() l2Plan {
	var p l2Plan
	for ip := range l.owned {
		p.dropped = append(p.dropped, ip)
	}
	for ip := range l.releasing {
		if _, dup := l.owned[ip]; !dup {
			p.dropped = append(p.dropped, ip)
		}
	}
	slices.SortFunc(p.dropped, netip.Addr.Compare)
	*l = newL2State()
	return p
}

// l2Plan is the outcome of one L2 decision for this node.
type l2Plan struct {
	want    []layer2.Announcement
	claimed []announce.L2Owner // addresses this node starts announcing
	dropped []netip.Addr       // addresses it stops announcing
	// unchanged (planChanged only): want is what the last plan wanted,
	// and is not built again.
	unchanged bool
	left      []netip.Addr // (planChanged only) addresses no longer owned
	// recheck is when a release's grace period ends, or claims may be
	// made again (zero: none pending).
	recheck time.Time
}

// planOptions are the inputs of plan besides the decision.
type planOptions struct {
	settled bool // the member list has settled: claim nothing before
	// held: the announcement hold is in force; answer nothing, not even
	// the addresses being handed over.
	held bool
	// keep: this node is cut off from every other member; it keeps the
	// addresses it announced before that still have an owner somewhere.
	keep bool
	// claimFrom: claim no address that is neither owned nor being
	// released here before then (the member list reaches the other
	// members again, and they come back one at a time: a partial view
	// would claim what still belongs to a member not heard yet).
	claimFrom time.Time
	now       time.Time
	grace     time.Duration
}

// plan decides, from the owners everyone computes, what this node
// announces: the addresses it owns (none before the member list has
// settled; with keep, also those it owned before), plus the ones it is
// still handing over.
func (l *l2State) plan(me string, res announce.L2Result, o planOptions) l2Plan {
	if o.held {
		return l.dropAll()
	}
	l.incremental = o.ungated()
	var p l2Plan
	now, grace := o.now, o.grace
	mine := l.spare
	if mine == nil {
		mine = make(map[netip.Addr]announce.L2Owner, len(l.owned))
	}
	clear(mine)
	var owned []layer2.Announcement // in address order, as res.Owners
	if o.settled {
		for _, ow := range res.Owners {
			ip := ow.IP
			prev, had := l.owned[ip]
			if ow.Node != me {
				if !o.keep || !had {
					continue
				}
				ow = announce.L2Owner{IP: ip, Node: me, Interfaces: prev.Interfaces, Services: ow.Services}
			}
			if !had && l.releasing[ip] == nil && now.Before(o.claimFrom) {
				p.recheck = earliest(p.recheck, o.claimFrom)
				continue
			}
			mine[ip] = ow
			owned = append(owned, layer2.Announcement{IP: ip, Interfaces: ow.Interfaces})
			if !had {
				p.claimed = append(p.claimed, ow)
			}
			delete(l.releasing, ip)
		}
	}
	for ip, ow := range l.owned {
		if _, still := mine[ip]; !still {
			l.releasing[ip] = &release{owner: ow, since: now}
		}
	}
	releasing := l.handOvers(&p, func(ip netip.Addr) (announce.L2Owner, bool) { return ownerOf(res.Owners, ip) }, now, grace)
	l.owned, l.spare = mine, l.owned
	p.want = mergeByAddress(owned, releasing)
	p.sort()
	return p
}

// handOvers ends the hand-overs whose new owner took over, whose address
// has no owner any more, or whose grace period ended (p.dropped), and
// returns the others' announcements, sorted, for p.want.
func (l *l2State) handOvers(p *l2Plan, owner func(netip.Addr) (announce.L2Owner, bool), now time.Time, grace time.Duration) []layer2.Announcement {
	var releasing []layer2.Announcement
	for ip, r := range l.releasing {
		next, ok := owner(ip)
		switch {
		case !ok || next.Node == "" || r.takenOver || now.Sub(r.since) >= grace:
			delete(l.releasing, ip)
			p.dropped = append(p.dropped, ip)
			p.unchanged = false
		default:
			r.newOwner = next.Node
			releasing = append(releasing, layer2.Announcement{IP: ip, Interfaces: r.owner.Interfaces, Releasing: true})
			p.recheck = earliest(p.recheck, r.since.Add(grace))
		}
	}
	slices.SortFunc(releasing, byAddress)
	return releasing
}

// sort puts the claimed and dropped addresses in address order.
func (p *l2Plan) sort() {
	slices.SortFunc(p.claimed, func(a, b announce.L2Owner) int { return a.IP.Compare(b.IP) })
	slices.SortFunc(p.dropped, netip.Addr.Compare)
}

// ungated: the member list has settled, nothing holds or keeps the
// addresses, and claims are allowed: what this node announces then
// follows from the decisions alone, so planChanged may follow a plan.
func (o planOptions) ungated() bool {
	return o.settled && !o.held && !o.keep && !o.now.Before(o.claimFrom)
}

// planChanged is plan when, since the last plan, only the decisions of
// ips may have changed (announce.L2Memo.DecideChanged; owner reads them)
// and the options were and are ungated (l.incremental). It looks at
// those addresses and at the ones being handed over, not at every
// address, and builds want again only when what this node announces
// changed (unchanged otherwise). The caller falls back to plan when
// l.incremental is false.
func (l *l2State) planChanged(me string, ips []netip.Addr, owner func(netip.Addr) (announce.L2Owner, bool), o planOptions) l2Plan {
	p := l2Plan{unchanged: true}
	for _, ip := range ips {
		ow, ok := owner(ip)
		prev, had := l.owned[ip]
		if ok && ow.Node == me {
			l.owned[ip] = ow
			if !had {
				p.claimed = append(p.claimed, ow)
			}
			_, wasReleasing := l.releasing[ip]
			delete(l.releasing, ip)
			p.unchanged = p.unchanged && had && !wasReleasing && slices.Equal(prev.Interfaces, ow.Interfaces)
			continue
		}
		if had {
			delete(l.owned, ip)
			l.releasing[ip] = &release{owner: prev, since: o.now}
			p.left = append(p.left, ip)
			p.unchanged = false
		}
	}
	releasing := l.handOvers(&p, owner, o.now, o.grace)
	if !p.unchanged {
		owned := make([]layer2.Announcement, 0, len(l.owned))
		for ip, ow := range l.owned {
			owned = append(owned, layer2.Announcement{IP: ip, Interfaces: ow.Interfaces})
		}
		slices.SortFunc(owned, byAddress)
		p.want = mergeByAddress(owned, releasing)
	}
	p.sort()
	return p
}

func byAddress(a, b layer2.Announcement) int { return a.IP.Compare(b.IP) }

// mergeByAddress merges two lists sorted by address (with no address in
// both) into one: at 10,000 addresses far cheaper than sorting them
// again.
func mergeByAddress(a, b []layer2.Announcement) []layer2.Announcement {
	if len(b) == 0 {
		return a
	}
	out := make([]layer2.Announcement, 0, len(a)+len(b))
	for len(a) > 0 && len(b) > 0 {
		if byAddress(a[0], b[0]) < 0 {
			out, a = append(out, a[0]), a[1:]
		} else {
			out, b = append(out, b[0]), b[1:]
		}
	}
	return append(append(out, a...), b...)
}

// earliest is the earlier of a and b, zero meaning none.
func earliest(a, b time.Time) time.Time {
	if a.IsZero() || b.Before(a) {
		return b
	}
	return a
}

// ownerOf finds ip's owner in owners, sorted by address.
func ownerOf(owners []announce.L2Owner, ip netip.Addr) (announce.L2Owner, bool) {
	i, found := slices.BinarySearchFunc(owners, ip, func(o announce.L2Owner, ip netip.Addr) int { return o.IP.Compare(ip) })
	if !found {
		return announce.L2Owner{}, false
	}
	return owners[i], true
}
