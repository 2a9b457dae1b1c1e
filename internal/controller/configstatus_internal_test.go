package controller

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	heraldac "github.com/herald-lb/herald/api/generated/applyconfiguration/api/v1beta1"
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

func TestInForceRecord(t *testing.T) {
	adv := &v1beta1.L2Advertisement{ObjectMeta: metav1.ObjectMeta{Name: "l2", UID: "u1", Generation: 3},
		Spec: v1beta1.L2AdvertisementSpec{IPAddressPools: []string{"p"}}}
	now := func() *v1beta1.L2AdvertisementInForce { return config.L2AdvertisementInForce(adv) }
	old := &v1beta1.L2AdvertisementInForce{InForceVersion: v1beta1.InForceVersion{Generation: 2, UID: "u1"}}
	kept := []config.Problem{{Kind: "L2Advertisement", Name: "l2", Field: "spec.nodeSelectors[0]", KeptLastValid: true}}
	ignored := []config.Problem{{Kind: "L2Advertisement", Name: "l2", Field: "spec.nodeSelectors[0]", Ignored: true}}
	warned := []config.Problem{{Kind: "L2Advertisement", Name: "l2", Field: "spec.ipAddressPools[1]", Reason: config.ReasonPoolNotFound}}
	for _, c := range []struct {
		name     string
		problems []config.Problem
		cur      *v1beta1.L2AdvertisementInForce
		wantGen  int64 // 0: no record
		wantSame bool
	}{
		{"valid, no record yet", nil, nil, 3, false},
		{"valid, older record", nil, old, 3, false},
		{"valid, recorded already", nil, now(), 3, true},
		{"a dropped reference only: in force", warned, old, 3, false},
		{"kept at an older version", kept, old, 2, true},
		{"never valid", ignored, nil, 0, true},
		{"left out, older record kept", ignored, old, 2, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			rec, same := inForceRecord(c.problems, "L2Advertisement", "l2", c.cur, now)
			gen := int64(0)
			if rec != nil {
				gen = rec.Generation
			}
			if gen != c.wantGen || same != c.wantSame {
				t.Errorf("record at generation %d, same %t; want %d, %t", gen, same, c.wantGen, c.wantSame)
			}
		})
	}
}

func TestPoolRecord(t *testing.T) {
	pool := &v1beta1.IPAddressPool{ObjectMeta: metav1.ObjectMeta{Name: "p", UID: "u1", Generation: 2}}
	pool.Status.InForce = &v1beta1.IPAddressPoolInForce{InForceVersion: v1beta1.InForceVersion{Generation: 1, UID: "u1"}}
	built := config.PoolInForce(pool)
	if got := poolRecord(pool, built); got != built {
		t.Errorf("built from the current version: got %+v", got)
	}
	if got := poolRecord(pool, nil); got != pool.Status.InForce {
		t.Errorf("not in force: got %+v, want the record the pool has", got)
	}
	newer := pool.DeepCopy()
	newer.Generation = 3 // edited since the build
	if got := poolRecord(newer, built); got != newer.Status.InForce {
		t.Errorf("edited since the build: got %+v, want the record the pool has", got)
	}
	other := pool.DeepCopy()
	other.UID = "u2" // deleted and created again since the build
	if got := poolRecord(other, built); got != other.Status.InForce {
		t.Errorf("another object: got %+v, want the record the pool has", got)
	}
}

func TestApplyConfigOfRecord(t *testing.T) {
	rec := &v1beta1.IPAddressPoolInForce{InForceVersion: v1beta1.InForceVersion{Generation: 4, UID: "u1"},
		Labels: map[string]string{"color": "red"}, Spec: v1beta1.IPAddressPoolSpec{Addresses: []string{"198.51.100.0/28"}, AutoAssign: ptrTo(false)}}
	ac, err := applyConfig[heraldac.IPAddressPoolInForceApplyConfiguration](rec)
	if err != nil {
		t.Fatal(err)
	}
	if *ac.Generation != 4 || *ac.UID != "u1" || ac.Labels["color"] != "red" || len(ac.Spec.Addresses) != 1 || *ac.Spec.AutoAssign {
		t.Errorf("apply configuration = %+v", ac)
	}
	if ac, err := applyConfig[heraldac.IPAddressPoolInForceApplyConfiguration, v1beta1.IPAddressPoolInForce](nil); err != nil || ac != nil {
		t.Errorf("nil record: %+v, %v", ac, err)
	}
}

func ptrTo[T any](v T) *T { return &v }
