package announce

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestExcludedByLabelMatchesUpstream: every spelling strconv.ParseBool
// accepts, plus values it refuses (the empty value among them), against
// upstream's nodeIncludedPredicate: parsed true or unparsable excludes,
// parsed false keeps the node in, no label keeps it in.
func TestExcludedByLabelMatchesUpstream(t *testing.T) {
	cases := map[string]bool{
		"1": true, "t": true, "T": true, "TRUE": true, "true": true, "True": true,
		"0": false, "f": false, "F": false, "FALSE": false, "false": false, "False": false,
		"": true, "yes": true, "no": true, "tRUE": true, "fALSE": true, " false": true, "2": true, "off": true,
	}
	for v, want := range cases {
		if got := ExcludedByLabel(map[string]string{corev1.LabelNodeExcludeBalancers: v}); got != want {
			t.Errorf("label value %q: excluded=%v, want %v", v, got, want)
		}
	}
	if ExcludedByLabel(map[string]string{"other": "true"}) || ExcludedByLabel(nil) {
		t.Error("no exclusion label excluded the node")
	}
}

// TestNodeEligibleExhaustive enumerates every combination of the inputs
// that matter and checks them against the rule as the design states it:
// deletion, the exclusion label (upstream's parsing), Herald's drain label
// (the same parsing), the autoscaler taint and NetworkUnavailable
// withdraw; the Ready condition does not (KEP-3458), nor does cordon.
func TestNodeEligibleExhaustive(t *testing.T) {
	labels := []*string{nil, ptr(""), ptr("true"), ptr("false"), ptr("yes"), ptr("False"), ptr("0")}
	taints := []*corev1.TaintEffect{nil, ptr(corev1.TaintEffectNoSchedule), ptr(corev1.TaintEffectPreferNoSchedule), ptr(corev1.TaintEffectNoExecute)}
	conds := []*corev1.ConditionStatus{nil, ptr(corev1.ConditionTrue), ptr(corev1.ConditionFalse), ptr(corev1.ConditionUnknown)}
	drains := []*string{nil, ptr(""), ptr("true"), ptr("false"), ptr("0"), ptr("yes")}
	count := 0
	for _, l := range labels {
		for _, drain := range drains {
			for _, cordon := range []bool{false, true} {
				for _, taint := range taints {
					for _, ready := range conds {
						for _, netUnavail := range conds {
							for _, deleting := range []bool{false, true} {
								n := &corev1.Node{}
								n.Labels = map[string]string{"other": "x"}
								if l != nil {
									n.Labels[corev1.LabelNodeExcludeBalancers] = *l
								}
								if drain != nil {
									n.Labels["herald.dev/drain"] = *drain
								}
								n.Spec.Unschedulable = cordon
								if taint != nil {
									n.Spec.Taints = []corev1.Taint{{Key: "unrelated", Effect: corev1.TaintEffectNoSchedule}, {Key: TaintToBeDeletedByClusterAutoscaler, Value: "1700000000", Effect: *taint}}
								}
								if ready != nil {
									n.Status.Conditions = append(n.Status.Conditions, corev1.NodeCondition{Type: corev1.NodeReady, Status: *ready})
								}
								if netUnavail != nil {
									n.Status.Conditions = append(n.Status.Conditions, corev1.NodeCondition{Type: corev1.NodeNetworkUnavailable, Status: *netUnavail})
								}
								if deleting {
									n.DeletionTimestamp = &metav1.Time{Time: time.Unix(1700000000, 0)}
								}
								labelKeeps := l == nil || *l == "false" || *l == "False" || *l == "0"
								drainKeeps := drain == nil || *drain == "false" || *drain == "0"
								want := labelKeeps && drainKeeps && taint == nil && !deleting && (netUnavail == nil || *netUnavail != corev1.ConditionTrue)
								got, reason := NodeEligible(n)
								if got != want {
									t.Errorf("label=%v drain=%v cordon=%v taint=%v ready=%v netUnavailable=%v deleting=%v: eligible=%v, want %v", deref(l), deref(drain), cordon, taint != nil, deref(ready), deref(netUnavail), deleting, got, want)
								}
								if got != (reason == "") {
									t.Errorf("eligible=%v with reason %q", got, reason)
								}
								count++
								if want := ReasonDraining; labelKeeps && !deleting && !drainKeeps && reason != want {
									t.Errorf("drain=%v: reason %q, want %q", deref(drain), reason, want)
								}
							}
						}
					}
				}
			}
		}
	}
	if count != 7*6*2*4*4*4*2 {
		t.Fatalf("enumerated %d combinations", count)
	}
}

func deref[T any](p *T) any {
	if p == nil {
		return "unset"
	}
	return *p
}

func TestSummarizeEndpoints(t *testing.T) {
	yes, no := ptr(true), ptr(false)
	ep := func(node string, ready, serving, terminating *bool) discoveryv1.Endpoint {
		return discoveryv1.Endpoint{NodeName: ptr(node), Conditions: discoveryv1.EndpointConditions{Ready: ready, Serving: serving, Terminating: terminating}}
	}
	slices := []*discoveryv1.EndpointSlice{
		{Endpoints: []discoveryv1.Endpoint{ep("ready", yes, yes, no), ep("nil-ready", nil, nil, nil), ep("not-ready", no, no, no)}},
		{Endpoints: []discoveryv1.Endpoint{ep("serving-terminating", no, yes, yes), ep("terminating-only", no, no, yes), {Conditions: discoveryv1.EndpointConditions{Ready: yes}}}},
	}
	got := SummarizeEndpoints(slices)
	for n, want := range map[string]bool{"ready": true, "nil-ready": true, "not-ready": false, "serving-terminating": true, "terminating-only": false} {
		if got.Local[n] != want {
			t.Errorf("%s: local=%v, want %v", n, got.Local[n], want)
		}
	}
	if !got.AnyReady {
		t.Error("AnyReady")
	}
	for n, want := range map[string]int{"ready": 1, "nil-ready": 1, "not-ready": 0, "serving-terminating": 1, "terminating-only": 0} {
		if got.LocalReady[n] != want {
			t.Errorf("%s: localReady=%d, want %d", n, got.LocalReady[n], want)
		}
	}
	// Counts: three on one node; a dual-stack pod listed in both
	// families' slices counts once.
	v4 := &discoveryv1.EndpointSlice{AddressType: discoveryv1.AddressTypeIPv4, Endpoints: []discoveryv1.Endpoint{ep("n", yes, yes, no), ep("n", yes, yes, no), ep("n", nil, nil, nil), ep("m", yes, yes, no)}}
	v6 := &discoveryv1.EndpointSlice{AddressType: discoveryv1.AddressTypeIPv6, Endpoints: []discoveryv1.Endpoint{ep("n", yes, yes, no), ep("n", yes, yes, no), ep("n", yes, yes, no)}}
	if c := SummarizeEndpoints([]*discoveryv1.EndpointSlice{v4, v6}).LocalReady; c["n"] != 3 || c["m"] != 1 {
		t.Errorf("counts %v, want n=3 m=1", c)
	}
	if e := SummarizeEndpoints([]*discoveryv1.EndpointSlice{{Endpoints: []discoveryv1.Endpoint{ep("x", no, no, no)}}}); e.AnyReady || len(e.Local) > 0 {
		t.Errorf("no usable endpoint: %+v", e)
	}
}
