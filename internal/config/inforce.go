package config

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/herald-lb/herald/api/v1beta1"
)

// What is in force is recorded in each object's status (status.inForce,
// written by the controller) so that every process derives the same
// configuration from the API alone: a process that starts while an edit is
// refused reads there the version the running ones keep, instead of
// building from the refused edit. Community and BFDProfile carry no record:
// LastGood keeps no version of them (an invalid Community drops only the
// reference, and a BFDProfile is never refused), so every process already
// builds them alike.

// InForceNow reports whether the object (present in the input) is in force
// in its current version: Build did not leave it out and LastGood kept no
// older version of it. The controller then records that version.
func InForceNow(problems []Problem, kind, name string) bool {
	for _, p := range ProblemsOf(problems, kind, name) {
		if p.Ignored || p.KeptLastValid {
			return false
		}
	}
	return true
}

func version(m metav1.ObjectMeta) v1beta1.InForceVersion {
	return v1beta1.InForceVersion{Generation: m.Generation, UID: m.UID}
}

// PoolInForce returns the record of the pool's current version.
func PoolInForce(p *v1beta1.IPAddressPool) *v1beta1.IPAddressPoolInForce {
	c := p.DeepCopy()
	return &v1beta1.IPAddressPoolInForce{InForceVersion: version(c.ObjectMeta), Labels: c.Labels, Spec: c.Spec}
}

// L2AdvertisementInForce returns the record of the advertisement's current
// version.
func L2AdvertisementInForce(a *v1beta1.L2Advertisement) *v1beta1.L2AdvertisementInForce {
	c := a.DeepCopy()
	return &v1beta1.L2AdvertisementInForce{InForceVersion: version(c.ObjectMeta), Spec: c.Spec}
}

// BGPAdvertisementInForce returns the record of the advertisement's current
// version.
func BGPAdvertisementInForce(a *v1beta1.BGPAdvertisement) *v1beta1.BGPAdvertisementInForce {
	c := a.DeepCopy()
	return &v1beta1.BGPAdvertisementInForce{InForceVersion: version(c.ObjectMeta), Spec: c.Spec}
}

// PeerInForce returns the record of the peer's current version: its spec
// as written, which names a password Secret but never holds its content.
func PeerInForce(p *v1beta1.BGPPeer) *v1beta1.BGPPeerInForce {
	c := p.DeepCopy()
	return &v1beta1.BGPPeerInForce{InForceVersion: version(c.ObjectMeta), Spec: c.Spec}
}

// recordOf returns the version an object's status records as in force, if
// it has a record of itself (same UID).
func recordOf(obj metav1.Object) (v1beta1.InForceVersion, bool) {
	var v *v1beta1.InForceVersion
	switch o := obj.(type) {
	case *v1beta1.IPAddressPool:
		if o.Status.InForce != nil {
			v = &o.Status.InForce.InForceVersion
		}
	case *v1beta1.L2Advertisement:
		if o.Status.InForce != nil {
			v = &o.Status.InForce.InForceVersion
		}
	case *v1beta1.BGPAdvertisement:
		if o.Status.InForce != nil {
			v = &o.Status.InForce.InForceVersion
		}
	case *v1beta1.BGPPeer:
		if o.Status.InForce != nil {
			v = &o.Status.InForce.InForceVersion
		}
	}
	if v == nil || v.UID != obj.GetUID() {
		return v1beta1.InForceVersion{}, false
	}
	return *v, true
}

// recorded returns obj in the version its status records (recordOf has
// found one), as an object LastGood can put in its place.
func recorded(obj metav1.Object) metav1.Object {
	switch o := obj.(type) {
	case *v1beta1.IPAddressPool:
		c, r := o.DeepCopy(), o.Status.InForce
		c.Generation, c.Labels, c.Spec = r.Generation, r.DeepCopy().Labels, *r.Spec.DeepCopy()
		return c
	case *v1beta1.L2Advertisement:
		c, r := o.DeepCopy(), o.Status.InForce
		c.Generation, c.Spec = r.Generation, *r.Spec.DeepCopy()
		return c
	case *v1beta1.BGPAdvertisement:
		c, r := o.DeepCopy(), o.Status.InForce
		c.Generation, c.Spec = r.Generation, *r.Spec.DeepCopy()
		return c
	case *v1beta1.BGPPeer:
		c, r := o.DeepCopy(), o.Status.InForce
		c.Generation, c.Spec = r.Generation, *r.Spec.DeepCopy()
		return c
	}
	return nil
}

// seed fills in, from the records in the objects' statuses, the last valid
// version of every object this process has no memory of (it started after
// that version was in force) or a memory older than the record (it missed
// a version the controller saw valid, between two events). The controller
// records only versions that were valid and in force, so every process
// ends up keeping the same one. A record of another object (another UID)
// is not used.
func (g *LastGood) seed(cur Input) {
	eachObject(cur, func(k objKey, obj metav1.Object) {
		v, ok := recordOf(obj)
		if !ok {
			return
		}
		if last, ok := g.good[k]; ok && last.GetUID() == v.UID && last.GetGeneration() >= v.Generation {
			return
		}
		g.good[k] = recorded(obj)
	})
}
