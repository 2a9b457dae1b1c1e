package lab

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/netip"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// PodGets is what a client pod (GetFromPod) saw: its own addresses and,
// per URL in order, the pod server's answer.
type PodGets struct {
	Pod        string
	IPv4, IPv6 netip.Addr
	Answers    []PodAnswer
}

// GetFromPod runs a one-shot pod of the backend image on node in
// namespace that fetches http://addr:port/ for each addr (retrying each
// for up to 30 s), and returns its answers: traffic from inside the
// cluster, which the node's kube-proxy handles. The pod is deleted before
// it returns.
func (l *Lab) GetFromPod(ctx context.Context, namespace, node string, port int, addrs ...netip.Addr) (PodGets, error) {
	if err := l.ensureNamespace(ctx, namespace); err != nil {
		return PodGets{}, err
	}
	urls := make([]string, len(addrs))
	for i, a := range addrs {
		urls[i] = "http://" + netip.AddrPortFrom(a, uint16(port)).String() + "/"
	}
	never, grace := corev1.RestartPolicyNever, int64(0)
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, GenerateName: "client-" + node + "-", Labels: map[string]string{labelApp: "lab-client"}},
		Spec: corev1.PodSpec{
			NodeSelector:                  map[string]string{corev1.LabelHostname: node},
			RestartPolicy:                 never,
			TerminationGracePeriodSeconds: &grace,
			Containers: []corev1.Container{{
				Name: "client", Image: BackendImage, ImagePullPolicy: corev1.PullNever,
				Args: []string{"-get=" + strings.Join(urls, ","), "-get-timeout=30s"},
			}},
		},
	}
	pods := l.kube.CoreV1().Pods(namespace)
	created, err := pods.Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		return PodGets{}, fmt.Errorf("client pod on %s: %w", node, err)
	}
	defer func() {
		_ = pods.Delete(context.Background(), created.Name, metav1.DeleteOptions{GracePeriodSeconds: &grace})
	}()
	var done *corev1.Pod
	var ips []corev1.PodIP // a terminated pod's status may have lost them
	err = PollContext(ctx, time.Duration(len(addrs))*30*time.Second+time.Minute, func() bool {
		p, err := pods.Get(ctx, created.Name, metav1.GetOptions{})
		if err != nil {
			return false
		}
		if len(p.Status.PodIPs) > 0 {
			ips = p.Status.PodIPs
		}
		if p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			done = p
		}
		return done != nil
	})
	if err != nil {
		return PodGets{}, fmt.Errorf("client pod %s on %s did not finish: %w", created.Name, node, err)
	}
	logs, err := pods.GetLogs(created.Name, &corev1.PodLogOptions{}).DoRaw(ctx)
	if err != nil {
		return PodGets{}, fmt.Errorf("log of client pod %s: %w", created.Name, err)
	}
	if done.Status.Phase != corev1.PodSucceeded {
		return PodGets{}, fmt.Errorf("client pod %s on %s failed: %s", created.Name, node, logs)
	}
	return parsePodGets(done.Name, ips, string(logs), len(addrs))
}

// parsePodGets reads a client pod's addresses and its log: one pod
// server answer a line.
func parsePodGets(name string, ips []corev1.PodIP, logs string, want int) (PodGets, error) {
	g := PodGets{Pod: name}
	for _, ip := range ips {
		if a, err := netip.ParseAddr(ip.IP); err == nil {
			if a.Is4() {
				g.IPv4 = a
			} else {
				g.IPv6 = a
			}
		}
	}
	sc := bufio.NewScanner(strings.NewReader(logs))
	for sc.Scan() {
		var a PodAnswer
		if err := json.Unmarshal(sc.Bytes(), &a); err != nil {
			return g, fmt.Errorf("client pod %s: not a pod answer: %q", name, sc.Text())
		}
		a.ClientAddr, _ = netip.ParseAddrPort(a.Client)
		g.Answers = append(g.Answers, a)
	}
	if len(g.Answers) != want {
		return g, fmt.Errorf("client pod %s: %d answers, want %d: %q", name, len(g.Answers), want, logs)
	}
	return g, nil
}
