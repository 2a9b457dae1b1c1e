package controller

import (
	"fmt"
	"slices"
	"strings"

	"github.com/herald-lb/herald/api/v1beta1"
)

// Reasons of the SessionsConfigured condition.
const (
	reasonSessionsConfigured = "Configured"
	reasonSessionsRefused    = "RefusedOnNodes"
)

// stateNotConfigured is a SpeakerStatus session the speaker refused.
const stateNotConfigured = "NotConfigured"

// peerRefusals lists, sorted by node, "node: why" for each node whose
// speaker refused peer's session.
func peerRefusals(statuses []*v1beta1.SpeakerStatus, peer string) []string {
	var out []string
	for _, st := range statuses {
		for _, s := range st.Status.BGP {
			if s.Peer == peer && s.State == stateNotConfigured {
				out = append(out, st.Name+": "+s.Message)
			}
		}
	}
	slices.Sort(out)
	return out
}

// sessionsConfigured is a BGPPeer's SessionsConfigured condition.
func sessionsConfigured(refusals []string) condition {
	if len(refusals) == 0 {
		return condition{Type: v1beta1.ConditionSessionsConfigured, Status: true, Reason: reasonSessionsConfigured,
			Message: "no node refused the session"}
	}
	return condition{Type: v1beta1.ConditionSessionsConfigured, Reason: reasonSessionsRefused,
		Message: fmt.Sprintf("refused on %d node(s): %s", len(refusals), strings.Join(refusals, "; "))}
}

// peerConditions are a BGPPeer's conditions beside Valid.
func (c *Controller) peerConditions(peer string) []condition {
	return []condition{sessionsConfigured(peerRefusals(c.speakerStatuses(), peer))}
}

// speakerStatuses lists the cached SpeakerStatuses.
func (c *Controller) speakerStatuses() []*v1beta1.SpeakerStatus {
	if c.speakerIndex == nil {
		return nil
	}
	var out []*v1beta1.SpeakerStatus
	for _, o := range c.speakerIndex.List() {
		if s, ok := o.(*v1beta1.SpeakerStatus); ok {
			out = append(out, s)
		}
	}
	return out
}

// refusalsKey is every refused session of a SpeakerStatus, for noticing a
// change that the BGPPeers' conditions show.
func refusalsKey(s *v1beta1.SpeakerStatus) string {
	if s == nil {
		return ""
	}
	var b strings.Builder
	for _, x := range s.Status.BGP {
		if x.State == stateNotConfigured {
			b.WriteString(x.Peer + "\x00" + x.Message + "\x00")
		}
	}
	return b.String()
}
