package controller

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/herald-lb/herald/api/v1beta1"
	"github.com/herald-lb/herald/internal/config"
)

func TestFindObject(t *testing.T) {
	pool := &v1beta1.IPAddressPool{ObjectMeta: metav1.ObjectMeta{Name: "main"}}
	peer := &v1beta1.BGPPeer{ObjectMeta: metav1.ObjectMeta{Name: "router"}}
	in := config.Input{Pools: []*v1beta1.IPAddressPool{pool}, Peers: []*v1beta1.BGPPeer{peer}}
	if got := findObject(in, "IPAddressPool", "main"); got != pool {
		t.Errorf("pool main: %v", got)
	}
	if got := findObject(in, "BGPPeer", "router"); got != peer {
		t.Errorf("peer router: %v", got)
	}
	for _, c := range [][2]string{{"IPAddressPool", "other"}, {"BGPPeer", "main"}, {"Community", "main"}, {"Unknown", "main"}} {
		if got := findObject(in, c[0], c[1]); got != nil {
			t.Errorf("%s %s: %v, want nil", c[0], c[1], got)
		}
	}
}
