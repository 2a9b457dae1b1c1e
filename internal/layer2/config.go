package layer2

import (
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"path"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/herald-lb/herald/internal/l2owner"
)

// Defaults for GratuitousConfig: l2owner's, which say why.
const (
	DefaultGratuitousCount    = l2owner.GratuitousCount
	DefaultGratuitousInterval = l2owner.GratuitousInterval
)

// Config configures an Announcer.
type Config struct {
	// Logger receives one Info line per decision and packets at Debug.
	// Nil discards logs.
	Logger *slog.Logger
	// Registerer receives the herald_l2_* counters. Nil registers nothing.
	Registerer prometheus.Registerer
	// ExcludeInterfaces lists interface name patterns (path.Match syntax,
	// e.g. "veth*") that are never chosen by default. Nil means
	// DefaultExcludeInterfaces(); an empty, non-nil slice excludes nothing
	// but the rules that always apply (lo, bridge and bond members, down
	// links). An explicit override (Announcement.Interfaces) is not subject
	// to these patterns.
	ExcludeInterfaces []string
	// Gratuitous sets how a newly announced VIP is advertised.
	Gratuitous GratuitousConfig
	// OnYield, if set, is called when a VIP this node is releasing
	// (Announcement.Releasing) is taken over on an interface: another
	// host, whose MAC is by, announced it there, and this node stopped
	// answering for it on that interface. It is called once per VIP and
	// interface, in a goroutine of its own and with no lock of the
	// Announcer held, so it may call SetAnnouncements (typically to drop
	// the VIP). It reports a past event: the VIP may have been listed again
	// since. Interfaces(vip) lists the interfaces not yet taken over.
	OnYield func(vip netip.Addr, iface string, by net.HardwareAddr)
	// Refresh is how often every announced VIP is announced again with one
	// gratuitous ARP / unsolicited NA, so that two owners of one VIP hear
	// each other (see the fence) and stale client caches heal. 0 means
	// DefaultRefresh; negative disables it (and with it the fence).
	Refresh time.Duration
	// FenceSettle is how long a VIP must have been owned before another
	// host's announcement of it counts as a conflict rather than a
	// hand-over in progress. 0 means DefaultFenceSettle.
	FenceSettle time.Duration
	// FenceVerify is how often a node that lost the fence for a VIP asks
	// whether the winner still answers for it (an ARP probe from 0.0.0.0 /
	// a neighbour solicitation); when nobody answers within half of it,
	// the winner has gone (it handed the VIP over or stopped) and this
	// node answers again at once, instead of staying silent until the
	// fence expires (2 × Refresh). 0 means DefaultFenceVerify.
	FenceVerify time.Duration
	// OnConflict, if set, is called (in a goroutine of its own) when
	// another host, whose MAC is by, announced a VIP this node owns, with
	// the fence's decision: won (this node keeps answering) or not (it
	// stopped).
	OnConflict func(vip netip.Addr, iface string, by net.HardwareAddr, won bool)
	// OnForeignClaim, if set, is called (in a goroutine of its own, at
	// most once per VIP and interface every 2 × Refresh) when a host that
	// is not another speaker's node (see SetSpeakerMACs) announced a VIP
	// this node owns: this node kept answering and announced it again.
	OnForeignClaim func(vip netip.Addr, iface string, by net.HardwareAddr)
	// FailAfter is how long a socket may keep failing before Failure
	// reports the announcer failed. 0 means DefaultFailAfter.
	FailAfter time.Duration
	// PauseAfter is the longest this process may go unscheduled before
	// another node may have declared it dead and taken its VIPs over:
	// the member list's quickest detection (members.Timing.MinDetection).
	// After a longer gap (a VM pause, every process of the node stopped)
	// the announcer answers none of its VIPs until it knows who answers
	// them now (see internal/l2owner). 0 or negative: no such check (no
	// member list).
	PauseAfter time.Duration
}

// Defaults of the periodic refresh and the fence: l2owner's, which say
// why.
const (
	DefaultRefresh     = l2owner.Refresh
	DefaultFenceSettle = l2owner.FenceSettle
	DefaultFenceVerify = l2owner.FenceVerify
)

// GratuitousConfig sets the gratuitous ARP / unsolicited NA burst sent when a
// VIP starts being announced on an interface.
type GratuitousConfig struct {
	// Count is the number of announcements in the burst, the first sent at
	// once. 0 means DefaultGratuitousCount.
	Count int
	// Interval is the time between two announcements of the burst. 0 means
	// DefaultGratuitousInterval.
	Interval time.Duration
}

// DefaultExcludeInterfaces returns the name patterns of interfaces that
// belong to the container runtime, the CNI or kube-proxy rather than to the
// node's network. Interfaces are excluded by name, never by link type: in a
// lab or in kind, the node's own uplink is a veth.
func DefaultExcludeInterfaces() []string {
	return []string{
		"antrea-*",
		"cali*",
		"cilium*",
		"cni*",
		"datapath",
		"docker*",
		"flannel*",
		"genev_sys_*",
		"kube-bridge",
		"kube-dummy-if",
		"kube-ipvs0",
		"lo",
		"lxc*",
		"nodelocaldns",
		"ovs-system",
		"tunl*",
		"veth*",
		"vxlan*",
		"weave",
	}
}

// withDefaults validates cfg and fills in its defaults.
func (cfg Config) withDefaults() (Config, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.ExcludeInterfaces == nil {
		cfg.ExcludeInterfaces = DefaultExcludeInterfaces()
	}
	for _, p := range cfg.ExcludeInterfaces {
		if _, err := path.Match(p, ""); err != nil {
			return cfg, fmt.Errorf("exclude interface pattern %q: %w", p, err)
		}
	}
	if cfg.FailAfter <= 0 {
		cfg.FailAfter = DefaultFailAfter
	}
	if cfg.Refresh == 0 {
		cfg.Refresh = DefaultRefresh
	}
	if cfg.FenceSettle <= 0 {
		cfg.FenceSettle = DefaultFenceSettle
	}
	if cfg.FenceVerify <= 0 {
		cfg.FenceVerify = DefaultFenceVerify
	}
	g := &cfg.Gratuitous
	switch {
	case g.Count < 0:
		return cfg, fmt.Errorf("gratuitous count %d: must not be negative", g.Count)
	case g.Count == 0:
		g.Count = DefaultGratuitousCount
	}
	switch {
	case g.Interval < 0:
		return cfg, fmt.Errorf("gratuitous interval %s: must not be negative", g.Interval)
	case g.Interval == 0:
		g.Interval = DefaultGratuitousInterval
	}
	return cfg, nil
}
