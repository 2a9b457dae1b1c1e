package lab

import (
	"context"
	"fmt"
	"os/exec"
	"strings"

	"github.com/herald-lb/herald/test/testenv"
)

// Kubectl runs the pinned kubectl as the lab's admin and returns its
// output.
func (cl *Cluster) Kubectl(ctx context.Context, args ...string) (string, error) {
	kubectl, err := testenv.Binary("kubectl")
	if err != nil {
		return "", err
	}
	cmd := exec.CommandContext(ctx, kubectl, append([]string{"--kubeconfig", cl.adminKubeconfig}, args...)...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out), nil
}

// Cordon marks the node unschedulable (kubectl cordon).
func (cl *Cluster) Cordon(ctx context.Context, node string) error {
	_, err := cl.Kubectl(ctx, "cordon", node)
	return err
}

// Uncordon makes the node schedulable again (kubectl uncordon).
func (cl *Cluster) Uncordon(ctx context.Context, node string) error {
	_, err := cl.Kubectl(ctx, "uncordon", node)
	return err
}

// Drain cordons the node and evicts its pods as an operator does before
// maintenance (kubectl drain; DaemonSet pods stay).
func (cl *Cluster) Drain(ctx context.Context, node string) error {
	_, err := cl.Kubectl(ctx, "drain", node, "--ignore-daemonsets", "--delete-emptydir-data", "--grace-period=5", "--timeout=120s")
	return err
}

// RolloutRestart restarts a workload ("daemonset/herald-speaker") the way
// `kubectl rollout restart` does, and waits for the rollout.
func (cl *Cluster) RolloutRestart(ctx context.Context, namespace, workload string) error {
	if _, err := cl.Kubectl(ctx, "-n", namespace, "rollout", "restart", workload); err != nil {
		return err
	}
	_, err := cl.Kubectl(ctx, "-n", namespace, "rollout", "status", workload, "--timeout=300s")
	return err
}
