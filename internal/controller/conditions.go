package controller

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
)

// condition is a desired condition, before its transition time is known.
type condition struct {
	Type   string
	Status bool
	// Unknown makes the status Unknown (Status is then ignored).
	Unknown bool
	Reason  string
	Message string
}

func statusOf(b bool) metav1.ConditionStatus {
	if b {
		return metav1.ConditionTrue
	}
	return metav1.ConditionFalse
}

// status is the condition's status: True, False or Unknown.
func (w condition) status() metav1.ConditionStatus {
	if w.Unknown {
		return metav1.ConditionUnknown
	}
	return statusOf(w.Status)
}

// sameConditions reports whether the existing conditions already say what
// want says (ignoring transition times), for the generation given.
func sameConditions(existing []metav1.Condition, want []condition, generation int64) bool {
	for _, w := range want {
		e := findCondition(existing, w.Type)
		if e == nil || e.Status != w.status() || e.Reason != w.Reason || e.Message != w.Message || e.ObservedGeneration != generation {
			return false
		}
	}
	return true
}

// desiredConditions are the conditions to write, keeping the transition
// time of a condition whose status did not change.
func desiredConditions(existing []metav1.Condition, want []condition, generation int64, now time.Time) []metav1.Condition {
	out := make([]metav1.Condition, 0, len(want))
	for _, w := range want {
		t := metav1.NewTime(now)
		if e := findCondition(existing, w.Type); e != nil && e.Status == w.status() {
			t = e.LastTransitionTime
		}
		out = append(out, metav1.Condition{Type: w.Type, Status: w.status(), Reason: w.Reason,
			Message: truncate(w.Message, 32768), ObservedGeneration: generation, LastTransitionTime: t})
	}
	return out
}

// applyConditions is desiredConditions as apply configurations.
func applyConditions(existing []metav1.Condition, want []condition, generation int64, now time.Time) []*metav1ac.ConditionApplyConfiguration {
	conds := desiredConditions(existing, want, generation, now)
	out := make([]*metav1ac.ConditionApplyConfiguration, 0, len(conds))
	for _, c := range conds {
		out = append(out, metav1ac.Condition().WithType(c.Type).WithStatus(c.Status).
			WithReason(c.Reason).WithMessage(c.Message).WithObservedGeneration(c.ObservedGeneration).WithLastTransitionTime(c.LastTransitionTime))
	}
	return out
}

func findCondition(conds []metav1.Condition, typ string) *metav1.Condition {
	for i := range conds {
		if conds[i].Type == typ {
			return &conds[i]
		}
	}
	return nil
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n-3] + "..."
}
