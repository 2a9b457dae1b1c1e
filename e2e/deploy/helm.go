package deploy

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/herald-lb/herald/e2e/lab"
	"github.com/herald-lb/herald/test/labkit"
	"github.com/herald-lb/herald/test/testenv"
)

// HelmRelease is the release InstallHelm installs.
const HelmRelease = "herald"

// InstallHelm installs Herald the way docs/operations.md tells a Helm
// user: the namespace created and labelled for privileged pods with
// kubectl, then `helm install herald charts/herald -n herald-system` with
// the images built from this checkout and the extra values (helm flags
// such as "--set", "logLevel=debug"). It waits as Install does.
func InstallHelm(ctx context.Context, l *lab.Lab, images *Images, values ...string) (*Herald, error) {
	return install(ctx, l, images, func(h *Herald, root string) error {
		if _, err := h.Kubectl(ctx, "create", "namespace", Namespace); err != nil {
			return err
		}
		if _, err := h.Kubectl(ctx, "label", "namespace", Namespace, "pod-security.kubernetes.io/enforce=privileged"); err != nil {
			return err
		}
		args := append([]string{"install", HelmRelease, filepath.Join(root, "charts", "herald"), "-n", Namespace}, h.ImageValues()...)
		_, err := h.Helm(ctx, append(args, values...)...)
		return err
	})
}

// ImageValues are the chart values naming the images built from this
// checkout.
func (h *Herald) ImageValues() []string {
	var out []string
	for _, c := range Components {
		repo, tag := splitRef(h.Images.Refs[c])
		out = append(out, "--set", "image."+c+".repository="+repo, "--set", "image."+c+".tag="+tag)
	}
	return out
}

// splitRef splits an image reference into repository and tag.
func splitRef(ref string) (repo, tag string) {
	i := strings.LastIndex(ref, ":")
	if i < 0 || strings.Contains(ref[i:], "/") {
		return ref, ""
	}
	return ref[:i], ref[i+1:]
}

// Helm runs the pinned helm (hack/build-programs.sh) as the lab's admin and
// returns its output.
func (h *Herald) Helm(ctx context.Context, args ...string) (string, error) {
	helm, err := testenv.Tool("helm")
	if err != nil {
		return "", err
	}
	cmd := exec.CommandContext(ctx, helm, append([]string{"--kubeconfig", h.Lab.AdminKubeconfig()}, args...)...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("helm %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out), nil
}

// HelmUpgrade runs `helm upgrade --reuse-values` of the release with the
// extra values and waits for the rollout.
func (h *Herald) HelmUpgrade(ctx context.Context, values ...string) error {
	root, err := testenv.RepoRoot()
	if err != nil {
		return err
	}
	args := append([]string{"upgrade", HelmRelease, filepath.Join(root, "charts", "herald"), "-n", Namespace, "--reuse-values"}, values...)
	if _, err := h.Helm(ctx, args...); err != nil {
		return err
	}
	return h.WaitRollout(ctx, 5*time.Minute)
}

// HelmUninstall runs `helm uninstall` of the release and waits until the
// release's pods are gone.
func (h *Herald) HelmUninstall(ctx context.Context) error {
	if _, err := h.Helm(ctx, "uninstall", HelmRelease, "-n", Namespace); err != nil {
		return err
	}
	var left string
	err := labkit.Poll(ctx, 2*time.Minute, "Herald's Pods gone after uninstall", func() (bool, error) {
		// terminating pods count: uninstall is done when they are gone
		pods, err := h.Lab.Client().CoreV1().Pods(Namespace).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/name=herald"})
		if err != nil {
			left = err.Error()
			return false, nil
		}
		var names []string
		for _, p := range pods.Items {
			names = append(names, p.Name)
		}
		left = strings.Join(names, ", ")
		return len(names) == 0, nil
	})
	if err != nil {
		return fmt.Errorf("Herald's pods still there after helm uninstall (%s): %w", left, err)
	}
	return nil
}
