package l2

import (
	"context"
	"testing"
	"time"

	"github.com/herald-lb/herald/e2e/lab"
)

// TestTrafficReachesPodThroughKubeProxy: a Service with
// allocateLoadBalancerNodePorts false is announced, and an HTTP request
// from the client (no static neighbour entry) reaches a pod through the
// owner's kube-proxy.
func TestTrafficReachesPodThroughKubeProxy(t *testing.T) {
	l, _ := herald(t)
	svc, ips := service(t, l, "web", nil, "node2")
	if svc.Spec.AllocateLoadBalancerNodePorts == nil || *svc.Spec.AllocateLoadBalancerNodePorts {
		t.Fatal("the lab's Service should not allocate node ports")
	}
	owner(t, l, ips[0])
	var answer lab.PodAnswer
	lab.Poll(t, "an HTTP answer through the VIP", 30*time.Second, func() bool {
		var err error
		answer, err = l.HTTPGet(context.Background(), lab.Client, ips[0], 80)
		return err == nil
	})
	if answer.Node != "node2" {
		t.Errorf("answered by %s on %q, want a pod on node2", answer.Pod, answer.Node)
	}
	t.Logf("%s:80 answered by %s, which saw the client as %s", ips[0], answer.Pod, answer.Client)
}
