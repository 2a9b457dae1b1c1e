package speaker

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/herald-lb/herald/api/v1beta1"
)

// ReasonMemberlistKeyMismatch: this speaker's member-list key and other
// live speakers' cannot read each other's packets (Warning Event on the
// Node).
const ReasonMemberlistKeyMismatch = "MemberlistKeyMismatch"

// keyFingerprinter is a member list that names its keys
// (members.Members.KeyFingerprints).
type keyFingerprinter interface{ KeyFingerprints() []string }

// keyMismatch returns, sorted, the nodes among peers (node -> key
// fingerprints, sending key first) whose speakers and this one (own)
// cannot read each other's member-list packets: a split member list.
func keyMismatch(own []string, peers map[string][]string) []string {
	var out []string
	for _, n := range slices.Sorted(maps.Keys(peers)) {
		if !v1beta1.MemberlistKeysCompatible(own, peers[n]) {
			out = append(out, n)
		}
	}
	return out
}

// checkKeys compares, every interval until ctx ends, this speaker's
// member-list keys with those of the speakers whose Leases it reads: the
// ones its member list does not hear, which is every other node when this
// speaker's key is not theirs. A mismatch is a split member list (a key
// replaced in one step, or a Secret re-created with a new key while
// speakers ran): it is counted in herald_speaker_member_key_mismatch,
// logged as an error and reported in a Warning Event on the Node, once
// per change.
func (s *Speaker) checkKeys(ctx context.Context, interval time.Duration) {
	kf, ok := s.liveness.memberList().(keyFingerprinter)
	if !ok {
		return
	}
	own := kf.KeyFingerprints()
	var last []string
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		bad := keyMismatch(own, s.liveness.leases.peerKeys())
		s.metrics.keyMismatch.Set(float64(len(bad)))
		if slices.Equal(bad, last) {
			continue
		}
		last = bad
		if len(bad) == 0 {
			s.log.Info("member-list keys agree with the other speakers' again")
			continue
		}
		msg := fmt.Sprintf("member-list key differs from the speakers' on %s (this speaker sends with key %s and accepts %s): they and this one cannot hear each other, the member list is split; restart the speakers whose key is not the Secret's, and rotate keys only as docs/security.md says",
			strings.Join(bad, ", "), own[0], strings.Join(own, ","))
		s.log.Error(msg, "nodes", bad, "keys", own)
		ref := &corev1.ObjectReference{Kind: "Node", Name: s.opts.NodeName, UID: types.UID(s.opts.NodeName)}
		s.rec.Event(ref, corev1.EventTypeWarning, ReasonMemberlistKeyMismatch, msg)
	}
}
