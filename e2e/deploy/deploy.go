package deploy

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/herald-lb/herald/e2e/lab"
	"github.com/herald-lb/herald/internal/service"
	"github.com/herald-lb/herald/test/labkit"
	"github.com/herald-lb/herald/test/testenv"
)

// Namespace is Herald's namespace in the manifests.
const Namespace = "herald-system"

// The workloads of manifests/herald.yaml.
const (
	ControllerDeployment = "herald-controller"
	SpeakerDaemonSet     = "herald-speaker"
	speakerContainer     = "speaker"
	controllerContainer  = "controller"
)

// Herald is Herald installed in a lab the way a user installs it: its
// images imported into every node's containerd, manifests/herald.yaml
// applied with kubectl, the controller Deployment and the speaker
// DaemonSet rolled out.
type Herald struct {
	Lab    *lab.Lab
	Images *Images
	// Speakers are handles on each node's speaker Pod.
	Speakers map[string]*Speaker
	dir      string
}

// Install builds and imports the images, applies manifests/herald.yaml and
// waits until the controller and every speaker are updated and Ready and
// run the images built from this checkout.
func Install(ctx context.Context, l *lab.Lab, images *Images) (*Herald, error) {
	return install(ctx, l, images, func(h *Herald, root string) error {
		_, err := h.Kubectl(ctx, "apply", "--server-side", "--field-manager=herald-e2e", "-f", filepath.Join(root, "manifests", "herald.yaml"))
		return err
	})
}

// install builds and imports the images, lets apply create Herald's
// objects (root is the repository's root), and waits until the controller
// and every speaker are updated and Ready and run the images built from
// this checkout.
func install(ctx context.Context, l *lab.Lab, images *Images, apply func(h *Herald, root string) error) (*Herald, error) {
	start := time.Now()
	phase := func(name string) {
		l.Logger().Info("herald install phase done", "phase", name, "took", time.Since(start).Round(time.Millisecond))
		start = time.Now()
	}
	if err := images.Build(); err != nil {
		return nil, err
	}
	phase("images built")
	if err := l.ImportImages(ctx, images.List()...); err != nil {
		return nil, err
	}
	phase("images imported")
	root, err := testenv.RepoRoot()
	if err != nil {
		return nil, err
	}
	h, err := newHerald(l, images)
	if err != nil {
		return nil, err
	}
	if err := apply(h, root); err != nil {
		return nil, err
	}
	phase("applied")
	// Ready, not yet available: availability comes minReadySeconds later
	// and only paces a rolling update (which then waits for it).
	if err := h.WaitReady(ctx, 3*time.Minute); err != nil {
		return nil, err
	}
	phase("rolled out")
	return h, h.CheckImages(ctx)
}

// Attach returns a handle on Herald installed by other means (the
// takeover from MetalLB applies manifests/ piece by piece) with images
// already imported: it waits until the controller and every speaker are
// rolled out and run the images built from this checkout.
func Attach(ctx context.Context, l *lab.Lab, images *Images) (*Herald, error) {
	if err := images.Build(); err != nil {
		return nil, err
	}
	h, err := newHerald(l, images)
	if err != nil {
		return nil, err
	}
	if err := h.WaitRollout(ctx, 3*time.Minute); err != nil {
		return nil, err
	}
	return h, h.CheckImages(ctx)
}

func newHerald(l *lab.Lab, images *Images) (*Herald, error) {
	h := &Herald{Lab: l, Images: images, Speakers: map[string]*Speaker{}}
	h.dir = filepath.Join(l.Dir(), "herald")
	if err := os.MkdirAll(h.dir, 0o755); err != nil {
		return nil, err
	}
	for _, n := range l.Nodes() {
		h.Speakers[n.Name] = &Speaker{h: h, Node: n.Name}
	}
	return h, nil
}

// Start installs Herald and applies config (YAML of Herald objects).
func Start(ctx context.Context, l *lab.Lab, images *Images, config string) (*Herald, error) {
	h, err := Install(ctx, l, images)
	if err != nil {
		return nil, err
	}
	return h, h.Apply(ctx, config)
}

// Kubectl runs the pinned kubectl as the lab's admin.
func (h *Herald) Kubectl(ctx context.Context, args ...string) (string, error) {
	return h.Lab.Kubectl(ctx, args...)
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

// WaitRollout waits until the controller Deployment and the speaker
// DaemonSet have every replica updated, Ready and available (as kubectl
// rollout status does).
func (h *Herald) WaitRollout(ctx context.Context, timeout time.Duration) error {
	return h.waitRolledOut(ctx, timeout, true)
}

// WaitReady waits until the controller Deployment and the speaker
// DaemonSet have every replica updated and Ready: all of Herald is up.
// Unlike WaitRollout it does not wait for availability, which for the
// speakers comes minReadySeconds (10 s) after Ready and paces a rolling
// update; a test that starts one meanwhile sees the rollout wait for it.
func (h *Herald) WaitReady(ctx context.Context, timeout time.Duration) error {
	return h.waitRolledOut(ctx, timeout, false)
}

func (h *Herald) waitRolledOut(ctx context.Context, timeout time.Duration, available bool) error {
	var state string
	err := labkit.Poll(ctx, timeout, "Herald rolled out", func() (bool, error) {
		var ok bool
		ok, state = h.rolledOut(ctx, available)
		return ok, nil
	})
	if err != nil {
		return fmt.Errorf("Herald not rolled out (%s): %w", state, err)
	}
	return nil
}

func (h *Herald) rolledOut(ctx context.Context, available bool) (bool, string) {
	kube := h.Lab.Client()
	d, err := kube.AppsV1().Deployments(Namespace).Get(ctx, ControllerDeployment, metav1.GetOptions{})
	if err != nil {
		return false, err.Error()
	}
	ds, err := kube.AppsV1().DaemonSets(Namespace).Get(ctx, SpeakerDaemonSet, metav1.GetOptions{})
	if err != nil {
		return false, err.Error()
	}
	want := int32(1)
	if d.Spec.Replicas != nil {
		want = *d.Spec.Replicas
	}
	ds1 := ds.Status
	state := fmt.Sprintf("controller %d/%d ready, %d updated, %d total; speakers %d/%d ready, %d updated, %d available",
		d.Status.ReadyReplicas, want, d.Status.UpdatedReplicas, d.Status.Replicas,
		ds1.NumberReady, ds1.DesiredNumberScheduled, ds1.UpdatedNumberScheduled, ds1.NumberAvailable)
	ok := d.Status.ObservedGeneration >= d.Generation && d.Status.UpdatedReplicas == want && d.Status.ReadyReplicas == want &&
		d.Status.Replicas == want &&
		ds1.ObservedGeneration >= ds.Generation && ds1.DesiredNumberScheduled > 0 && ds1.UpdatedNumberScheduled == ds1.DesiredNumberScheduled &&
		ds1.NumberReady == ds1.DesiredNumberScheduled
	if available {
		ok = ok && d.Status.AvailableReplicas == want && ds1.NumberAvailable == ds1.DesiredNumberScheduled
	}
	return ok, state
}

// CheckImages checks that every Herald container runs the image built
// from this checkout (its image ID is the built image's digest).
func (h *Herald) CheckImages(ctx context.Context) error {
	pods, err := h.Lab.Client().CoreV1().Pods(Namespace).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/name=herald"})
	if err != nil {
		return err
	}
	for _, p := range pods.Items {
		for _, c := range p.Status.ContainerStatuses {
			want := h.Images.Digests[c.Name]
			if want == "" {
				continue
			}
			if !strings.Contains(c.ImageID, want) {
				return fmt.Errorf("pod %s container %s runs image %s (%s), not the one built from this checkout (%s)", p.Name, c.Name, c.Image, c.ImageID, want)
			}
		}
	}
	return nil
}

// Pods of a Herald component ("controller" or "speaker"), not terminating.
func (h *Herald) Pods(ctx context.Context, component string) ([]corev1.Pod, error) {
	pods, err := h.Lab.Client().CoreV1().Pods(Namespace).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/name=herald,app.kubernetes.io/component=" + component})
	if err != nil {
		return nil, err
	}
	var out []corev1.Pod
	for _, p := range pods.Items {
		if p.DeletionTimestamp == nil {
			out = append(out, p)
		}
	}
	return out, nil
}

// CreateService creates a Service (with its namespace), selects the
// backend pods on nodes (the endpointslice controller lists them), and
// waits until Herald gives it an address per IP family; the addresses are
// returned in status order.
func (h *Herald) CreateService(ctx context.Context, svc *corev1.Service, nodes ...string) (*corev1.Service, []netip.Addr, error) {
	created, err := h.Lab.CreateService(ctx, svc)
	if err != nil {
		return nil, nil, err
	}
	ips, err := h.ServeService(ctx, created, nodes...)
	return created, ips, err
}

// ServeService does the same for a Service that exists already.
func (h *Herald) ServeService(ctx context.Context, svc *corev1.Service, nodes ...string) ([]netip.Addr, error) {
	if len(nodes) > 0 {
		if err := h.Lab.SetEndpoints(ctx, svc, nodes...); err != nil {
			return nil, err
		}
	}
	var ips []netip.Addr
	want := len(svc.Spec.IPFamilies)
	if n, err := service.AddressCount(svc); err == nil && n > 1 {
		want *= n // herald.dev/address-count of each family
	}
	err := labkit.Poll(ctx, 30*time.Second, "the Service's addresses", func() (bool, error) {
		s, err := h.Lab.Client().CoreV1().Services(svc.Namespace).Get(ctx, svc.Name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		ips = service.IngressIPs(s)
		return len(ips) == want, nil
	})
	if err != nil {
		return ips, fmt.Errorf("Service %s/%s has %v, want %d address(es): %w", svc.Namespace, svc.Name, ips, want, err)
	}
	return ips, nil
}

// Heal brings every node's link, kubelet and kube-proxy up and waits until
// every node has a Ready speaker and the controller's replicas are Ready,
// so that the next test starts with all of Herald up.
func (h *Herald) Heal(ctx context.Context) error {
	for _, n := range h.Lab.Nodes() {
		if err := h.Lab.SetLink(ctx, n.Name, true); err != nil {
			return err
		}
		if err := h.Lab.EnsureKubelet(ctx, n.Name); err != nil {
			return err
		}
	}
	for _, n := range h.Lab.Nodes() {
		if err := h.Lab.EnsureKubeProxy(ctx, n.Name); err != nil {
			return err
		}
		if _, err := h.StartSpeaker(n.Name); err != nil {
			return err
		}
	}
	return h.WaitReady(ctx, 2*time.Minute)
}
