package speaker

import (
	"net/netip"
	"slices"
	"time"

	"github.com/herald-lb/herald/internal/announce"
	"github.com/herald-lb/herald/internal/l2owner"
	"github.com/herald-lb/herald/internal/layer2"
)

// l2State remembers what this node announces in L2 mode, and the
// addresses it is releasing to another node.
type l2State struct {
	owned     map[netip.Addr]announce.L2Owner
	releasing map[netip.Addr]*release
	// incremental: the last plan's options were ungated, so that the next
	// plan may look at only the addresses whose decisions changed.
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

// dropAll stops announcing everything at once, releases included.
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
	// unchanged: want is what the last plan wanted, and is not built
	// again (never after a plan of every address).
	unchanged bool
	left      []netip.Addr // addresses no longer owned
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

// l2Owners are the decisions a plan reads (announce.L2Memo's).
type l2Owners interface {
	// Owner is ip's owner: false when no node owns it.
	Owner(ip netip.Addr) (announce.L2Owner, bool)
	// Result lists every address's decision, owners by address.
	Result() announce.L2Result
}

// plan decides, from the owners everyone computes, what this node
// announces: the addresses it owns (none before the member list has
// settled; with keep, also those it owned before), plus the ones it is
// still handing over. ch is what changed since the last plan: every
// address (ch.All), or only the decisions of ch.IPs (as
// announce.L2Memo.Update applied them). The caller says All unless the
// last plan and this one are ungated (l.incremental, o.ungated()). Each
// address looked at goes through step; the ones being handed over are
// looked at every time. want is built again only when what this node
// announces may have changed (unchanged otherwise).
func (l *l2State) plan(me string, ch announce.Changes, d l2Owners, o planOptions) l2Plan {
	if o.held {
		return l.dropAll()
	}
	l.incremental = o.ungated()
	p := l2Plan{unchanged: !ch.All}
	var owned []layer2.Announcement // in address order
	if ch.All {
		owned = l.stepEvery(me, &p, d.Result().Owners, o)
	} else {
		for _, ip := range ch.IPs {
			ow, ok := d.Owner(ip)
			l.step(me, &p, ip, ow, ok, o)
		}
	}
	releasing := l.releases(&p, d.Owner, o.now, o.grace)
	if !p.unchanged {
		if !ch.All {
			owned = l.announcements()
		}
		p.want = mergeByAddress(owned, releasing)
	}
	p.sort()
	return p
}

// stepEvery steps every address: those with an owner (owners, by
// address), then those this node announced that have none any more. It
// returns what this node announces, in address order.
func (l *l2State) stepEvery(me string, p *l2Plan, owners []announce.L2Owner, o planOptions) []layer2.Announcement {
	var owned []layer2.Announcement
	for _, ow := range owners {
		if mine, ok := l.step(me, p, ow.IP, ow, true, o); ok {
			owned = append(owned, layer2.Announcement{IP: mine.IP, Interfaces: mine.Interfaces})
		}
	}
	if len(l.owned) == len(owned) {
		return owned // every address owned here has an owner
	}
	for ip := range l.owned {
		if _, ok := ownerOf(owners, ip); !ok {
			l.step(me, p, ip, announce.L2Owner{}, false, o)
		}
	}
	return owned
}

// step is the plan's one decision: whether this node announces ip, whose
// owner is ow (ok: it has one). It claims ip, keeps it, or hands it
// over, and returns what this node announces for it (ok: it does).
func (l *l2State) step(me string, p *l2Plan, ip netip.Addr, ow announce.L2Owner, ok bool, o planOptions) (announce.L2Owner, bool) {
	prev, had := l.owned[ip]
	mine := ok && o.settled && (ow.Node == me || o.keep && had)
	if mine && ow.Node != me { // kept while cut off
		ow = announce.L2Owner{IP: ip, Node: me, Interfaces: prev.Interfaces, Services: ow.Services}
	}
	if mine && !had && l.releasing[ip] == nil && o.now.Before(o.claimFrom) {
		p.recheck = earliest(p.recheck, o.claimFrom)
		mine = false
	}
	if !mine {
		if had {
			delete(l.owned, ip)
			l.releasing[ip] = &release{owner: prev, since: o.now}
			p.left = append(p.left, ip)
			p.unchanged = false
		}
		return announce.L2Owner{}, false
	}
	l.owned[ip] = ow
	if !had {
		p.claimed = append(p.claimed, ow)
	}
	_, wasReleasing := l.releasing[ip]
	delete(l.releasing, ip)
	p.unchanged = p.unchanged && had && !wasReleasing && slices.Equal(prev.Interfaces, ow.Interfaces)
	return ow, true
}

// announcements is what this node announces as its own, in address
// order.
func (l *l2State) announcements() []layer2.Announcement {
	owned := make([]layer2.Announcement, 0, len(l.owned))
	for ip, ow := range l.owned {
		owned = append(owned, layer2.Announcement{IP: ip, Interfaces: ow.Interfaces})
	}
	slices.SortFunc(owned, byAddress)
	return owned
}

// releases ends the releases that l2owner.ReleaseEnds ends (p.dropped),
// and returns the others' announcements, sorted, for p.want.
func (l *l2State) releases(p *l2Plan, owner func(netip.Addr) (announce.L2Owner, bool), now time.Time, grace time.Duration) []layer2.Announcement {
	var releasing []layer2.Announcement
	for ip, r := range l.releasing {
		next, ok := owner(ip)
		done, latest := l2owner.ReleaseEnds(r.since, now, grace, ok && next.Node != "", r.takenOver)
		if done {
			delete(l.releasing, ip)
			p.dropped = append(p.dropped, ip)
			p.unchanged = false
			continue
		}
		r.newOwner = next.Node
		releasing = append(releasing, layer2.Announcement{IP: ip, Interfaces: r.owner.Interfaces, Releasing: true})
		p.recheck = earliest(p.recheck, latest)
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
// follows from the decisions alone, so that the next plan may look at
// only the addresses whose decisions changed.
func (o planOptions) ungated() bool {
	return o.settled && !o.held && !o.keep && !o.now.Before(o.claimFrom)
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
