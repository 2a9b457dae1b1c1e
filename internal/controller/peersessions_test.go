package controller

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/herald-lb/herald/api/v1beta1"
)

func speakerStatus(node string, sessions ...v1beta1.BGPSessionStatus) *v1beta1.SpeakerStatus {
	return &v1beta1.SpeakerStatus{ObjectMeta: metav1.ObjectMeta{Name: node}, Status: v1beta1.SpeakerStatusStatus{BGP: sessions}}
}

func TestPeerRefusals(t *testing.T) {
	missing := v1beta1.BGPSessionStatus{Peer: "tenant", State: "NotConfigured"}
	statuses := []*v1beta1.SpeakerStatus{
		speakerStatus("node3", withMessage(missing, "VRF blue does not exist on node node3"), v1beta1.BGPSessionStatus{Peer: "tor", State: "Established"}),
		speakerStatus("node1", withMessage(missing, "VRF blue does not exist on node node1")),
		speakerStatus("node2", v1beta1.BGPSessionStatus{Peer: "tenant", State: "Established"},
			v1beta1.BGPSessionStatus{Peer: "tor", State: "Active", Message: "not established: connection refused"}),
	}
	got := sessionsConfigured(peerRefusals(statuses, "tenant"))
	want := "refused on 2 node(s): node1: VRF blue does not exist on node node1; node3: VRF blue does not exist on node node3"
	if got.Status || got.Reason != reasonSessionsRefused || got.Message != want {
		t.Errorf("tenant: %+v, want False %q", got, want)
	}
	// a session that is not up but configured is no refusal
	if got := sessionsConfigured(peerRefusals(statuses, "tor")); !got.Status || got.Reason != reasonSessionsConfigured {
		t.Errorf("tor: %+v", got)
	}
	if got := sessionsConfigured(peerRefusals(nil, "tor")); !got.Status {
		t.Errorf("no SpeakerStatus: %+v", got)
	}
}

func TestRefusalsKey(t *testing.T) {
	a := speakerStatus("node1", withMessage(v1beta1.BGPSessionStatus{Peer: "tenant", State: "NotConfigured"}, "VRF blue does not exist on node node1"))
	b := speakerStatus("node1", v1beta1.BGPSessionStatus{Peer: "tenant", State: "Active"})
	c := speakerStatus("node1", v1beta1.BGPSessionStatus{Peer: "tenant", State: "Connect"})
	if refusalsKey(a) == refusalsKey(b) || refusalsKey(nil) != "" {
		t.Error("a refusal must change the key")
	}
	if refusalsKey(b) != refusalsKey(c) {
		t.Error("state changes of configured sessions must not change the key")
	}
}

func withMessage(s v1beta1.BGPSessionStatus, msg string) v1beta1.BGPSessionStatus {
	s.Message = msg
	return s
}
