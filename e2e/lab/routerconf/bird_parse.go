package routerconf

import (
	"bufio"
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"
)

// ParseBIRDRoute parses `birdc show route PREFIX all`. peers maps BIRD
// protocol names to neighbor addresses (from ParseBIRDProtocols), since
// BIRD names the protocol a path came from, not the peer. "Network not
// found" gives an entry without paths.
func ParseBIRDRoute(text string, peers map[string]netip.Addr) (RIBEntry, error) {
	var e RIBEntry
	var cur *Path
	sc := bufio.NewScanner(strings.NewReader(text))
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "\t") {
			if cur == nil {
				return e, fmt.Errorf("BIRD route: attribute before any route: %q", line)
			}
			if err := birdAttr(cur, strings.TrimSpace(line)); err != nil {
				return e, err
			}
			continue
		}
		p, prefix, ok, err := birdRouteHeader(line, peers)
		if err != nil {
			return e, err
		}
		if !ok {
			continue
		}
		if prefix.IsValid() {
			e.Prefix = prefix
		}
		e.Paths = append(e.Paths, p)
		cur = &e.Paths[len(e.Paths)-1]
	}
	return e, sc.Err()
}

// birdRouteHeader parses
//
//	198.51.100.130/32    unicast [dyn4_1 2026-11-29 12:51:16] * (100) [AS64513i]
//	                     unicast [dyn4_2 2026-11-29 12:51:16] (100) [AS64513i]
func birdRouteHeader(line string, peers map[string]netip.Addr) (Path, netip.Prefix, bool, error) {
	open := strings.IndexByte(line, '[')
	closing := strings.IndexByte(line, ']')
	if open < 0 || closing < open {
		return Path{}, netip.Prefix{}, false, nil // banner, "Table master4:", "Network not found"
	}
	var prefix netip.Prefix
	head := strings.Fields(line[:open])
	if len(head) == 2 {
		p, err := netip.ParsePrefix(head[0])
		if err != nil {
			return Path{}, prefix, false, fmt.Errorf("BIRD route prefix in %q: %w", line, err)
		}
		prefix = p
	}
	proto := strings.Fields(line[open+1 : closing])
	p := Path{Best: strings.HasPrefix(strings.TrimSpace(line[closing+1:]), "*")}
	if len(proto) > 0 {
		p.Peer = peers[proto[0]]
	}
	return p, prefix, true, nil
}

func birdAttr(p *Path, line string) error {
	key, val, ok := strings.Cut(line, ":")
	if !ok {
		return nil // "via 198.51.100.11 on eth0"
	}
	val = strings.TrimSpace(val)
	var err error
	switch key {
	case "BGP.origin":
		p.Origin = val
	case "BGP.as_path":
		p.ASPath, err = birdASPath(val)
	case "BGP.next_hop":
		for _, f := range strings.Fields(val) {
			a, perr := parseAddr(f)
			if perr != nil {
				return fmt.Errorf("BIRD next hop: %w", perr)
			}
			p.NextHops = append(p.NextHops, a)
		}
	case "BGP.med":
		var v uint64
		v, err = strconv.ParseUint(val, 10, 32)
		p.MED = uint32(v)
	case "BGP.local_pref":
		var v uint64
		v, err = strconv.ParseUint(val, 10, 32)
		p.LocalPref, p.HasLocalPref = uint32(v), err == nil
	case "BGP.community":
		p.Communities = birdTuples(val)
	case "BGP.large_community":
		p.LargeCommunities = birdTuples(val)
	}
	if err != nil {
		return fmt.Errorf("BIRD %s %q: %w", key, val, err)
	}
	return nil
}

// birdASPath parses "64513 64514" (AS sets in braces are flattened).
func birdASPath(s string) ([]uint32, error) {
	var out []uint32
	for _, f := range strings.Fields(strings.NewReplacer("{", " ", "}", " ").Replace(s)) {
		v, err := strconv.ParseUint(f, 10, 32)
		if err != nil {
			return nil, err
		}
		out = append(out, uint32(v))
	}
	return out, nil
}

// birdTuples turns "(64512,100) (65000,1)" into ["64512:100" "65000:1"]
// and "(64512, 1, 1)" into ["64512:1:1"].
func birdTuples(s string) []string {
	var out []string
	for _, part := range strings.Split(s, "(") {
		part = strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(part), ")"))
		if part == "" {
			continue
		}
		fields := strings.Split(part, ",")
		for i := range fields {
			fields[i] = strings.TrimSpace(fields[i])
		}
		out = append(out, strings.Join(fields, ":"))
	}
	return out
}

// ParseBIRDProtocols parses `birdc show protocols all` into the BGP
// sessions (protocols with a neighbor address; the listen-range
// templates have none), sorted by address.
func ParseBIRDProtocols(text string) ([]Peer, error) {
	var out []Peer
	var cur *Peer
	family := ""
	sc := bufio.NewScanner(strings.NewReader(text))
	for sc.Scan() {
		line := sc.Text()
		trimmed := strings.TrimSpace(line)
		switch {
		case line == "" || strings.HasPrefix(line, "BIRD ") || strings.HasPrefix(line, "Name "):
		case !strings.HasPrefix(line, " "):
			f := strings.Fields(line)
			cur, family = nil, ""
			if len(f) >= 2 && f[1] == "BGP" {
				out = append(out, Peer{Name: f[0], Received: map[string]int{},
					Dynamic: strings.HasPrefix(f[0], BIRDDynamic4) || strings.HasPrefix(f[0], BIRDDynamic6)})
				cur = &out[len(out)-1]
			}
		case cur != nil:
			if err := birdProtocolLine(cur, trimmed, &family); err != nil {
				return nil, err
			}
		}
	}
	peers := slices.DeleteFunc(out, func(p Peer) bool { return !p.Address.IsValid() })
	slices.SortFunc(peers, func(a, b Peer) int { return a.Address.Compare(b.Address) })
	return peers, sc.Err()
}

func birdProtocolLine(p *Peer, line string, family *string) error {
	if f, ok := strings.CutPrefix(line, "Channel "); ok {
		*family = f
		return nil
	}
	key, val, ok := strings.Cut(line, ":")
	if !ok {
		return nil
	}
	val = strings.TrimSpace(val)
	switch key {
	case "BGP state":
		p.State = val
	case "Neighbor address":
		a, err := parseAddr(val)
		if err != nil {
			return fmt.Errorf("BIRD protocol %s: %w", p.Name, err)
		}
		p.Address = a
	case "Neighbor AS":
		v, err := strconv.ParseUint(val, 10, 32)
		if err != nil {
			return fmt.Errorf("BIRD protocol %s neighbor AS: %w", p.Name, err)
		}
		p.ASN = uint32(v)
	case "Routes":
		// "1 imported, 0 exported, 1 preferred"
		fields := strings.Fields(val)
		if len(fields) == 0 {
			break
		}
		if n, err := strconv.Atoi(fields[0]); err == nil && *family != "" {
			p.Received[*family] += n
		}
	}
	return nil
}

// ApplyBIRDBFD sets each peer's BFD state from `birdc show bfd sessions`:
//
//	IP address                Interface  State      Since         Interval  Timeout
//	198.51.100.12             eth0       Up         2026-...      0.300    0.900
func ApplyBIRDBFD(peers []Peer, text string) {
	states := map[netip.Addr]string{}
	for _, line := range strings.Split(text, "\n") {
		f := strings.Fields(line)
		if len(f) < 3 {
			continue
		}
		if a, err := netip.ParseAddr(f[0]); err == nil {
			states[a] = strings.ToLower(f[2])
		}
	}
	for i := range peers {
		if s, ok := states[peers[i].Address]; ok {
			peers[i].BFD = s
		}
	}
}
