package lab

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/herald-lb/herald/test/labkit"
)

// waitTimeout bounds WaitEvent and WaitServiceCondition.
const waitTimeout = 30 * time.Second

// WaitEvent waits for an event with reason on the object kind/name, in any
// namespace (events of cluster-scoped objects go to "default"), last seen
// at or after since (to the second, the events' resolution; zero: any
// time), whose message contains every fragment, and returns its message.
func (l *Lab) WaitEvent(t testing.TB, since time.Time, kind, name, reason string, fragments ...string) string {
	t.Helper()
	since = since.Truncate(time.Second)
	var msg string
	labkit.Eventually(t, waitTimeout, fmt.Sprintf("event %s on %s %s with %q", reason, kind, name, fragments), func() bool {
		evs, err := l.Client().CoreV1().Events("").List(context.Background(),
			metav1.ListOptions{FieldSelector: "involvedObject.kind=" + kind + ",involvedObject.name=" + name})
		if err != nil {
			return false
		}
		for _, ev := range evs.Items {
			last := ev.LastTimestamp.Time
			if ev.EventTime.After(last) {
				last = ev.EventTime.Time
			}
			if ev.Reason == reason && ContainsAll(ev.Message, fragments) && !last.Before(since) {
				msg = ev.Message
				return true
			}
		}
		return false
	})
	return msg
}

// WaitServiceCondition waits until Service ns/name has a condition of type
// typ with status for which match holds, and returns it.
func (l *Lab) WaitServiceCondition(t testing.TB, ns, name, typ string, status metav1.ConditionStatus, match func(metav1.Condition) bool) metav1.Condition {
	t.Helper()
	var c metav1.Condition
	labkit.Eventually(t, waitTimeout, fmt.Sprintf("Service %s/%s condition %s=%s", ns, name, typ, status), func() bool {
		s, err := l.Client().CoreV1().Services(ns).Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return false
		}
		for _, cc := range s.Status.Conditions {
			if cc.Type == typ && cc.Status == status && match(cc) {
				c = cc
				return true
			}
		}
		return false
	})
	return c
}

// ContainsAll reports whether s contains every fragment.
func ContainsAll(s string, fragments []string) bool {
	for _, f := range fragments {
		if !strings.Contains(s, f) {
			return false
		}
	}
	return true
}
