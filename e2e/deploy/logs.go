package deploy

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// LogsOnFailure makes a failed test print what Herald's pods logged while
// it ran: the lab's dump at the end of the package keeps only the last
// lines of each file, long after the test that needed them. The pods
// deleted while it ran (a rolling update, a drain) are gone by then, and
// their logs with them: each one's log is followed from the moment it is
// being deleted until its containers stop, and printed too.
func (h *Herald) LogsOnFailure(t testing.TB) {
	since := time.Now().Add(-time.Second)
	ctx, stop := context.WithCancel(context.Background())
	deleted := h.followDeleted(ctx, since)
	t.Cleanup(func() {
		stop()
		gone := deleted()
		if !t.Failed() {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		t.Log(h.LogsSince(ctx, since, failureLogLines) + gone)
	})
}

// followDeleted follows, until ctx ends, the log of every container of
// every Herald pod that is being deleted, from since on; the function it
// returns waits for them and returns what they logged. A watch that fails
// is reported in that text, never to the test: this is for a human reading
// a failure.
func (h *Herald) followDeleted(ctx context.Context, since time.Time) func() string {
	var (
		mu   sync.Mutex
		b    strings.Builder
		wg   sync.WaitGroup
		seen = map[string]bool{}
	)
	w, err := h.Lab.Client().CoreV1().Pods(Namespace).Watch(ctx, metav1.ListOptions{})
	if err != nil {
		return func() string { return "\n(pods deleted during the test: cannot watch: " + err.Error() + ")\n" }
	}
	wg.Go(func() {
		defer w.Stop()
		for ev := range w.ResultChan() {
			p, ok := ev.Object.(*corev1.Pod)
			if !ok || p.DeletionTimestamp == nil || seen[p.Name] {
				continue
			}
			seen[p.Name] = true
			for _, c := range p.Spec.Containers {
				wg.Go(func() {
					var out strings.Builder
					h.followLog(ctx, &out, p, c.Name, since)
					mu.Lock()
					logHeader(&b, p, c.Name, ", deleted during the test", since, failureLogLines)
					b.WriteString(lastLines(out.String(), failureLogLines))
					mu.Unlock()
				})
			}
		}
	})
	return func() string {
		wg.Wait()
		mu.Lock()
		defer mu.Unlock()
		return b.String()
	}
}

// failureLogLines is how much of each container's log a failed test
// prints: its last lines.
const failureLogLines = 300

// lastLines returns the last n lines of s.
func lastLines(s string, n int) string {
	lines := strings.SplitAfter(strings.TrimSuffix(s, "\n"), "\n")
	if len(lines) <= n {
		return s
	}
	return strings.Join(lines[len(lines)-n:], "") + "\n"
}

// followLog copies a container's log from since on until the container
// stops or ctx ends.
func (h *Herald) followLog(ctx context.Context, w io.Writer, p *corev1.Pod, container string, since time.Time) {
	opts := &corev1.PodLogOptions{Container: container, Follow: true, SinceTime: &metav1.Time{Time: since}}
	r, err := h.Lab.Client().CoreV1().Pods(p.Namespace).GetLogs(p.Name, opts).Stream(ctx)
	if err != nil {
		fmt.Fprintf(w, "(no log: %v)\n", err)
		return
	}
	defer r.Close()
	_, _ = io.Copy(w, r)
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
	logHeader(w, p, container, what, since, tail)
	opts := &corev1.PodLogOptions{Container: container, Previous: previous, SinceTime: &metav1.Time{Time: since}, TailLines: &tail}
	body, err := h.Lab.Client().CoreV1().Pods(p.Namespace).GetLogs(p.Name, opts).DoRaw(ctx)
	if err != nil {
		fmt.Fprintf(w, "(no log: %v)\n", err)
		return
	}
	_, _ = w.Write(body)
}

// logHeader names the log that follows: which container of which pod
// (what qualifies it), from when, and how many lines at most.
func logHeader(w io.Writer, p *corev1.Pod, container, what string, since time.Time, tail int64) {
	fmt.Fprintf(w, "\n--- pod %s on %s, container %s%s, since %s (last %d lines) ---\n",
		p.Name, p.Spec.NodeName, container, what, since.Format(time.RFC3339Nano), tail)
}
