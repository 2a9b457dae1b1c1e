package deploy

import (
	"context"
	"fmt"
	"os"
	"strings"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/herald-lb/herald/e2e/lab"
)

// Speaker is a handle on the speaker Pod of one node. Kill and Stop act on
// the speaker container's process by PID, as an OOM kill or a crash
// would; the kubelet then restarts the container. StartSpeaker waits for a
// Ready speaker again.
type Speaker struct {
	h    *Herald
	Node string
	// pid of the running speaker process, learnt when it was last seen
	// Ready (so that Kill costs no lookup at the moment of the event).
	pid int
}

// speakerPod is the DaemonSet's Pod on node (not terminating), or nil.
func (h *Herald) speakerPod(ctx context.Context, node string) (*corev1.Pod, error) {
	pods, err := h.Pods(ctx, "speaker")
	if err != nil {
		return nil, err
	}
	for i := range pods {
		if pods[i].Spec.NodeName == node {
			return &pods[i], nil
		}
	}
	return nil, nil
}

// running is the container ID of the pod's running container, or "".
func running(p *corev1.Pod, container string) string {
	for _, c := range p.Status.ContainerStatuses {
		if c.Name == container && c.State.Running != nil {
			return c.ContainerID
		}
	}
	return ""
}

// PID is the speaker process's PID (looked up when not known or gone).
func (s *Speaker) PID() (int, error) {
	if s.pid != 0 && isSpeaker(s.pid) {
		return s.pid, nil
	}
	ctx := context.Background()
	p, err := s.h.speakerPod(ctx, s.Node)
	if err != nil {
		return 0, err
	}
	if p == nil || running(p, speakerContainer) == "" {
		return 0, fmt.Errorf("no running speaker on %s", s.Node)
	}
	pid, err := s.h.Lab.ContainerPID(ctx, s.Node, running(p, speakerContainer))
	if err != nil {
		return 0, err
	}
	s.pid = pid
	return pid, nil
}

func isSpeaker(pid int) bool {
	cmd, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	return err == nil && strings.HasPrefix(string(cmd), "/speaker\x00")
}

// Kill sends SIGKILL to the speaker process and returns once it is gone.
func (s *Speaker) Kill() error { return s.signal(syscall.SIGKILL, 5*time.Second) }

// Stop sends SIGTERM (what the kubelet sends a Pod being deleted) and
// returns once the speaker has exited.
func (s *Speaker) Stop() error { return s.signal(syscall.SIGTERM, 30*time.Second) }

func (s *Speaker) signal(sig syscall.Signal, timeout time.Duration) error {
	pid, err := s.PID()
	if err != nil {
		return err
	}
	if err := syscall.Kill(pid, sig); err != nil {
		return fmt.Errorf("speaker on %s (pid %d): %w", s.Node, pid, err)
	}
	s.pid = 0
	deadline := time.Now().Add(timeout)
	for isSpeaker(pid) {
		if time.Now().After(deadline) {
			return fmt.Errorf("speaker on %s (pid %d) still running %v after %v", s.Node, pid, timeout, sig)
		}
		time.Sleep(10 * time.Millisecond)
	}
	return nil
}

// StartSpeaker waits until node has a Ready speaker running. A speaker
// the kubelet holds in CrashLoopBackOff (it was killed more than once in
// a row) is replaced: its Pod is deleted and the DaemonSet makes a new one.
func (h *Herald) StartSpeaker(node string) (*Speaker, error) {
	ctx := context.Background()
	s := h.Speakers[node]
	if s == nil {
		return nil, fmt.Errorf("no node %s", node)
	}
	deadline := time.Now().Add(2 * time.Minute)
	replaceAfter := time.Now().Add(3 * time.Second)
	for {
		p, err := h.speakerPod(ctx, node)
		if err == nil && p != nil && lab.PodReady(p) && running(p, speakerContainer) != "" {
			if _, err := s.PID(); err == nil {
				return s, nil
			}
		}
		if err == nil && p != nil && time.Now().After(replaceAfter) && waitingInBackOff(p) {
			zero := int64(0)
			_ = h.Lab.Client().CoreV1().Pods(Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{GracePeriodSeconds: &zero})
			replaceAfter = time.Now().Add(10 * time.Second)
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("no Ready speaker on %s after 2m (pod: %s)", node, describePod(p))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func waitingInBackOff(p *corev1.Pod) bool {
	for _, c := range p.Status.ContainerStatuses {
		if c.Name == speakerContainer && c.State.Waiting != nil && c.State.Waiting.Reason == "CrashLoopBackOff" {
			return true
		}
	}
	return false
}

func describePod(p *corev1.Pod) string {
	if p == nil {
		return "none"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s phase %s", p.Name, p.Status.Phase)
	for _, c := range p.Status.ContainerStatuses {
		fmt.Fprintf(&b, ", %s ready=%v restarts=%d state=%+v", c.Name, c.Ready, c.RestartCount, c.State)
	}
	return b.String()
}

// StartSpeakers waits for a Ready speaker on every node.
func (h *Herald) StartSpeakers() error {
	for _, n := range h.Lab.Nodes() {
		if _, err := h.StartSpeaker(n.Name); err != nil {
			return err
		}
	}
	return nil
}
