package config

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/herald-lb/herald/api/v1beta1"
)

// The helpers below let LastGood read and replace the objects of an Input
// by kind and name. Only the kinds Build can leave out are covered.

func copyInput(in Input) Input {
	out := in
	out.Pools = append([]*v1beta1.IPAddressPool(nil), in.Pools...)
	out.L2Advertisements = append([]*v1beta1.L2Advertisement(nil), in.L2Advertisements...)
	out.BGPAdvertisements = append([]*v1beta1.BGPAdvertisement(nil), in.BGPAdvertisements...)
	out.Peers = append([]*v1beta1.BGPPeer(nil), in.Peers...)
	out.Secrets = append(out.Secrets[:0:0], in.Secrets...)
	return out
}

func inputSize(in Input) int {
	return len(in.Pools) + len(in.L2Advertisements) + len(in.BGPAdvertisements) + len(in.Peers)
}

func eachObject(in Input, f func(objKey, metav1.Object)) {
	for _, o := range in.Pools {
		f(objKey{kindPool, o.Name}, o)
	}
	for _, o := range in.L2Advertisements {
		f(objKey{kindL2Adv, o.Name}, o)
	}
	for _, o := range in.BGPAdvertisements {
		f(objKey{kindBGPAdv, o.Name}, o)
	}
	for _, o := range in.Peers {
		f(objKey{kindPeer, o.Name}, o)
	}
}

func objectOf(in Input, k objKey) metav1.Object {
	var found metav1.Object
	eachObject(in, func(kk objKey, o metav1.Object) {
		if kk == k {
			found = o
		}
	})
	return found
}

// setObject replaces the object k by obj, or removes it when obj is nil. A
// pool keeps its current deletion state and its current status whatever
// version is in force: the status is the controller's record of now (the
// addresses held outside the pool's ranges), not part of the version.
func setObject(in *Input, k objKey, obj metav1.Object) {
	switch k.kind {
	case kindPool:
		var p *v1beta1.IPAddressPool
		if obj != nil {
			p = obj.(*v1beta1.IPAddressPool)
			if cur, ok := objectOf(*in, k).(*v1beta1.IPAddressPool); ok && cur != p {
				p = p.DeepCopy()
				p.Status = *cur.Status.DeepCopy()
				if cur.DeletionTimestamp != nil && p.DeletionTimestamp == nil {
					p.DeletionTimestamp = cur.DeletionTimestamp
				}
			}
		}
		in.Pools = replaceNamed(in.Pools, k.name, p)
	case kindL2Adv:
		var a *v1beta1.L2Advertisement
		if obj != nil {
			a = obj.(*v1beta1.L2Advertisement)
		}
		in.L2Advertisements = replaceNamed(in.L2Advertisements, k.name, a)
	case kindBGPAdv:
		var a *v1beta1.BGPAdvertisement
		if obj != nil {
			a = obj.(*v1beta1.BGPAdvertisement)
		}
		in.BGPAdvertisements = replaceNamed(in.BGPAdvertisements, k.name, a)
	case kindPeer:
		var p *v1beta1.BGPPeer
		if obj != nil {
			p = obj.(*v1beta1.BGPPeer)
		}
		in.Peers = replaceNamed(in.Peers, k.name, p)
	}
}

// replaceNamed returns list with the object called name replaced by obj,
// or removed when obj is nil.
func replaceNamed[T interface {
	comparable
	GetName() string
}](list []T, name string, obj T) []T {
	var zero T
	out := make([]T, 0, len(list))
	for _, o := range list {
		switch {
		case o.GetName() != name:
			out = append(out, o)
		case obj != zero:
			out = append(out, obj)
		}
	}
	return out
}
