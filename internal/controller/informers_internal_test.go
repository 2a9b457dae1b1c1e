package controller

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/herald-lb/herald/api/v1beta1"
)

// TestOnlyStatusChanged: the echo of a status write (same generation and
// metadata) does not count as a change; anything an operator or a deletion
// changes does, and objects without a generation always do.
func TestOnlyStatusChanged(t *testing.T) {
	base := func() *v1beta1.IPAddressPool {
		return &v1beta1.IPAddressPool{ObjectMeta: metav1.ObjectMeta{Name: "p", Generation: 3,
			Labels: map[string]string{"tier": "a"}, Annotations: map[string]string{"x": "1"}, Finalizers: []string{"herald.dev/pool"}}}
	}
	now := metav1.Now()
	for _, tc := range []struct {
		name string
		edit func(*v1beta1.IPAddressPool)
		want bool
	}{
		{"status only", func(p *v1beta1.IPAddressPool) {
			p.Status.Conditions = []metav1.Condition{{Type: "Valid"}}
			p.ResourceVersion = "9"
		}, true},
		{"spec (generation)", func(p *v1beta1.IPAddressPool) { p.Generation++ }, false},
		{"labels", func(p *v1beta1.IPAddressPool) { p.Labels = map[string]string{"tier": "b"} }, false},
		{"annotations", func(p *v1beta1.IPAddressPool) { p.Annotations = nil }, false},
		{"finalizers", func(p *v1beta1.IPAddressPool) { p.Finalizers = nil }, false},
		{"deletion", func(p *v1beta1.IPAddressPool) { p.DeletionTimestamp = &now }, false},
	} {
		n := base()
		tc.edit(n)
		if got := onlyStatusChanged(base(), n); got != tc.want {
			t.Errorf("%s: onlyStatusChanged = %v, want %v", tc.name, got, tc.want)
		}
	}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "pw"}}
	if onlyStatusChanged(secret, secret.DeepCopy()) {
		t.Error("a Secret (no generation) counted as a status-only change")
	}
	if onlyStatusChanged("not an object", base()) {
		t.Error("a non-object counted as a status-only change")
	}
}
