package bgp

import (
	"log/slog"
	"net/netip"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Family is an address family a session carries.
type Family uint8

// The address families a session can carry. Both may ride on one session
// (MP-BGP), whatever the family of the session's transport address.
const (
	IPv4Unicast Family = iota + 1
	IPv6Unicast
)

func (f Family) String() string {
	switch f {
	case IPv4Unicast:
		return "ipv4-unicast"
	case IPv6Unicast:
		return "ipv6-unicast"
	}
	return "unknown-family"
}

// BFD asks for GoBGP's native single-hop BFD on a session.
// Zero fields take the defaults: 300 ms and a multiplier of 3.
type BFD struct {
	ReceiveInterval  time.Duration
	TransmitInterval time.Duration
	DetectMultiplier uint32
}

// Session is one BGP session this node should hold.
type Session struct {
	Name        string // the BGPPeer's name: key for status, events and metrics
	PeerAddress netip.Addr
	// Interface makes the session unnumbered: PeerAddress is left zero
	// and the speaker fills it with the one IPv6 link-local neighbour on
	// the interface (zoned), dialed from the interface's own link-local
	// address. IPv4 paths then go with that link-local next hop (RFC
	// 8950), IPv6 paths too.
	Interface     string
	PeerPort      uint16 // 179 when 0
	MyASN         uint32
	PeerASN       uint32     // iBGP when equal to MyASN; 0 with DynamicASN
	DynamicASN    ASNClass   // AnyInternal/AnyExternal: the router's AS within a class, PeerASN 0
	Passive       bool       // wait for the router to connect; the server then listens
	SourceAddress netip.Addr // zero: the kernel picks the source on the route to the peer at each connect
	RouterID      netip.Addr // IPv4; zero: the speaker's router ID (the node's IPv4 address)

	HoldTime      time.Duration // 90 s when 0; else 0 < x < 3 s is refused
	KeepaliveTime time.Duration // HoldTime/3 when 0
	ConnectTime   time.Duration // 5 s when 0; GoBGP's floor is 2 s

	EBGPMultiHop    bool
	Password        string // TCP MD5
	GracefulRestart bool
	BFD             *BFD     // nil: no BFD
	Families        []Family // empty: the family of PeerAddress

	// VRF is the Linux VRF device the session is bound to
	// (SO_BINDTODEVICE); empty: the default VRF. NextHopV4 and NextHopV6
	// are then the node's addresses in it, the next hops of the paths
	// sent on the session (a family without one is not advertised).
	VRF                  string
	NextHopV4, NextHopV6 netip.Addr
	// Unavailable refuses the session with this reason: the node cannot
	// hold it (its VRF does not exist here).
	Unavailable string
	// FamiliesChosen: Families were chosen for this session (a BGPPeer's
	// addressFamilies), so a path of another family is left out of it
	// without a warning.
	FamiliesChosen bool
}

// ASNClass is the class of router AS numbers a session accepts when it has
// no fixed PeerASN.
type ASNClass uint8

// The classes of ASNClass.
const (
	FixedASN    ASNClass = iota // the router's AS is PeerASN
	AnyInternal                 // the router's AS must be MyASN
	AnyExternal                 // any AS but MyASN
)

func (c ASNClass) String() string {
	switch c {
	case AnyInternal:
		return "internal"
	case AnyExternal:
		return "external"
	}
	return "fixed"
}

// Path is one prefix to advertise, to some or all sessions, with attributes.
// Several Paths may carry the same prefix with different Peers and attributes.
type Path struct {
	Prefix           netip.Prefix // /32, /128 or an aggregate; masked before use
	Peers            []string     // session names; empty: every session
	Communities      []uint32     // standard a:b = a<<16 | b
	LargeCommunities [][3]uint32
	LocalPref        *uint32 // sent to iBGP sessions only; a warning for eBGP ones
	// Weight is the ready local endpoints the path stands for: above 0
	// it carries the link-bandwidth extended community, Weight Mbit/s
	// (see linkBandwidth); a change between two weights is sent after
	// weightHold.
	Weight uint32
}

// Desired is everything this node should announce. Apply takes the whole
// desired state every time and applies only the difference.
type Desired struct {
	NodeIPv4 netip.Addr // router ID default; next hop of IPv4 paths on IPv6 sessions
	NodeIPv6 netip.Addr // next hop of every IPv6 path (global unicast)
	Sessions []Session
	Paths    []Path
	// GracefulShutdown sends every path with the GRACEFUL_SHUTDOWN
	// community (RFC 8326) and, on iBGP sessions, GracefulShutdownLocalPref: the node
	// is about to withdraw them (it drains), and routers move traffic to
	// other paths first.
	GracefulShutdown bool
}

// SessionEvent reports that a session reached or left Established.
type SessionEvent struct {
	Name   string
	Peer   netip.Addr
	Up     bool
	Reason string // why it went down; empty when Up
	Time   time.Time
}

// SessionState is what Sessions reports for one desired session.
type SessionState struct {
	Name            string
	Peer            netip.Addr // zoned link-local for an unnumbered session; zero while none is learnt
	Interface       string     // the unnumbered session's interface; empty otherwise
	State           string     // Idle, Connect, Active, OpenSent, OpenConfirm, Established; NotConfigured when refused
	BFD             string     // Up, Down, Init, AdminDown; empty without BFD
	LocalAddress    netip.Addr
	PathsAdvertised int
	Since           time.Time // last change of State as seen by the speaker
	LastDownReason  string    // why it last left Established
	LastError       string    // last connect error (e.g. "i/o timeout"), with a hint when a password is set
	Error           string    // why the session is not configured; empty when it is
	PeerASN         uint32    // the router's AS the session last came up with; 0 before
	Refused         string    // why the router was last refused (its AS); empty once up
	Warnings        []string  // configured, but not everything asked for is sent
}

// Config wires a Speaker to the rest of the process.
type Config struct {
	Logger     *slog.Logger          // nil: discard
	Registerer prometheus.Registerer // nil: no metrics
	// OnSessionChange is called on every Established/left-Established
	// transition, in order, from one goroutine. It must not block for long.
	OnSessionChange func(SessionEvent)
	// ListenPort and ListenAddresses are where the server listens for
	// routers that connect, while some session is Passive (and only
	// then): 179 when 0, and the node's addresses (Desired.NodeIPv4 and
	// NodeIPv6) when empty.
	ListenPort      uint16
	ListenAddresses []netip.Addr
	// FindNeighbor returns the IPv6 link-local neighbour of an unnumbered
	// session's interface (nil: the kernel's neighbour table, soliciting
	// the router when it holds none). NeighborInterval is how often the
	// speaker looks again while some session is unnumbered (2 s when 0):
	// a neighbour learnt, lost or changed re-applies the sessions.
	FindNeighbor     func(iface string) (netip.Addr, error)
	NeighborInterval time.Duration
	// GracefulShutdownWait is how long Shutdown keeps the paths, sent
	// with the GRACEFUL_SHUTDOWN marking (Desired.GracefulShutdown),
	// before it withdraws them, so that routers move new flows to other
	// nodes first. 0: withdraw at once.
	GracefulShutdownWait time.Duration
}
