package lab

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/herald-lb/herald/test/labkit"
	"github.com/herald-lb/herald/test/testenv"
)

// NodeMonitorGracePeriod is kube-controller-manager's
// --node-monitor-grace-period in the lab: a node whose kubelet stops
// renewing its Lease and posting status is marked NotReady (Unknown) this
// long after its last heartbeat. Production clusters use 40-50 s with a
// heartbeat every 10 s; the lab's is short so that tests of a stopped
// kubelet finish quickly, and it is still five times the lab kubelets'
// heartbeat (their Lease, nodeLeaseDurationSeconds 8, is renewed every
// 2 s) so that a busy machine does not flap nodes: a kubelet may fall 8 s
// behind. (A grace of 16 s over the kubelet's default 10 s heartbeat
// would leave only 6 s of slack and a NotReady 16 s after the stop.)
const NodeMonitorGracePeriod = 10 * time.Second

// startClusterControllers runs kube-controller-manager (every controller:
// endpointslice, node lifecycle, daemonset, deployment, garbage
// collector, ...) and kube-scheduler in the root namespace, talking to
// the API server on the lab's leg, serving nothing outside loopback.
func (l *Lab) startClusterControllers(ctx context.Context) error {
	start := time.Now()
	kcm, err := testenv.Binary("kube-controller-manager")
	if err != nil {
		return err
	}
	sched, err := testenv.Binary("kube-scheduler")
	if err != nil {
		return err
	}
	kcmConfig, err := l.Kubeconfig("kube-controller-manager", "system:kube-controller-manager")
	if err != nil {
		return err
	}
	schedConfig, err := l.Kubeconfig("kube-scheduler", "system:kube-scheduler")
	if err != nil {
		return err
	}
	pki := l.cp.PKI
	caKey, err := pki.WriteCAKey()
	if err != nil {
		return err
	}
	grace := NodeMonitorGracePeriod.String()
	if _, err := l.spawn(labkit.ProcessOptions{Name: "kube-controller-manager", Argv: []string{kcm,
		"--kubeconfig=" + kcmConfig, "--authentication-kubeconfig=" + kcmConfig, "--authorization-kubeconfig=" + kcmConfig,
		"--controllers=*", "--use-service-account-credentials",
		"--service-account-private-key-file=" + filepath.Join(pki.Dir, "sa.key"),
		"--root-ca-file=" + filepath.Join(pki.Dir, "ca.crt"),
		"--cluster-signing-cert-file=" + filepath.Join(pki.Dir, "ca.crt"), "--cluster-signing-key-file=" + caKey,
		"--leader-elect=false", "--bind-address=127.0.0.1", "--secure-port=0",
		"--node-monitor-period=2s", "--node-monitor-grace-period=" + grace,
		"--allocate-node-cidrs=false", "--cluster-cidr=" + ClusterCIDRs, "--service-cluster-ip-range=" + ServiceCIDRs,
		"--endpointslice-updates-batch-period=0s",
		"--v=1",
	}}); err != nil {
		return err
	}
	if _, err := l.spawn(labkit.ProcessOptions{Name: "kube-scheduler", Argv: []string{sched,
		"--kubeconfig=" + schedConfig, "--authentication-kubeconfig=" + schedConfig, "--authorization-kubeconfig=" + schedConfig,
		"--leader-elect=false", "--bind-address=127.0.0.1", "--secure-port=0", "--v=1",
	}}); err != nil {
		return err
	}
	l.addTiming("controller-manager and scheduler started", start)
	return nil
}

// nodeDir is where a node keeps containerd's and the kubelet's state.
func (l *Lab) nodeDir(n Node) string { return filepath.Join(l.dir, "nodes", n.Name) }

// nodeCgroup is the node's cgroup root (kubelet cgroupRoot), one per run
// and node so that teardown finds exactly the lab's.
func (l *Lab) nodeCgroup(n Node) string { return nsPrefix + l.id + "-" + n.Name }

// cgroupV1Controllers are the hierarchies a node's mount namespace mounts
// (trap 1 of the recipe: `ip netns exec` mounts a fresh /sys without them).
var cgroupV1Controllers = []string{"cpuset", "cpu", "cpuacct", "blkio", "memory", "devices", "freezer", "pids"}

// startNodes brings up every node's containerd, imports the lab images,
// starts the kubelets and waits until every Node is Ready.
func (l *Lab) startNodes(ctx context.Context, images []string) error {
	start := time.Now()
	if err := parallel(len(l.nodes), func(i int) error { return l.startContainerd(ctx, l.nodes[i]) }); err != nil {
		return err
	}
	l.addTiming("containerd up", start)
	if err := l.ImportImages(ctx, images...); err != nil {
		return err
	}
	l.addTiming("lab images imported", start)
	for _, n := range l.nodes {
		if err := l.StartKubelet(ctx, n.Name); err != nil {
			return err
		}
	}
	if err := l.waitNodesUp(ctx); err != nil {
		return err
	}
	l.addTiming("nodes Ready", start)
	return nil
}

// waitNodesUp waits for every node to be Ready at bring-up. A kubelet
// that exited meanwhile is started again once, with its log's last lines
// logged (one node in about thirty bring-ups never registered, in CI); if
// a node still is not Ready, the error carries its kubelet's last lines.
func (l *Lab) waitNodesUp(ctx context.Context) error {
	err := l.WaitNodesReady(ctx, 90*time.Second)
	if err == nil {
		return nil
	}
	for _, n := range l.nodes {
		if l.process("kubelet-"+n.Name) != nil {
			continue
		}
		l.log.Warn("kubelet exited during bring-up; starting it again", "node", n.Name,
			"log", labkit.TailFile(l.logPath("kubelet-"+n.Name), 20))
		if serr := l.StartKubelet(ctx, n.Name); serr != nil {
			return errors.Join(err, serr)
		}
	}
	if err = l.WaitNodesReady(ctx, 90*time.Second); err == nil {
		return nil
	}
	var tails []string
	for _, n := range l.nodes {
		if node, gerr := l.kube.CoreV1().Nodes().Get(ctx, n.Name, metav1.GetOptions{}); gerr != nil || !NodeIsReady(node) {
			tails = append(tails, fmt.Sprintf("kubelet-%s (running: %v):\n%s", n.Name, l.process("kubelet-"+n.Name) != nil,
				labkit.TailFile(l.logPath("kubelet-"+n.Name), 30)))
		}
	}
	return fmt.Errorf("%w\n%s", err, strings.Join(tails, "\n"))
}

// startContainerd writes the node's containerd and CNI configuration and
// starts containerd inside the node's namespace, in a mount namespace of
// its own where the cgroup hierarchies are mounted (the kubelet joins it).
func (l *Lab) startContainerd(ctx context.Context, n Node) error {
	dir := l.nodeDir(n)
	for _, d := range []string{"containerd/root", "containerd/state", "containerd/opt", "runc", "cni/net.d", "cni/ipam", "kubelet", "pod-logs"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			return err
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "containerd.toml"), []byte(containerdConfig(dir)), 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "cni/net.d/10-herald-lab.conflist"), []byte(cniConfig(n, dir)), 0o644); err != nil {
		return err
	}
	script := filepath.Join(dir, "containerd.sh")
	if err := os.WriteFile(script, []byte(l.containerdScript(n)), 0o755); err != nil {
		return err
	}
	p, err := l.spawn(labkit.ProcessOptions{Name: "containerd-" + n.Name, NS: n.NS, Argv: []string{"/bin/sh", script}})
	if err != nil {
		return err
	}
	deadline := time.Now().Add(time.Minute)
	for {
		if _, err := l.Ctr(ctx, n.Name, "version"); err == nil {
			return nil
		}
		if p.Exited() || time.Now().After(deadline) {
			return fmt.Errorf("containerd on %s did not start (%v); last log lines:\n%s", n.Name, p.Err(), p.Tail(20))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// containerdScript mounts the cgroup hierarchies in the fresh /sys that
// `ip netns exec` gave it, creates the node's cgroup root under each and
// execs containerd (so the script's PID is containerd's).
func (l *Lab) containerdScript(n Node) string {
	cg := l.nodeCgroup(n)
	var b strings.Builder
	b.WriteString("set -eu\nmount -t tmpfs -o mode=755 cgroup /sys/fs/cgroup\n")
	for _, c := range cgroupV1Controllers {
		fmt.Fprintf(&b, "mkdir -p /sys/fs/cgroup/%[1]s && mount -t cgroup -o %[1]s cgroup /sys/fs/cgroup/%[1]s && mkdir -p /sys/fs/cgroup/%[1]s/%[2]s\n", c, cg)
	}
	fmt.Fprintf(&b, "mkdir -p /sys/fs/cgroup/systemd && mount -t cgroup -o none,name=systemd cgroup /sys/fs/cgroup/systemd && mkdir -p /sys/fs/cgroup/systemd/%s\n", cg)
	b.WriteString("mkdir -p /sys/fs/cgroup/unified && mount -t cgroup2 none /sys/fs/cgroup/unified\n")
	fmt.Fprintf(&b, "cat /sys/fs/cgroup/cpuset/cpuset.cpus > /sys/fs/cgroup/cpuset/%[1]s/cpuset.cpus\ncat /sys/fs/cgroup/cpuset/cpuset.mems > /sys/fs/cgroup/cpuset/%[1]s/cpuset.mems\n", cg)
	fmt.Fprintf(&b, "echo %d > /sys/fs/cgroup/cpu/%s/cpu.shares\n", l.opts.CPUShares, cg)
	fmt.Fprintf(&b, "exec containerd --config %s\n", filepath.Join(l.nodeDir(n), "containerd.toml"))
	return b.String()
}

func containerdConfig(dir string) string {
	return fmt.Sprintf(`version = 2
root = "%[1]s/containerd/root"
state = "%[1]s/containerd/state"
disabled_plugins = ["io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.devmapper", "io.containerd.snapshotter.v1.zfs"]

[grpc]
  address = "%[1]s/containerd.sock"
[ttrpc]
  address = "%[1]s/containerd.sock.ttrpc"

[plugins."io.containerd.internal.v1.opt"]
  path = "%[1]s/containerd/opt"

[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "%[2]s"
  netns_mounts_under_state_dir = true
  disable_apparmor = true
  restrict_oom_score_adj = true
  stream_server_address = "127.0.0.1"
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
        BinaryName = "/usr/sbin/runc"
        Root = "%[1]s/runc"
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "%[1]s/cni/net.d"
`, dir, PauseImage)
}

// cniConfig: a bridge cni0 in the node's namespace with the node's pod
// subnets (host-local IPAM, state in the node directory); the other
// nodes' pod subnets are routed via those nodes (nodeRoutes). Connections
// pods open to anything outside their node's subnet are masqueraded
// (ipMasq) to the node's address: the API server in the root namespace
// must answer a pod at an address on its own leg, never through the
// root namespace's default route.
func cniConfig(n Node, dir string) string {
	return fmt.Sprintf(`{
  "cniVersion": "0.4.0",
  "name": "herald-lab",
  "plugins": [
    {"type": "bridge", "bridge": "cni0", "isGateway": true, "ipMasq": true, "hairpinMode": true,
     "ipam": {"type": "host-local", "dataDir": "%s/cni/ipam",
              "ranges": [[{"subnet": "%s"}], [{"subnet": "%s"}]],
              "routes": [{"dst": "0.0.0.0/0"}, {"dst": "::/0"}]}},
    {"type": "portmap", "capabilities": {"portMappings": true}}
  ]
}
`, dir, n.Pod.CIDRv4, n.Pod.CIDRv6)
}

// Ctr runs containerd's ctr against a node's containerd, in the k8s.io
// namespace.
func (l *Lab) Ctr(ctx context.Context, node string, args ...string) (string, error) {
	n, err := l.Node(node)
	if err != nil {
		return "", err
	}
	argv := append([]string{"ctr", "--address", filepath.Join(l.nodeDir(n), "containerd.sock"), "-n", "k8s.io"}, args...)
	return run(ctx, argv...)
}

// WaitNodesReady waits until every node's Ready condition is True and the
// node lifecycle controller has taken its not-ready and unreachable taints
// away (so the controllers are at work, not only the kubelets; a node
// whose kubelet was stopped keeps the unreachable taint, NoExecute, until
// the controller's next pass after it turned Ready again).
func (l *Lab) WaitNodesReady(ctx context.Context, timeout time.Duration) error {
	var last string
	err := labkit.Poll(ctx, timeout, "every node Ready and untainted", func() (bool, error) {
		nodes, err := l.kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err != nil {
			last = err.Error()
			return false, nil
		}
		ready := 0
		var states []string
		for _, n := range nodes.Items {
			ok := NodeIsReady(&n) && !slices.ContainsFunc(n.Spec.Taints, func(t corev1.Taint) bool {
				return t.Key == corev1.TaintNodeNotReady || t.Key == corev1.TaintNodeUnreachable
			})
			if ok {
				ready++
			}
			states = append(states, fmt.Sprintf("%s ready=%v", n.Name, ok))
		}
		last = strings.Join(states, ", ")
		return ready == len(l.nodes) && len(nodes.Items) == len(l.nodes), nil
	})
	if err != nil {
		return fmt.Errorf("nodes not Ready (%s): %w", last, err)
	}
	return nil
}

// NodeIsReady reports whether the node's Ready condition is True.
func NodeIsReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
