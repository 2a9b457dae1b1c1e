package members

import (
	"bytes"
	"errors"
	"fmt"
	"log"
	"log/slog"
	"time"

	"github.com/hashicorp/memberlist"
	"github.com/prometheus/client_golang/prometheus"
)

// memberLabel is authenticated with every packet (GCM additional data), so
// a memberlist cluster of another program on the same port is ignored.
const memberLabel = "herald"

// Config is what New needs. NodeName, SecretKey and BindPort come from the
// speaker's flags, Node object and Secret.
type Config struct {
	// NodeName is the Kubernetes node name; unique in the cluster.
	NodeName string
	// BindAddr is the address to listen on (UDP and TCP); empty means all.
	BindAddr string
	// BindPort is the port on every node; Join uses it for addresses
	// given without a port. 0 picks a free port (tests only).
	BindPort int
	// AdvertiseAddr is the address other speakers reach this one at,
	// normally the node's InternalIP; empty lets memberlist pick one.
	AdvertiseAddr string
	// SecretKey encrypts and authenticates all member traffic: 16, 24 or
	// 32 bytes, read with ReadKeyFile from the Secret-mounted key file.
	// Required.
	SecretKey []byte
	// OtherKeys are accepted from other members but never used to send
	// (Keys.Others: the key being rotated in or out).
	OtherKeys [][]byte
	// Logger receives this package's and memberlist's logs; nil discards.
	Logger *slog.Logger
	// Registerer receives the herald_speaker_member* collectors; nil
	// leaves them unregistered.
	Registerer prometheus.Registerer
	// Timing tunes failure detection; the zero value means DefaultTiming.
	Timing Timing
	// OnChange is called after any node's state changes and once when the
	// member list settles; see Members.
	OnChange func()
	// WelcomeAfterApplied: a starting member that greets this one is
	// welcomed only once Applied reports a decision that saw it up (the
	// speaker's reconcile). Otherwise it is welcomed as soon as it is a
	// member here. See welcome.go.
	WelcomeAfterApplied bool
	// WelcomeTimeout bounds how long this node, starting, waits for the
	// others' welcomes and its first joins once it has reached a member
	// (and how long it waits to reach one) before it settles; zero means
	// DefaultWelcomeTimeout. Its user says how long the others may wait
	// for it (the speaker: internal/l2owner's WelcomeTimeout).
	WelcomeTimeout time.Duration
	// NodeData is published to the other members with this node's
	// metadata, opaque to this package, and read there with
	// Members.NodeData (the speaker's link-layer addresses). At most
	// MaxNodeData bytes; it is fixed for the life of the member.
	NodeData []byte
}

// MaxNodeData is the most Config.NodeData may hold: memberlist's limit
// of a node's metadata less this package's own header.
const MaxNodeData = memberlist.MetaMaxSize - metaByteSize

// DefaultWelcomeTimeout is Config.WelcomeTimeout's default: a welcome
// takes a round trip and one Applied of the user (tens of milliseconds,
// a few hundred on a busy node), and a second covers that.
const DefaultWelcomeTimeout = time.Second

func (c Config) withDefaults() Config {
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Timing == (Timing{}) {
		c.Timing = DefaultTiming()
	}
	if c.BindAddr == "" {
		c.BindAddr = "0.0.0.0"
	}
	if c.WelcomeTimeout <= 0 {
		c.WelcomeTimeout = DefaultWelcomeTimeout
	}
	return c
}

func (c Config) validate() error {
	var errs []error
	if c.NodeName == "" {
		errs = append(errs, errors.New("NodeName is empty: it must be the Kubernetes node name"))
	}
	if c.BindPort < 0 || c.BindPort > 65535 {
		errs = append(errs, fmt.Errorf("BindPort %d is not a port number", c.BindPort))
	}
	if err := checkKey(c.SecretKey); err != nil {
		errs = append(errs, err)
	}
	for i, k := range c.OtherKeys {
		if err := checkKey(k); err != nil {
			errs = append(errs, fmt.Errorf("OtherKeys[%d]: %w", i, err))
		}
	}
	if len(c.NodeData) > MaxNodeData {
		errs = append(errs, fmt.Errorf("NodeData holds %d bytes, more than %d", len(c.NodeData), MaxNodeData))
	}
	if err := c.Timing.Validate(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// memberlistConfig starts from memberlist's LAN defaults (indirect probes,
// TCP fallback, Lifeguard awareness, encryption enforced both ways) and
// applies Herald's identity, key, hooks and timing.
func (c Config) memberlistConfig(h *hooks, logger *log.Logger) *memberlist.Config {
	mc := memberlist.DefaultLANConfig()
	mc.Name = c.NodeName
	mc.BindAddr = c.BindAddr
	mc.BindPort = c.BindPort
	mc.AdvertiseAddr = c.AdvertiseAddr
	mc.AdvertisePort = c.BindPort
	// Validated keys cannot make NewKeyring fail.
	mc.Keyring, _ = memberlist.NewKeyring(cloneKeys(c.OtherKeys), bytes.Clone(c.SecretKey))
	mc.GossipVerifyIncoming = true
	mc.GossipVerifyOutgoing = true
	mc.Label = memberLabel
	// No LZW compression of gossip: packets stay under the LAN MTU anyway,
	// and compressing and decompressing each one (a fresh LZW table per
	// packet) was half of memberlist's CPU in the 100-member simulation,
	// CPU that a starved node needs to answer probes in time. Compressed
	// packets from older speakers are still read (memberlist always
	// decodes them), so a rolling update mixes both.
	mc.EnableCompression = false
	mc.Delegate = h
	mc.Events = h
	mc.Ping = h
	mc.Logger = logger
	c.Timing.apply(mc)
	return mc
}

func cloneKeys(keys [][]byte) [][]byte {
	out := make([][]byte, len(keys))
	for i, k := range keys {
		out[i] = bytes.Clone(k)
	}
	return out
}
