package deploy

import (
	"context"
	"fmt"
	"os"
	"strings"
)

// saToken is where the kubelet mounts a pod's service-account token (a
// projected volume, bound to the pod) in its containers.
const saToken = "var/run/secrets/kubernetes.io/serviceaccount/token"

// SpeakerToken is the service-account token the speaker Pod on node
// holds, read from its container's filesystem as anyone holding the node
// could read it.
func (h *Herald) SpeakerToken(ctx context.Context, node string) (string, error) {
	s, ok := h.Speakers[node]
	if !ok {
		return "", fmt.Errorf("no speaker on %s", node)
	}
	pid, err := s.PID()
	if err != nil {
		return "", err
	}
	return containerToken(pid)
}

// ControllerToken is the service-account token the leading controller
// Pod holds, read from its container's filesystem.
func (h *Herald) ControllerToken(ctx context.Context) (string, error) {
	leader, err := h.Leader(ctx)
	if err != nil {
		return "", err
	}
	pods, err := h.Pods(ctx, "controller")
	if err != nil {
		return "", err
	}
	for i := range pods {
		p := &pods[i]
		if p.Name != leader {
			continue
		}
		id := running(p, controllerContainer)
		if id == "" {
			return "", fmt.Errorf("controller Pod %s has no running container", p.Name)
		}
		pid, err := h.Lab.ContainerPID(ctx, p.Spec.NodeName, id)
		if err != nil {
			return "", err
		}
		return containerToken(pid)
	}
	return "", fmt.Errorf("the leader %s is not a running controller Pod", leader)
}

// containerToken reads the service-account token in the filesystem of
// the container whose process is pid.
func containerToken(pid int) (string, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/root/%s", pid, saToken))
	if err != nil {
		return "", fmt.Errorf("service-account token of process %d: %w", pid, err)
	}
	return strings.TrimSpace(string(b)), nil
}
