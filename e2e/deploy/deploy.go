package deploy

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/herald-lb/herald/e2e/lab"
	"github.com/herald-lb/herald/internal/service"
	"github.com/herald-lb/herald/internal/testenv"
)

// Namespace is Herald's namespace in the manifests.
const Namespace = "herald-system"

// Herald is Herald running in a lab.
type Herald struct {
	Lab        *lab.Lab
	Bin        *Binaries
	Controller *lab.Process
	Speakers   map[string]*lab.Process
	// Kubeconfigs of the controller and speaker ServiceAccounts.
	ControllerKubeconfig, SpeakerKubeconfig string
	// KeyFile holds the member-list key, as the Secret volume would.
	KeyFile string
	dir     string
}

// Install applies the namespace and RBAC manifests (the lab installed the
// CRDs) and prepares ServiceAccount kubeconfigs. Nothing runs yet.
func Install(ctx context.Context, l *lab.Lab, bin *Binaries) (*Herald, error) {
	if err := bin.Build(); err != nil {
		return nil, err
	}
	root, err := testenv.RepoRoot()
	if err != nil {
		return nil, err
	}
	h := &Herald{Lab: l, Bin: bin, Speakers: map[string]*lab.Process{}}
	h.dir = filepath.Join(l.Dir(), "herald")
	if err := os.MkdirAll(h.dir, 0o755); err != nil {
		return nil, err
	}
	m := filepath.Join(root, "manifests")
	for _, f := range []string{"namespace.yaml", "rbac/controller.yaml", "rbac/speaker.yaml"} {
		if _, err := h.Kubectl(ctx, "apply", "--server-side", "--field-manager=herald-e2e", "-f", filepath.Join(m, f)); err != nil {
			return nil, err
		}
	}
	if h.ControllerKubeconfig, err = l.ServiceAccountKubeconfig(ctx, Namespace, "herald-controller"); err != nil {
		return nil, err
	}
	if h.SpeakerKubeconfig, err = l.ServiceAccountKubeconfig(ctx, Namespace, "herald-speaker"); err != nil {
		return nil, err
	}
	h.KeyFile = filepath.Join(h.dir, "memberlist-key")
	return h, nil
}

// Kubectl runs the pinned kubectl as the lab's admin.
func (h *Herald) Kubectl(ctx context.Context, args ...string) (string, error) {
	kubectl, err := testenv.Binary("kubectl")
	if err != nil {
		return "", err
	}
	cmd := exec.CommandContext(ctx, kubectl, append([]string{"--kubeconfig", h.Lab.AdminKubeconfig()}, args...)...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out), nil
}

// Apply applies YAML (Herald configuration objects, Services, ...) as the
// lab's admin with server-side apply.
func (h *Herald) Apply(ctx context.Context, yaml string) error {
	f := filepath.Join(h.dir, fmt.Sprintf("apply-%d.yaml", time.Now().UnixNano()))
	if err := os.WriteFile(f, []byte(yaml), 0o644); err != nil {
		return err
	}
	defer os.Remove(f)
	_, err := h.Kubectl(ctx, "apply", "--server-side", "--force-conflicts", "--field-manager=herald-e2e", "-f", f)
	return err
}

// StartController runs the controller in the root namespace with its
// ServiceAccount's identity, and waits for the member-list Secret it
// creates.
func (h *Herald) StartController(ctx context.Context, extra ...string) error {
	args := append([]string{h.Bin.Controller, "--kubeconfig=" + h.ControllerKubeconfig, "--namespace=" + Namespace,
		"--metrics-addr=" + netip.AddrPortFrom(netip.MustParseAddr(lab.RootIPv4), 7472).String(), "--health-addr=", "--log-level=info"}, extra...)
	p, err := h.Lab.Start(lab.Root, "controller", args, nil)
	if err != nil {
		return err
	}
	h.Controller = p
	return h.writeKeyFile(ctx)
}

func (h *Herald) writeKeyFile(ctx context.Context) error {
	return wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 60*time.Second, true, func(ctx context.Context) (bool, error) {
		s, err := h.Lab.Client().CoreV1().Secrets(Namespace).Get(ctx, "herald-memberlist", metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		return true, os.WriteFile(h.KeyFile, s.Data["key"], 0o600)
	})
}

// SpeakerArgs are the command line of a node's speaker.
func (h *Herald) SpeakerArgs(node string, extra ...string) ([]string, error) {
	n, err := h.Lab.Node(node)
	if err != nil {
		return nil, err
	}
	return append([]string{h.Bin.Speaker, "--node-name=" + node, "--kubeconfig=" + h.SpeakerKubeconfig, "--namespace=" + Namespace,
		"--metrics-addr=" + netip.AddrPortFrom(n.IPv4, 7472).String(), "--health-addr=" + netip.AddrPortFrom(n.IPv4, 7473).String(),
		"--memberlist-key-file=" + h.KeyFile, "--log-level=debug"}, extra...), nil
}

// StartSpeaker runs a node's speaker in its namespace.
func (h *Herald) StartSpeaker(node string, extra ...string) (*lab.Process, error) {
	args, err := h.SpeakerArgs(node, extra...)
	if err != nil {
		return nil, err
	}
	p, err := h.Lab.Start(node, "speaker-"+node, args, []string{"NODE_NAME=" + node})
	if err != nil {
		return nil, err
	}
	h.Speakers[node] = p
	return p, nil
}

// StartSpeakers runs a speaker on every node.
func (h *Herald) StartSpeakers(extra ...string) error {
	for _, n := range h.Lab.Nodes() {
		if _, err := h.StartSpeaker(n.Name, extra...); err != nil {
			return err
		}
	}
	return nil
}

// Heal brings every node's link up and starts a speaker on each node where
// none runs (a test stopped, killed or cut it off), so that the next test
// starts with all of Herald up.
func (h *Herald) Heal(ctx context.Context) error {
	for _, n := range h.Lab.Nodes() {
		if err := h.Lab.SetLink(ctx, n.Name, true); err != nil {
			return err
		}
		if p := h.Speakers[n.Name]; p == nil || p.Exited() {
			if _, err := h.StartSpeaker(n.Name); err != nil {
				return err
			}
		}
	}
	return nil
}

// Stop stops every Herald process (SIGTERM); the lab removes the scratch
// files with its run directory.
func (h *Herald) Stop() {
	for _, p := range h.Speakers {
		_ = p.Stop()
	}
	if h.Controller != nil {
		_ = h.Controller.Stop()
	}
}

// Start installs Herald in the lab, applies config (YAML of Herald
// objects), and starts the controller and a speaker on every node.
func Start(ctx context.Context, l *lab.Lab, bin *Binaries, config string) (*Herald, error) {
	h, err := Install(ctx, l, bin)
	if err != nil {
		return nil, err
	}
	if err := h.Apply(ctx, config); err != nil {
		return nil, err
	}
	if err := h.StartController(ctx); err != nil {
		return nil, err
	}
	return h, h.StartSpeakers()
}

// CreateService creates a Service (with its namespace), gives it pods on
// nodes (the lab writes its EndpointSlices), and waits until Herald gives
// it an address per IP family; the addresses are returned in status order.
func (h *Herald) CreateService(ctx context.Context, svc *corev1.Service, nodes ...string) (*corev1.Service, []netip.Addr, error) {
	created, err := h.Lab.CreateService(ctx, svc)
	if err != nil {
		return nil, nil, err
	}
	if len(nodes) > 0 {
		if err := h.Lab.SetEndpoints(ctx, created, nodes...); err != nil {
			return created, nil, err
		}
	}
	var ips []netip.Addr
	want := len(created.Spec.IPFamilies)
	err = wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		s, err := h.Lab.Client().CoreV1().Services(created.Namespace).Get(ctx, created.Name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		ips = service.IngressIPs(s)
		return len(ips) == want, nil
	})
	if err != nil {
		return created, ips, fmt.Errorf("Service %s/%s has %v, want %d address(es): %w", created.Namespace, created.Name, ips, want, err)
	}
	return created, ips, nil
}
