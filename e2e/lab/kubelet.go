package lab

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/herald-lb/herald/test/labkit"
	"github.com/herald-lb/herald/test/testenv"
)

// StartKubelet starts the node's kubelet inside its containerd's mount
// and network namespaces (trap 2 of the recipe: runc must see the
// kubelet's Secret and token mounts). The node registers itself; a
// kubelet stopped with StopKubelet starts again with the same state.
func (l *Lab) StartKubelet(ctx context.Context, node string) error {
	n, err := l.Node(node)
	if err != nil {
		return err
	}
	containerd := l.process("containerd-" + n.Name)
	if containerd == nil {
		return fmt.Errorf("kubelet on %s: its containerd is not running", node)
	}
	bin, err := testenv.Binary("kubelet")
	if err != nil {
		return err
	}
	dir := l.nodeDir(n)
	kubeconfig, err := l.Kubeconfig("kubelet-"+n.Name, "system:node:"+n.Name, "system:nodes")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "resolv.conf"), nil, 0o644); err != nil {
		return err
	}
	config := filepath.Join(dir, "kubelet.yaml")
	if err := os.WriteFile(config, []byte(l.kubeletConfig(n)), 0o644); err != nil {
		return err
	}
	argv := []string{"nsenter", "-t", strconv.Itoa(containerd.PID()), "-m", "-n", "--", bin,
		"--config=" + config, "--kubeconfig=" + kubeconfig,
		"--root-dir=" + filepath.Join(dir, "kubelet"), "--cert-dir=" + filepath.Join(dir, "kubelet", "pki"),
		"--hostname-override=" + n.Name, "--node-ip=" + n.IPv4.String() + "," + n.IPv6.String(),
		"--v=1",
	}
	_, err = l.spawn(labkit.ProcessOptions{Name: "kubelet-" + n.Name, Argv: argv})
	return err
}

// StopKubelet stops the node's kubelet (SIGTERM, then SIGKILL); its pods
// keep running, as on a real node whose kubelet died, and the node
// lifecycle controller marks the node NotReady after
// NodeMonitorGracePeriod.
func (l *Lab) StopKubelet(node string) error {
	p := l.process("kubelet-" + node)
	if p == nil {
		return fmt.Errorf("no kubelet is running on %s", node)
	}
	return p.Stop()
}

// process is the running lab process named name, or nil.
func (l *Lab) process(name string) *labkit.Process {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, p := range l.procs {
		if p.Name == name && !p.Exited() {
			return p
		}
	}
	return nil
}

// kubeletConfig is the recipe's KubeletConfiguration for one node.
func (l *Lab) kubeletConfig(n Node) string {
	dir := l.nodeDir(n)
	return fmt.Sprintf(`apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
failCgroupV1: false
cgroupDriver: cgroupfs
cgroupRoot: /%[2]s
cgroupsPerQOS: true
enforceNodeAllocatable: []
failSwapOn: false
containerRuntimeEndpoint: unix://%[1]s/containerd.sock
address: %[3]s
port: 10250
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: 10248
podLogsDir: %[1]s/pod-logs
resolvConf: %[1]s/resolv.conf
clusterDomain: cluster.local
serializeImagePulls: false
nodeStatusUpdateFrequency: 2s
nodeLeaseDurationSeconds: 8
nodeStatusReportFrequency: 10s
syncFrequency: 10s
fileCheckFrequency: 10s
shutdownGracePeriod: 0s
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
evictionHard: {memory.available: 100Mi, nodefs.available: "1%%", imagefs.available: "1%%"}
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: true}
  x509: {clientCAFile: %[4]s}
authorization: {mode: Webhook}
`, dir, l.nodeCgroup(n), n.IPv4, filepath.Join(l.cp.PKI.Dir, "ca.crt"))
}

// EnsureKubelet starts the node's kubelet when it is not running.
func (l *Lab) EnsureKubelet(ctx context.Context, node string) error {
	if l.process("kubelet-"+node) != nil {
		return nil
	}
	return l.StartKubelet(ctx, node)
}

// ContainerPID is the PID, in the root PID namespace, of a running
// container's main process on node, by its CRI container ID (a Pod's
// status.containerStatuses[].containerID, with or without the
// containerd:// prefix).
func (l *Lab) ContainerPID(ctx context.Context, node, containerID string) (int, error) {
	id := strings.TrimPrefix(containerID, "containerd://")
	out, err := l.Ctr(ctx, node, "tasks", "ls")
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) >= 3 && f[0] == id {
			if f[2] != "RUNNING" {
				return 0, fmt.Errorf("container %s on %s is %s", id, node, f[2])
			}
			return strconv.Atoi(f[1])
		}
	}
	return 0, fmt.Errorf("no task for container %s on %s", id, node)
}
