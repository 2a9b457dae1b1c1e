package config

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/herald-lb/herald/api/v1beta1"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func meta(name string, ageRank int) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: name, CreationTimestamp: metav1.NewTime(t0.Add(time.Duration(ageRank) * time.Minute))}
}

func poolObj(name string, created int, addrs ...string) *v1beta1.IPAddressPool {
	return &v1beta1.IPAddressPool{ObjectMeta: meta(name, created), Spec: v1beta1.IPAddressPoolSpec{Addresses: addrs}}
}

func l2Obj(name string, pools ...string) *v1beta1.L2Advertisement {
	return &v1beta1.L2Advertisement{ObjectMeta: meta(name, 0), Spec: v1beta1.L2AdvertisementSpec{IPAddressPools: pools}}
}

func bgpAdvObj(name string, mutate func(*v1beta1.BGPAdvertisementSpec)) *v1beta1.BGPAdvertisement {
	a := &v1beta1.BGPAdvertisement{ObjectMeta: meta(name, 0)}
	if mutate != nil {
		mutate(&a.Spec)
	}
	return a
}

func peerObj(name string, created int, mutate func(*v1beta1.BGPPeerSpec)) *v1beta1.BGPPeer {
	p := &v1beta1.BGPPeer{ObjectMeta: meta(name, created), Spec: v1beta1.BGPPeerSpec{MyASN: 64513, PeerASN: 64512, PeerAddress: "198.51.100.1", PeerPort: 179}}
	if mutate != nil {
		mutate(&p.Spec)
	}
	return p
}

func communityObj(name string, created int, kv ...string) *v1beta1.Community {
	c := &v1beta1.Community{ObjectMeta: meta(name, created)}
	for i := 0; i+1 < len(kv); i += 2 {
		c.Spec.Communities = append(c.Spec.Communities, v1beta1.CommunityAlias{Name: kv[i], Value: kv[i+1]})
	}
	return c
}

func secretObj(name, password string) *corev1.Secret {
	return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "herald-system"}, Data: map[string][]byte{"password": []byte(password)}}
}

// wantProblem fails unless exactly one problem of the object matches reason
// and its message contains every fragment.
func wantProblem(t *testing.T, ps []Problem, kind, name, field, reason string, fragments ...string) Problem {
	t.Helper()
	for _, p := range ProblemsOf(ps, kind, name) {
		if p.Reason != reason || (field != "" && p.Field != field) {
			continue
		}
		for _, f := range fragments {
			if !strings.Contains(p.Message, f) {
				t.Errorf("%s %s %s: message %q lacks %q", kind, name, reason, p.Message, f)
			}
		}
		return p
	}
	t.Fatalf("no %s problem on %s %s field %q; problems: %v", reason, kind, name, field, ps)
	return Problem{}
}

func wantNoProblems(t *testing.T, ps []Problem) {
	t.Helper()
	if len(ps) > 0 {
		t.Fatalf("unexpected problems: %v", ps)
	}
}

func ptr[T any](v T) *T { return &v }
