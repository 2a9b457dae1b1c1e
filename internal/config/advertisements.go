package config

import (
	"fmt"
	"sort"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/herald-lb/herald/api/v1beta1"
)

const (
	kindL2Adv  = "L2Advertisement"
	kindBGPAdv = "BGPAdvertisement"
)

// buildSelection resolves the pools an advertisement names or selects, and
// its node and Service selectors. ok is false when a selector is invalid:
// the advertisement is then ignored.
func buildSelection(kind, name string, pools []string, poolSel, nodeSel, svcSel []metav1.LabelSelector,
	cfg *Config, ps *problems) (Selection, bool) {
	var sel Selection
	var err error
	ignore := func(err error) (Selection, bool) {
		fe := err.(fieldError)
		ps.add(Problem{Kind: kind, Name: name, Field: fe.field, Reason: ReasonInvalidField, Message: fe.Error(), Ignored: true})
		return Selection{}, false
	}
	poolSelectors, err := selectors(poolSel, "spec.ipAddressPoolSelectors")
	if err != nil {
		return ignore(err)
	}
	if sel.NodeSelectors, err = selectors(nodeSel, "spec.nodeSelectors"); err != nil {
		return ignore(err)
	}
	if sel.ServiceSelectors, err = selectors(svcSel, "spec.serviceSelectors"); err != nil {
		return ignore(err)
	}
	chosen := map[string]bool{}
	for i, p := range pools {
		if _, ok := cfg.Pools[p]; ok {
			chosen[p] = true
			continue
		}
		ps.add(Problem{Kind: kind, Name: name, Field: fmt.Sprintf("spec.ipAddressPools[%d]", i), Reason: ReasonPoolNotFound,
			Message: fmt.Sprintf("IPAddressPool %s does not exist, or is left out of the configuration (invalid or overlapping an older pool: see its status); the advertisement applies to its other pools", p)})
	}
	for _, poolName := range cfg.PoolNames() {
		for _, s := range poolSelectors {
			if s.Matches(cfg.Pools[poolName].Labels) {
				chosen[poolName] = true
			}
		}
	}
	if len(pools) == 0 && len(poolSel) == 0 {
		for _, poolName := range cfg.PoolNames() {
			chosen[poolName] = true
		}
	}
	sel.Pools = sortedKeys(chosen)
	return sel, true
}

func buildL2Advertisements(in []*v1beta1.L2Advertisement, cfg *Config, ps *problems) []*L2Advertisement {
	var out []*L2Advertisement
	for _, obj := range in {
		s := obj.Spec
		sel, ok := buildSelection(kindL2Adv, obj.Name, s.IPAddressPools, s.IPAddressPoolSelectors, s.NodeSelectors, s.ServiceSelectors, cfg, ps)
		if !ok {
			continue
		}
		ifaces := append([]string(nil), s.Interfaces...)
		sort.Strings(ifaces)
		out = append(out, &L2Advertisement{Name: obj.Name, Selection: sel, Interfaces: ifaces})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

func buildBGPAdvertisements(in []*v1beta1.BGPAdvertisement, aliases map[string]string, cfg *Config, ps *problems) []*BGPAdvertisement {
	var out []*BGPAdvertisement
	for _, obj := range in {
		s := obj.Spec
		sel, ok := buildSelection(kindBGPAdv, obj.Name, s.IPAddressPools, s.IPAddressPoolSelectors, s.NodeSelectors, s.ServiceSelectors, cfg, ps)
		if !ok {
			continue
		}
		adv := &BGPAdvertisement{Name: obj.Name, Selection: sel, AggregationLength: 32, AggregationLengthV6: 128}
		if s.AggregationLength != nil {
			adv.AggregationLength = int(*s.AggregationLength)
		}
		if s.AggregationLengthV6 != nil {
			adv.AggregationLengthV6 = int(*s.AggregationLengthV6)
		}
		if s.LocalPref != nil {
			lp := uint32(*s.LocalPref)
			adv.LocalPref = &lp
		}
		adv.LinkBandwidth = s.LinkBandwidth == v1beta1.LinkBandwidthReadyLocalEndpoints
		adv.Peers = resolvePeers(obj, cfg, ps)
		resolveCommunities(adv, s.Communities, aliases, ps)
		checkLocalPref(adv, cfg, ps)
		checkAggregation(adv, cfg, ps)
		out = append(out, adv)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

func resolvePeers(obj *v1beta1.BGPAdvertisement, cfg *Config, ps *problems) []string {
	if len(obj.Spec.Peers) == 0 {
		return nil
	}
	known := map[string]bool{}
	for _, p := range cfg.Peers {
		known[p.Name] = true
	}
	peers := []string{}
	for i, name := range obj.Spec.Peers {
		if known[name] {
			peers = append(peers, name)
			continue
		}
		ps.add(Problem{Kind: kindBGPAdv, Name: obj.Name, Field: fmt.Sprintf("spec.peers[%d]", i), Reason: ReasonPeerNotFound,
			Message: fmt.Sprintf("BGPPeer %s does not exist or is not valid (see its status); its routes go to the other peers listed", name)})
	}
	sort.Strings(peers)
	return peers
}

func checkLocalPref(adv *BGPAdvertisement, cfg *Config, ps *problems) {
	if adv.LocalPref == nil {
		return
	}
	var ebgp []string
	for _, p := range cfg.Peers {
		if p.IsEBGP() && adv.SelectsPeer(p.Name) {
			ebgp = append(ebgp, p.Name)
		}
	}
	if len(ebgp) > 0 {
		ps.add(Problem{Kind: kindBGPAdv, Name: adv.Name, Field: "spec.localPref", Reason: ReasonLocalPrefOnEBGP,
			Message: fmt.Sprintf("LOCAL_PREF is an iBGP attribute and is not sent to the eBGP peers %v; it is sent to iBGP peers only", ebgp)})
	}
}

// checkAggregation refuses aggregates that would cover addresses outside
// a selected pool's ranges: those routes fall back to host routes.
func checkAggregation(adv *BGPAdvertisement, cfg *Config, ps *problems) {
	for _, name := range adv.Pools {
		for _, r := range cfg.Pools[name].Ranges {
			length, field := adv.AggregationLength, "spec.aggregationLength"
			if !r.Is4() {
				length, field = adv.AggregationLengthV6, "spec.aggregationLengthV6"
			}
			if aggregateFits(r.First, r.Last, length) {
				continue
			}
			ps.add(Problem{Kind: kindBGPAdv, Name: adv.Name, Field: field, Reason: ReasonAggregation,
				Message: fmt.Sprintf("a /%d aggregate of IPAddressPool %s range %s would cover addresses outside the pool; its addresses are advertised as host routes", length, name, r)})
			if r.Is4() {
				adv.AggregationLength = 32
			} else {
				adv.AggregationLengthV6 = 128
			}
		}
	}
}
