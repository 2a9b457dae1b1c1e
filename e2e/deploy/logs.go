package deploy

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// LogsOnFailure makes a failed test print what Herald's pods logged while
// it ran: the lab's dump at the end of the package keeps only the last
// lines of each file, long after the test that needed them.
func (h *Herald) LogsOnFailure(t testing.TB) {
	since := time.Now().Add(-time.Second)
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		t.Log(h.LogsSince(ctx, since, 300))
	})
}

// LogsSince returns the log of every container of every Herald pod (and of
// the previous instance of a restarted container) from since on, at most
// tail lines each. Errors are reported inline: this text is for a human
// reading a failure.
func (h *Herald) LogsSince(ctx context.Context, since time.Time, tail int64) string {
	pods, err := h.Lab.Client().CoreV1().Pods(Namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return "listing Herald's pods: " + err.Error()
	}
	sort.Slice(pods.Items, func(i, j int) bool { return pods.Items[i].Name < pods.Items[j].Name })
	var b strings.Builder
	for _, p := range pods.Items {
		for _, c := range p.Status.ContainerStatuses {
			if c.RestartCount > 0 {
				h.writeLog(ctx, &b, &p, c.Name, true, since, tail)
			}
			h.writeLog(ctx, &b, &p, c.Name, false, since, tail)
		}
	}
	return b.String()
}

func (h *Herald) writeLog(ctx context.Context, w io.Writer, p *corev1.Pod, container string, previous bool, since time.Time, tail int64) {
	what := ""
	if previous {
		what = " (previous instance)"
	}
	fmt.Fprintf(w, "\n--- pod %s on %s, container %s%s, since %s (last %d lines) ---\n",
		p.Name, p.Spec.NodeName, container, what, since.Format(time.RFC3339Nano), tail)
	opts := &corev1.PodLogOptions{Container: container, Previous: previous, SinceTime: &metav1.Time{Time: since}, TailLines: &tail}
	body, err := h.Lab.Client().CoreV1().Pods(p.Namespace).GetLogs(p.Name, opts).DoRaw(ctx)
	if err != nil {
		fmt.Fprintf(w, "(no log: %v)\n", err)
		return
	}
	_, _ = w.Write(body)
}
