package deploy

import (
	"context"
	"fmt"
	"strings"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/herald-lb/herald/test/labkit"
)

// HoldSpeaker keeps node's speaker from running while the node stays
// Ready, the way a node that has just joined looks while its speaker
// image is still being pulled: the speaker image is removed from the
// node's containerd and the speaker Pod is deleted, so the DaemonSet's new
// Pod waits in ImagePullBackOff (the lab reaches no registry).
func (h *Herald) HoldSpeaker(ctx context.Context, node string) error {
	if err := h.removeImage(ctx, node, "speaker"); err != nil {
		return err
	}
	p, err := h.speakerPod(ctx, node)
	if err != nil {
		return err
	}
	if p != nil {
		if err := h.Lab.Client().CoreV1().Pods(Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{}); err != nil {
			return err
		}
	}
	return labkit.Poll(ctx, time.Minute, "the speaker Pod on the node waiting for its image", func() (bool, error) {
		p, err := h.speakerPod(ctx, node)
		return err == nil && p != nil && running(p, speakerContainer) == "" && imageWaiting(p), nil
	})
}

// ReleaseSpeaker imports the speaker image on node again and replaces the
// waiting Pod (the kubelet's image pull back-off would otherwise delay
// it), then waits for a Ready speaker.
func (h *Herald) ReleaseSpeaker(ctx context.Context, node string) error {
	if err := h.Lab.ImportImagesOn(ctx, node, h.Images.Tarballs["speaker"]); err != nil {
		return err
	}
	p, err := h.speakerPod(ctx, node)
	if err != nil {
		return err
	}
	if p != nil && running(p, speakerContainer) == "" {
		zero := int64(0)
		if err := h.Lab.Client().CoreV1().Pods(Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
			return err
		}
	}
	_, err = h.StartSpeaker(node)
	return err
}

// imageWaiting: the speaker container waits for its image.
func imageWaiting(p *corev1.Pod) bool {
	for _, c := range p.Status.ContainerStatuses {
		if c.Name == speakerContainer && c.State.Waiting != nil {
			switch c.State.Waiting.Reason {
			case "ErrImagePull", "ImagePullBackOff", "ErrImageNeverPull":
				return true
			}
		}
	}
	return false
}

// removeImage deletes a Herald image (by reference and by ID) from the
// node's containerd.
func (h *Herald) removeImage(ctx context.Context, node, component string) error {
	out, err := h.Lab.Ctr(ctx, node, "images", "ls", "-q")
	if err != nil {
		return err
	}
	var refs []string
	for _, ref := range strings.Fields(out) {
		if ref == h.Images.Refs[component] || strings.HasSuffix(ref, h.Images.Digests[component]) {
			refs = append(refs, ref)
		}
	}
	if len(refs) == 0 {
		return fmt.Errorf("no %s image on %s", component, node)
	}
	_, err = h.Lab.Ctr(ctx, node, append([]string{"images", "rm"}, refs...)...)
	return err
}

// DeleteLeader deletes the controller Pod holding the Lease (gracefully,
// as an eviction would) and returns its name.
func (h *Herald) DeleteLeader(ctx context.Context) (string, error) {
	leader, err := h.WaitLeader(ctx, time.Minute)
	if err != nil {
		return "", err
	}
	return leader, h.Lab.Client().CoreV1().Pods(Namespace).Delete(ctx, leader, metav1.DeleteOptions{})
}

// CrashLoop makes node's speaker crash at every start, as one that fails
// after a bad upgrade or a broken node does, while the node stays Ready:
// every speaker process in the node's cgroups is SIGKILLed as soon as it
// appears (looked for every 5 ms, long before it could sync and join),
// and the kubelet restarts it with its CrashLoopBackOff delays. stop ends
// that and returns how many processes were killed; StartSpeaker then
// brings a Ready speaker back. Until stop, the test process runs at the
// lab's CPU weight (Lab.AtLabWeight): from its own cgroup the 5 ms look
// ran late on a busy machine, a speaker lived long enough to join and
// claim an address, and its death left the address dark for the member
// list's detection time (CI, 250 ms).
func (h *Herald) CrashLoop(node string) (stop func() int) {
	restore := h.Lab.AtLabWeight()
	done, finished := make(chan struct{}), make(chan int)
	go func() {
		kills := 0
		for {
			for _, pid := range h.Lab.NodeProcesses(node) {
				if isSpeaker(pid) && syscall.Kill(pid, syscall.SIGKILL) == nil {
					kills++
				}
			}
			select {
			case <-done:
				finished <- kills
				return
			case <-time.After(5 * time.Millisecond):
			}
		}
	}()
	return func() int {
		close(done)
		kills := <-finished
		restore()
		return kills
	}
}
