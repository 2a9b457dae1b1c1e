// Package demo is what `make demo` shows: Herald installed in the lab with
// the manifests' RBAC and the L2 and BGP samples, two HTTPS-style Services
// (port 443 -> targetPort 8443), and a short report of what Herald did:
// the addresses, which node answers ARP, the router's routes, an HTTP
// request through each address, and the Services' events.
package demo

import (
	"cmp"
	"context"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/herald-lb/herald/e2e/deploy"
	"github.com/herald-lb/herald/e2e/lab"
	"github.com/herald-lb/herald/internal/service"
	"github.com/herald-lb/herald/test/labkit"
	"github.com/herald-lb/herald/test/testenv"
)

// Namespace of the demo Services.
const Namespace = "demo"

// ServiceReport is what the report says about one Service.
type ServiceReport struct {
	Name    string
	Address netip.Addr
	// IPMode: the address's status.loadBalancer.ingress[].ipMode, as the
	// controller wrote it ("" when unset).
	IPMode string
	// ARP: the nodes whose MACs answered the client's who-has (L2).
	ARP []lab.Answer
	// Routes: the router's entry for the address's /32 (BGP).
	Routes lab.Route
	// HTTP: the pod that answered, and from where it was asked.
	HTTP     lab.PodAnswer
	HTTPFrom string
	Events   []corev1.Event
}

// Report is the whole demo's outcome.
type Report struct {
	L2, BGP ServiceReport
}

// Setup installs Herald in the lab, applies the samples and creates the
// demo Services (pods on node2 and node3).
func Setup(ctx context.Context, l *lab.Lab, images *deploy.Images) (*deploy.Herald, error) {
	h, err := deploy.Install(ctx, l, images)
	if err != nil {
		return nil, err
	}
	root, err := testenv.RepoRoot()
	if err != nil {
		return nil, err
	}
	for _, f := range []string{"l2.yaml", "bgp.yaml"} {
		data, err := os.ReadFile(filepath.Join(root, "manifests", "samples", f))
		if err != nil {
			return nil, err
		}
		if err := h.Apply(ctx, string(data)); err != nil {
			return nil, err
		}
	}
	for name, pool := range map[string]string{"demo-l2": "l2-pool", "demo-bgp": "bgp-pool"} {
		svc := lab.LoadBalancerService(Namespace, name)
		svc.Annotations = map[string]string{"herald.dev/address-pool": pool}
		svc.Spec.Ports = []corev1.ServicePort{{Name: "https", Protocol: corev1.ProtocolTCP, Port: 443, TargetPort: intstr.FromInt32(8443)}}
		created, err := l.CreateService(ctx, svc)
		if err != nil {
			return nil, err
		}
		if err := l.SetEndpoints(ctx, created, "node2", "node3"); err != nil {
			return nil, err
		}
	}
	return h, nil
}

// Run waits for Herald to serve the demo Services and gathers the report.
func Run(ctx context.Context, l *lab.Lab) (Report, error) {
	var r Report
	var err error
	if r.L2, err = gather(ctx, l, "demo-l2", false); err != nil {
		return r, err
	}
	r.BGP, err = gather(ctx, l, "demo-bgp", true)
	return r, err
}

func gather(ctx context.Context, l *lab.Lab, name string, viaRouter bool) (ServiceReport, error) {
	sr := ServiceReport{Name: name, HTTPFrom: lab.Client}
	if viaRouter {
		sr.HTTPFrom = lab.External
	}
	steps := []struct {
		what string
		ok   func(context.Context) bool
	}{
		{"an address", func(ctx context.Context) bool {
			s, err := l.Client().CoreV1().Services(Namespace).Get(ctx, name, metav1.GetOptions{})
			if err == nil && len(service.IngressIPs(s)) > 0 {
				sr.Address = service.IngressIPs(s)[0]
				sr.IPMode = ingressIPMode(s, sr.Address)
			}
			return sr.Address.IsValid()
		}},
		{"its announcement", func(ctx context.Context) bool {
			if viaRouter {
				// every node advertises it (externalTrafficPolicy Cluster,
				// the sample advertises from all nodes): wait for the router
				// to spread it over all of them, not for the first path
				rt, err := l.RouterRoutes(ctx, netip.PrefixFrom(sr.Address, 32))
				sr.Routes = rt
				return err == nil && len(rt.FIB) == len(l.Nodes())
			}
			a, err := l.ARPProbe(ctx, sr.Address)
			sr.ARP = a
			return err == nil && len(a) == 1
		}},
		{"an HTTP answer on port 443", func(ctx context.Context) bool {
			a, err := l.HTTPGet(ctx, sr.HTTPFrom, sr.Address, 443)
			sr.HTTP = a
			return err == nil
		}},
	}
	for _, s := range steps {
		if err := labkit.Poll(ctx, 90*time.Second, s.what, func() (bool, error) {
			return s.ok(ctx), nil
		}); err != nil {
			return sr, fmt.Errorf("Service %s/%s: no %s within 90 s", Namespace, name, s.what)
		}
	}
	evs, err := l.Client().CoreV1().Events(Namespace).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=" + name})
	if err == nil {
		sr.Events = evs.Items
		sort.Slice(sr.Events, func(i, j int) bool { return sr.Events[i].FirstTimestamp.Before(&sr.Events[j].FirstTimestamp) })
	}
	return sr, nil
}

// ingressIPMode is the ipMode of the Service's ingress entry for ip, ""
// when that entry has none.
func ingressIPMode(s *corev1.Service, ip netip.Addr) string {
	for _, in := range s.Status.LoadBalancer.Ingress {
		if a, err := netip.ParseAddr(in.IP); err == nil && a == ip && in.IPMode != nil {
			return string(*in.IPMode)
		}
	}
	return ""
}

// Print writes the report for a human.
func Print(w *strings.Builder, l *lab.Lab, r Report) {
	fmt.Fprintf(w, "Herald is running in the lab (run %s), installed from its images and manifests/herald.yaml: the controller Deployment and a speaker Pod on each of %d nodes.\n\n", l.RunID(), len(l.Nodes()))
	for _, sr := range []ServiceReport{r.L2, r.BGP} {
		fmt.Fprintf(w, "Service %s/%s (port 443 -> pods' 8443)\n", Namespace, sr.Name)
		fmt.Fprintf(w, "  address          %s (ipMode %s)\n", sr.Address, cmp.Or(sr.IPMode, "unset"))
		for _, a := range sr.ARP {
			fmt.Fprintf(w, "  ARP answer       %s = %s, as seen from the client %s\n", a.MAC, a.Node, lab.ClientIPv4)
		}
		if len(sr.Routes.FIB) > 0 {
			var hops []string
			for _, nh := range sr.Routes.FIB {
				hops = append(hops, fmt.Sprintf("%s (%s)", nh.Addr, nh.Node))
			}
			fmt.Fprintf(w, "  router routes    %s via %s\n", sr.Routes.Prefix, strings.Join(hops, ", "))
			if len(sr.Routes.Paths) > 0 {
				fmt.Fprintf(w, "  communities      %s\n", strings.Join(sr.Routes.Paths[0].Communities, " "))
			}
		}
		fmt.Fprintf(w, "  HTTP             from %s to %s:443 -> answered by %s on %s (it saw %s)\n", sr.HTTPFrom, sr.Address, sr.HTTP.Pod, sr.HTTP.Node, sr.HTTP.Client)
		fmt.Fprintf(w, "  events\n")
		for _, ev := range sr.Events {
			fmt.Fprintf(w, "    %-7s %-22s %s\n", ev.Type, ev.Reason, ev.Message)
		}
		fmt.Fprintln(w)
	}
}
