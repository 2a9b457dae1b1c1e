package config

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

type fieldError struct {
	field string
	err   error
}

func (e fieldError) Error() string { return e.err.Error() }

// selectors converts label selectors; an invalid one is an error naming its
// field (the object is then ignored: dropping one selector would widen the
// selection).
func selectors(in []metav1.LabelSelector, field string) ([]labels.Selector, error) {
	out := make([]labels.Selector, 0, len(in))
	for i := range in {
		s, err := metav1.LabelSelectorAsSelector(&in[i])
		if err != nil {
			return nil, fieldError{field: fmt.Sprintf("%s[%d]", field, i), err: fmt.Errorf("invalid label selector: %w", err)}
		}
		out = append(out, s)
	}
	return out, nil
}
