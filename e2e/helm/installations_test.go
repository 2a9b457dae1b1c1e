package helm

import (
	"context"
	"fmt"
	"net/netip"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/herald-lb/herald/api/generated/clientset/versioned"
	"github.com/herald-lb/herald/api/v1beta1"
	"github.com/herald-lb/herald/e2e/deploy"
	"github.com/herald-lb/herald/e2e/harness"
	"github.com/herald-lb/herald/e2e/lab"
	"github.com/herald-lb/herald/internal/service"
	"github.com/herald-lb/herald/test/labkit"
	"github.com/herald-lb/herald/test/testenv"
)

// The second installation of TestHelmTwoInstallations: its release,
// namespace, installation name and class, and the ports its speakers
// take on the nodes' network beside the first's.
const (
	blueRelease = "herald-blue"
	blueNS      = "herald-blue"
	blueName    = "blue"
	blueClass   = "lab.herald.dev/blue"
)

var blueValues = []string{"--set", "installation=" + blueName, "--set", "lbClass=" + blueClass, "--set", "lbClassOnly=true",
	"--set", "metricsPort=7482", "--set", "healthPort=7483", "--set", "speaker.memberlistPort=7957", "--set", "speaker.bgpListen.port=1180"}

// Each installation's pool and advertisement: the default one's carry no
// installation label, the blue one's carry herald.dev/installation=blue.
const twoConfigs = `
apiVersion: herald.dev/v1beta1
kind: IPAddressPool
metadata: {name: first}
spec:
  addresses: [198.51.100.104/30]
  autoAssign: false
---
apiVersion: herald.dev/v1beta1
kind: L2Advertisement
metadata: {name: first}
spec:
  ipAddressPools: [first]
---
apiVersion: herald.dev/v1beta1
kind: IPAddressPool
metadata: {name: blue, labels: {herald.dev/installation: blue}}
spec:
  addresses: [198.51.100.108/30]
  autoAssign: false
---
apiVersion: herald.dev/v1beta1
kind: L2Advertisement
metadata: {name: blue, labels: {herald.dev/installation: blue}}
spec:
  ipAddressPools: [blue]
`

// installation is what the test knows of one installation: the names it
// writes under, its pool and its SpeakerStatuses' suffix.
type installation struct {
	name, controller, speaker, pool string
	prefix                          netip.Prefix
	statusSuffix                    string
}

var (
	defaultInst = installation{name: "default", controller: "herald-controller", speaker: "herald-speaker", pool: "first",
		prefix: netip.MustParsePrefix("198.51.100.104/30")}
	blueInst = installation{name: blueName, controller: "herald-controller-blue", speaker: "herald-speaker-blue", pool: "blue",
		prefix: netip.MustParsePrefix("198.51.100.108/30"), statusSuffix: ".blue"}
)

// TestHelmTwoInstallations installs two releases side by side: the
// default one (herald-system, no class needed) and a second one
// (herald-blue, installation blue, its own class with lbClassOnly, its
// own ports). Each Service gets an address from its own installation's
// pool, one node answers for it and HTTP from the client reaches a pod;
// its status, annotations and events are its own installation's alone
// (managed fields, event sources), as are the pools' and advertisements'
// status; each installation's SpeakerStatuses exist, distinct, and list
// its own address only. Uninstalling the default release leaves the blue
// Service served and the default one's Service untouched by blue.
func TestHelmTwoInstallations(t *testing.T) {
	l := lab.Shared(t)
	ctx := context.Background()
	waitNamespaceGone(t, l, deploy.Namespace)
	waitNamespaceGone(t, l, blueNS)
	var images deploy.Images
	h, err := deploy.InstallHelm(ctx, l, &images)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// the Services are gone by now (their cleanups run first); the
		// default release may be too, so nobody lifts pool first's
		// finalizer: the test does
		ctx := context.Background()
		_, _ = h.Kubectl(ctx, "delete", "l2advertisements.herald.dev/first", "l2advertisements.herald.dev/blue",
			"ipaddresspools.herald.dev/first", "ipaddresspools.herald.dev/blue", "--ignore-not-found", "--wait=false")
		for _, p := range []string{"first", "blue"} {
			_, _ = h.Kubectl(ctx, "patch", "ipaddresspools.herald.dev/"+p, "--type=merge", "-p", `{"metadata":{"finalizers":null}}`)
		}
		_, _ = h.Helm(ctx, "uninstall", blueRelease, "-n", blueNS, "--ignore-not-found")
		_ = h.HelmUninstall(ctx)
		_, _ = h.Kubectl(ctx, "delete", "speakerstatuses.herald.dev", "-l", v1beta1.LabelInstallation+"="+blueName, "--ignore-not-found")
		_, _ = h.Kubectl(ctx, "delete", "namespace", deploy.Namespace, blueNS, "--ignore-not-found", "--wait=false")
	})
	h.LogsOnFailure(t)
	installBlue(t, h)
	t.Cleanup(func() {
		if t.Failed() {
			out, _ := h.Kubectl(context.Background(), "-n", blueNS, "logs", "-l", "app.kubernetes.io/name=herald",
				"--all-containers", "--prefix", "--tail=60", "--max-log-requests=10")
			t.Logf("release %s's logs:\n%s", blueRelease, out)
		}
	})
	if err := h.Apply(ctx, twoConfigs); err != nil {
		t.Fatal(err)
	}
	const ns = "helm-two"
	plain := lab.LoadBalancerService(ns, "plain")
	plain.Annotations = map[string]string{v1beta1.AnnotationAddressPool: defaultInst.pool}
	blue := lab.LoadBalancerService(ns, "blue")
	blue.Annotations = map[string]string{v1beta1.AnnotationAddressPool: blueInst.pool}
	blue.Spec.LoadBalancerClass = ptrTo(blueClass)
	vips := map[string]netip.Addr{}
	for _, s := range []*corev1.Service{plain, blue} {
		t.Cleanup(func() { _ = l.DeleteService(context.Background(), ns, s.Name) })
		_, ips, err := h.CreateService(ctx, s, "node1", "node2", "node3")
		if err != nil {
			t.Fatal(err)
		}
		vips[s.Name] = ips[0]
	}
	insts := map[string]installation{"plain": defaultInst, "blue": blueInst}
	owners := map[string]string{}
	for _, name := range []string{"plain", "blue"} {
		inst, vip := insts[name], vips[name]
		if !inst.prefix.Contains(vip) {
			t.Errorf("Service %s has %s, not an address of installation %s's pool %s", name, vip, inst.name, inst.prefix)
		}
		owners[name] = harness.Owner(t, l, vip)
		t.Logf("Service %s (installation %s): %s announced by %s", name, inst.name, vip, owners[name])
		reachable(t, l, vip)
		waitAnnounced(t, l, ns, name)
	}
	others := map[string]installation{"plain": blueInst, "blue": defaultInst}
	for name, inst := range insts {
		checkWrittenBy(t, l, ns, name, inst, others[name])
	}
	checkConfigStatus(t, l)
	checkSpeakerStatuses(t, l, vips, owners)

	// the default release goes: the blue Service stays served and keeps
	// its address, and blue never takes the class-less Service over
	if err := h.HelmUninstall(ctx); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if got := ingress(t, l, ns, "blue"); !slices.Equal(got, []netip.Addr{vips["blue"]}) {
			t.Fatalf("after the default release's uninstall, Service blue shows %v, want %s", got, vips["blue"])
		}
		checkWrittenBy(t, l, ns, "plain", defaultInst, blueInst)
		time.Sleep(500 * time.Millisecond)
	}
	t.Logf("after the default release's uninstall, %s announced by %s", vips["blue"], harness.Owner(t, l, vips["blue"]))
	reachable(t, l, vips["blue"])
}

// installBlue installs the second release the way docs/operations.md
// says: its own namespace, labelled for privileged pods, and its own
// installation, class and ports; then waits until its controller and
// every speaker are Ready.
func installBlue(t *testing.T, h *deploy.Herald) {
	t.Helper()
	ctx := context.Background()
	if _, err := h.Kubectl(ctx, "create", "namespace", blueNS); err != nil {
		t.Fatal(err)
	}
	if _, err := h.Kubectl(ctx, "label", "namespace", blueNS, "pod-security.kubernetes.io/enforce=privileged"); err != nil {
		t.Fatal(err)
	}
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	args := append([]string{"install", blueRelease, filepath.Join(root, "charts", "herald"), "-n", blueNS}, h.ImageValues()...)
	if _, err := h.Helm(ctx, append(args, blueValues...)...); err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"deployment/" + deploy.ControllerDeployment, "daemonset/" + deploy.SpeakerDaemonSet} {
		if out, err := h.Kubectl(ctx, "-n", blueNS, "rollout", "status", w, "--timeout=180s"); err != nil {
			t.Fatalf("%s of release %s: %v\n%s", w, blueRelease, err, out)
		}
	}
}

// ingress returns the addresses in the status of Service ns/name.
func ingress(t *testing.T, l *lab.Lab, ns, name string) []netip.Addr {
	t.Helper()
	s, err := l.Client().CoreV1().Services(ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return service.IngressIPs(s)
}

// waitAnnounced waits for the condition herald.dev/Announced True on
// Service ns/name: its controller read its own speakers' SpeakerStatuses.
func waitAnnounced(t *testing.T, l *lab.Lab, ns, name string) {
	t.Helper()
	labkit.Eventually(t, 30*time.Second, "Service "+name+" herald.dev/Announced True", func() bool {
		s, err := l.Client().CoreV1().Services(ns).Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return false
		}
		for _, c := range s.Status.Conditions {
			if c.Type == v1beta1.ConditionAnnounced {
				return c.Status == metav1.ConditionTrue
			}
		}
		return false
	})
}

// checkWrittenBy: Service ns/name was written by its installation own
// (when it has an address) and never by other: no field of other's
// field managers, no event of other's sources.
func checkWrittenBy(t *testing.T, l *lab.Lab, ns, name string, own, other installation) {
	t.Helper()
	ctx := context.Background()
	s, err := l.Client().CoreV1().Services(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var managers []string
	for _, mf := range s.ManagedFields {
		managers = append(managers, mf.Manager)
	}
	if slices.Contains(managers, other.controller) || slices.Contains(managers, other.speaker) {
		t.Fatalf("Service %s (installation %s) has fields of installation %s: managers %v", name, own.name, other.name, managers)
	}
	if !slices.Contains(managers, own.controller) {
		t.Errorf("Service %s: no field of its installation's %s: managers %v", name, own.controller, managers)
	}
	events, err := l.Client().CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=" + name})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range events.Items {
		if src := eventSource(e); src == other.controller || src == other.speaker {
			t.Fatalf("Service %s (installation %s) has event %s from %s: %s", name, own.name, e.Reason, src, e.Message)
		}
	}
}

func eventSource(e corev1.Event) string {
	if e.Source.Component != "" {
		return e.Source.Component
	}
	return e.ReportingController
}

// checkConfigStatus: each installation wrote the status of its own pool
// and advertisement and never touched the other's.
func checkConfigStatus(t *testing.T, l *lab.Lab) {
	t.Helper()
	hc := heraldClient(t, l)
	ctx := context.Background()
	labkit.Eventually(t, 30*time.Second, "each pool and advertisement written by its own installation alone", func() bool {
		ok := true
		for _, inst := range []installation{defaultInst, blueInst} {
			other := blueInst
			if inst.name == blueName {
				other = defaultInst
			}
			p, err := hc.HeraldV1beta1().IPAddressPools().Get(ctx, inst.pool, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			a, err := hc.HeraldV1beta1().L2Advertisements().Get(ctx, inst.pool, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			for what, mfs := range map[string][]metav1.ManagedFieldsEntry{"IPAddressPool " + p.Name: p.ManagedFields, "L2Advertisement " + a.Name: a.ManagedFields} {
				var managers []string
				for _, mf := range mfs {
					managers = append(managers, mf.Manager)
				}
				if slices.Contains(managers, other.controller) {
					t.Fatalf("%s (installation %s) written by %s: managers %v", what, inst.name, other.controller, managers)
				}
				ok = ok && slices.Contains(managers, inst.controller)
			}
		}
		return ok
	})
}

// checkSpeakerStatuses: every node has one SpeakerStatus per
// installation, the blue ones named <node>.blue and labelled; each lists
// its installation's address where that node owns it, never the other's.
func checkSpeakerStatuses(t *testing.T, l *lab.Lab, vips map[string]netip.Addr, owners map[string]string) {
	t.Helper()
	hc := heraldClient(t, l)
	want := map[string]string{"plain": owners["plain"], "blue": owners["blue"] + blueInst.statusSuffix}
	labkit.Eventually(t, 30*time.Second, fmt.Sprintf("SpeakerStatuses %v listing their own installation's address", want), func() bool {
		list, err := hc.HeraldV1beta1().SpeakerStatuses().List(context.Background(), metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		byName := map[string]*v1beta1.SpeakerStatus{}
		for i := range list.Items {
			byName[list.Items[i].Name] = &list.Items[i]
		}
		for _, n := range l.Nodes() {
			d, b := byName[n.Name], byName[n.Name+blueInst.statusSuffix]
			if d == nil || b == nil {
				return false
			}
			if _, ok := d.Labels[v1beta1.LabelInstallation]; ok || b.Labels[v1beta1.LabelInstallation] != blueName {
				t.Fatalf("SpeakerStatus labels: %s %v, %s %v", d.Name, d.Labels, b.Name, b.Labels)
			}
		}
		for name, vip := range vips {
			for sname, s := range byName {
				lists := slices.ContainsFunc(s.Status.L2, func(a v1beta1.L2AnnouncementStatus) bool { return a.Address == vip.String() })
				if lists && sname != want[name] {
					t.Fatalf("SpeakerStatus %s lists %s (Service %s), which only %s may", sname, vip, name, want[name])
				}
				if !lists && sname == want[name] {
					return false
				}
			}
		}
		var names []string
		for n := range byName {
			names = append(names, n)
		}
		slices.Sort(names)
		t.Logf("SpeakerStatuses: %s", strings.Join(names, ", "))
		return true
	})
}

func heraldClient(t *testing.T, l *lab.Lab) versioned.Interface {
	t.Helper()
	hc, err := versioned.NewForConfig(l.AdminConfig())
	if err != nil {
		t.Fatal(err)
	}
	return hc
}
