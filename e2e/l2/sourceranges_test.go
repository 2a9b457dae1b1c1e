package l2

import (
	"context"
	"net/netip"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"

	"github.com/herald-lb/herald/e2e/harness"
	"github.com/herald-lb/herald/e2e/lab"
	"github.com/herald-lb/herald/test/labkit"
)

// TestLoadBalancerSourceRanges: a Herald address is filtered by its
// Service's spec.loadBalancerSourceRanges, on both families (kube-proxy
// enforces them for ipMode VIP addresses). With ranges naming only the
// client on the segment, the client connects and the external host
// behind the router is refused; with the external host's addresses added
// to the ranges, it connects too (so it was the ranges that refused it).
func TestLoadBalancerSourceRanges(t *testing.T) {
	l, _ := suite.Herald(t)
	ctx := context.Background()
	client := []string{lab.ClientIPv4 + "/32", lab.ClientIPv6 + "/128"}
	_, ips := suite.Service(t, "source-ranges", poolL2, func(s *corev1.Service) {
		dualStack(s)
		s.Spec.LoadBalancerSourceRanges = client
	}, "node1", "node2", "node3")
	for _, vip := range ips {
		harness.Owner(t, l, vip)
		reaches(t, l, lab.Client, vip)
	}
	for _, vip := range ips {
		if a, err := l.HTTPGet(ctx, lab.External, vip, 80); err == nil {
			t.Errorf("%s:80 answered %s (by %s, seen from %s) outside loadBalancerSourceRanges %v", vip, lab.External, a.Pod, a.Client, client)
		} else {
			t.Logf("%s:80 refused to %s, outside %v: %v", vip, lab.External, client, err)
		}
	}
	all := slices.Concat(client, []string{lab.ExternalIPv4 + "/32", lab.ExternalIPv6 + "/128"})
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		s, err := l.Client().CoreV1().Services(testNS).Get(ctx, "source-ranges", metav1.GetOptions{})
		if err != nil {
			return err
		}
		s.Spec.LoadBalancerSourceRanges = all
		_, err = l.Client().CoreV1().Services(testNS).Update(ctx, s, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, vip := range ips {
		reaches(t, l, lab.External, vip)
	}
}

// reaches waits until an HTTP request from host to vip:80 is answered by
// a backend.
func reaches(t *testing.T, l *lab.Lab, host string, vip netip.Addr) {
	t.Helper()
	var a lab.PodAnswer
	labkit.Eventually(t, 30*time.Second, host+" reaching "+vip.String()+":80", func() bool {
		var err error
		a, err = l.HTTPGet(context.Background(), host, vip, 80)
		return err == nil
	})
	t.Logf("%s:80 from %s: answered by %s, which saw %s", vip, host, a.Pod, a.Client)
}
