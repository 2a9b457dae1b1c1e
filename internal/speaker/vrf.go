package speaker

import (
	"fmt"

	"github.com/herald-lb/herald/internal/bgp"
	"github.com/herald-lb/herald/internal/vrf"
)

// placeVRFs gives each session bound to a VRF the node's addresses in it,
// or refuses it with why the node cannot hold it (readErr: the node's
// links could not be read). Sessions in the default VRF are left alone.
func placeVRFs(sessions []bgp.Session, tab vrf.Table, readErr error, node string) {
	for i := range sessions {
		s := &sessions[i]
		if s.VRF == "" {
			continue
		}
		if readErr != nil {
			s.Unavailable = fmt.Sprintf("VRF %s on node %s: %v", s.VRF, node, readErr)
			continue
		}
		nh, err := tab.NextHops(s.VRF, s.PeerAddress)
		if err != nil {
			s.Unavailable = fmt.Sprintf("%v on node %s", err, node)
			continue
		}
		s.NextHopV4, s.NextHopV6 = nh.V4, nh.V6
	}
}

// vrfTable is the node's VRFs as last read, and a key that changes with
// them, so that a change applies the sessions again.
func (s *Speaker) vrfTable() (vrf.Table, string, error) {
	if s.opts.VRFs == nil {
		return vrf.Table{}, "", errNoVRFs
	}
	tab, err := s.opts.VRFs()
	key := tab.Key()
	if err != nil {
		key += "|" + err.Error()
	}
	return tab, key, err
}

// errNoVRFs: a speaker built without a VRF source refuses VRF sessions.
var errNoVRFs = fmt.Errorf("this speaker does not read the node's VRFs")
