package announce

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
)

// TestNodeEligibleExhaustive enumerates every combination of the inputs
// that matter and checks them against the rule as the design states it.
func TestNodeEligibleExhaustive(t *testing.T) {
	labels := []*string{nil, ptr(""), ptr("true"), ptr("false"), ptr("yes")}
	taints := []*corev1.TaintEffect{nil, ptr(corev1.TaintEffectNoSchedule), ptr(corev1.TaintEffectPreferNoSchedule), ptr(corev1.TaintEffectNoExecute)}
	conds := []*corev1.ConditionStatus{nil, ptr(corev1.ConditionTrue), ptr(corev1.ConditionFalse), ptr(corev1.ConditionUnknown)}
	count := 0
	for _, l := range labels {
		for _, taint := range taints {
			for _, ready := range conds {
				for _, netUnavail := range conds {
					n := &corev1.Node{}
					n.Labels = map[string]string{"other": "x"}
					if l != nil {
						n.Labels[corev1.LabelNodeExcludeBalancers] = *l
					}
					if taint != nil {
						n.Spec.Taints = []corev1.Taint{{Key: "unrelated", Effect: corev1.TaintEffectNoSchedule}, {Key: TaintToBeDeletedByClusterAutoscaler, Value: "1700000000", Effect: *taint}}
					}
					if ready != nil {
						n.Status.Conditions = append(n.Status.Conditions, corev1.NodeCondition{Type: corev1.NodeReady, Status: *ready})
					}
					if netUnavail != nil {
						n.Status.Conditions = append(n.Status.Conditions, corev1.NodeCondition{Type: corev1.NodeNetworkUnavailable, Status: *netUnavail})
					}
					want := (l == nil || *l == "false") && taint == nil && ready != nil && *ready == corev1.ConditionTrue &&
						(netUnavail == nil || *netUnavail != corev1.ConditionTrue)
					got, reason := NodeEligible(n)
					if got != want {
						t.Errorf("label=%v taint=%v ready=%v netUnavailable=%v: eligible=%v, want %v", deref(l), taint != nil, deref(ready), deref(netUnavail), got, want)
					}
					if got != (reason == "") {
						t.Errorf("eligible=%v with reason %q", got, reason)
					}
					count++
				}
			}
		}
	}
	if count != 320 {
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
	if e := SummarizeEndpoints([]*discoveryv1.EndpointSlice{{Endpoints: []discoveryv1.Endpoint{ep("x", no, no, no)}}}); e.AnyReady || len(e.Local) > 0 {
		t.Errorf("no usable endpoint: %+v", e)
	}
}
