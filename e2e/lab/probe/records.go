package probe

// Answer is one reply to a probe: an ARP reply or a solicited neighbor
// advertisement for the probed address.
type Answer struct {
	// MAC is the link-layer address the answer claims for the probed
	// address (ARP sender hardware address; NA target link-layer option,
	// or the Ethernet source when the option is missing).
	MAC string `json:"mac"`
	// EthSource is the Ethernet source address of the frame.
	EthSource string `json:"eth_src"`
	// Source is the IP source of the answer (for NDP: link-local or global).
	Source string `json:"src"`
	// At is when the kernel received the frame, in Unix nanoseconds.
	At int64 `json:"at"`
	// Router, Solicited and Override are the NA flags (IPv6 only).
	Router    bool `json:"router,omitempty"`
	Solicited bool `json:"solicited,omitempty"`
	Override  bool `json:"override,omitempty"`
	// To is the address the answer was sent to when the probes come from
	// several (Monitor's sources): it names the probe it answers, the
	// latest one sent from that address.
	To string `json:"to,omitempty"`
}

// Probe is one request sent by the monitor and the answers read after it
// was sent and before the next one was (an answer late by more than a
// probe interval is read after a later probe: its To names the source of
// the probe it answers).
type Probe struct {
	Seq  int   `json:"seq"`
	Sent int64 `json:"sent"`
	// From is the address the probe was sent from, when Monitor sends
	// from several.
	From    string   `json:"from,omitempty"`
	Answers []Answer `json:"answers"`
}

// Announcement is a gratuitous ARP (sender IP equals target IP, request or
// reply) or an unsolicited neighbor advertisement seen on the segment.
type Announcement struct {
	At int64 `json:"at"`
	// Kind is "garp-request", "garp-reply" or "unsolicited-na".
	Kind      string `json:"kind"`
	IP        string `json:"ip"`
	MAC       string `json:"mac"`
	EthSource string `json:"eth_src"`
	// Dst is the IPv6 destination of an NA (usually ff02::1).
	Dst      string `json:"dst,omitempty"`
	Override bool   `json:"override,omitempty"`
	Router   bool   `json:"router,omitempty"`
}

// Line is one line of the prober's JSON output. Monitor and watch print
// Ready once their socket is open, then one Probe or Announcement a line.
type Line struct {
	Ready        bool          `json:"ready,omitempty"`
	Probe        *Probe        `json:"probe,omitempty"`
	Announcement *Announcement `json:"announcement,omitempty"`
}
