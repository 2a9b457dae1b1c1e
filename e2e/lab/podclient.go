package lab

import (
	"context"
	"encoding/json"
	"fmt"
	"net/netip"
	"strconv"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// HTTPGetFromPod sends GET http://addr:port/ from inside a running pod:
// labprobe runs in the network namespace of the pod's first container
// (found through its node's containerd), so the request leaves by the
// pod's own interface and meets its node's kube-proxy as any pod's
// traffic does. It reports which pod answered and the source address it
// saw.
func (l *Lab) HTTPGetFromPod(ctx context.Context, namespace, pod string, addr netip.Addr, port int) (PodAnswer, error) {
	p, err := l.kube.CoreV1().Pods(namespace).Get(ctx, pod, metav1.GetOptions{})
	if err != nil {
		return PodAnswer{}, fmt.Errorf("pod %s/%s: %w", namespace, pod, err)
	}
	if len(p.Status.ContainerStatuses) == 0 || p.Status.ContainerStatuses[0].ContainerID == "" {
		return PodAnswer{}, fmt.Errorf("pod %s/%s has no running container", namespace, pod)
	}
	pid, err := l.ContainerPID(ctx, p.Spec.NodeName, p.Status.ContainerStatuses[0].ContainerID)
	if err != nil {
		return PodAnswer{}, err
	}
	url := "http://" + netip.AddrPortFrom(addr, uint16(port)).String() + "/"
	out, err := run(ctx, "nsenter", "-t", strconv.Itoa(pid), "-n", "--", l.bin.labprobe, "http", "-url", url, "-timeout", "3s")
	if err != nil {
		return PodAnswer{}, fmt.Errorf("HTTP from pod %s/%s: %w", namespace, pod, err)
	}
	return parsePodAnswer(out, "pod "+pod, url)
}

// parsePodAnswer parses the podserver's JSON answer to a request from
// who to url.
func parsePodAnswer(out, who, url string) (PodAnswer, error) {
	var a PodAnswer
	if err := json.Unmarshal([]byte(out), &a); err != nil {
		return a, fmt.Errorf("HTTP from %s to %s: not a pod answer: %q", who, url, out)
	}
	a.ClientAddr, _ = netip.ParseAddrPort(a.Client)
	return a, nil
}
