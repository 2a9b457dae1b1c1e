package controller_test

import (
	"encoding/base64"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/herald-lb/herald/api/v1beta1"
	"github.com/herald-lb/herald/internal/controller"
)

func TestMemberlistSecretCreatedWhenMissingAndNeverChanged(t *testing.T) {
	e := newEnv(t)
	secrets := e.kube.CoreV1().Secrets(heraldNS)
	_ = secrets.Delete(e.ctx, "test-memberlist", metav1.DeleteOptions{})
	t.Cleanup(func() { _ = secrets.Delete(e.ctx, "test-memberlist", metav1.DeleteOptions{}) })
	stop := e.startController(controller.Options{MemberlistSecret: "test-memberlist"})
	var first []byte
	e.eventually("member-list Secret created", 20*time.Second, func() bool {
		s, err := secrets.Get(e.ctx, "test-memberlist", metav1.GetOptions{})
		if err != nil {
			return false
		}
		first = s.Data[v1beta1.MemberlistSecretKey]
		return true
	})
	raw, err := base64.StdEncoding.DecodeString(string(first))
	if err != nil || len(raw) != 32 {
		t.Fatalf("key is not 32 random bytes in base64: %q (%v)", first, err)
	}
	stop()
	e.startController(controller.Options{MemberlistSecret: "test-memberlist"})
	e.pool("p", nil, "198.51.100.64/30")
	e.settle("p")
	s, err := secrets.Get(e.ctx, "test-memberlist", metav1.GetOptions{})
	if err != nil || string(s.Data[v1beta1.MemberlistSecretKey]) != string(first) {
		t.Errorf("the key changed across a restart (err %v)", err)
	}
	if apierrors.IsNotFound(err) {
		t.Fatal("secret gone")
	}
}

// memberlistSecret returns the test's Secret client and a cleanup of the
// Secret name.
func memberlistSecret(e *env, name string) func() ([]byte, bool) {
	secrets := e.kube.CoreV1().Secrets(heraldNS)
	_ = secrets.Delete(e.ctx, name, metav1.DeleteOptions{})
	e.t.Cleanup(func() { _ = secrets.Delete(e.ctx, name, metav1.DeleteOptions{}) })
	return func() ([]byte, bool) {
		s, err := secrets.Get(e.ctx, name, metav1.GetOptions{})
		if err != nil {
			return nil, false
		}
		return s.Data[v1beta1.MemberlistSecretKey], true
	}
}

func TestMemberlistSecretDeletedComesBackWithTheSameKey(t *testing.T) {
	e := newEnv(t)
	const name = "test-memberlist-same"
	read := memberlistSecret(e, name)
	e.startController(controller.Options{MemberlistSecret: name})
	var first []byte
	e.eventually("member-list Secret created", 20*time.Second, func() bool {
		var ok bool
		first, ok = read()
		return ok && len(first) > 0
	})
	secrets := e.kube.CoreV1().Secrets(heraldNS)
	if err := secrets.Delete(e.ctx, name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	var again []byte
	e.eventually("member-list Secret re-created", 20*time.Second, func() bool {
		var ok bool
		again, ok = read()
		return ok
	})
	if string(again) != string(first) {
		t.Errorf("re-created with key %q, want the one the speakers hold %q", again, first)
	}
	// Emptied: the same key is written back.
	s, err := secrets.Get(e.ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	s.Data[v1beta1.MemberlistSecretKey] = nil
	if _, err := secrets.Update(e.ctx, s, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.eventually("member-list key written back", 20*time.Second, func() bool {
		k, ok := read()
		return ok && string(k) == string(first)
	})
}

// speakerWithKey creates a fresh liveness Lease of a speaker running with
// a member-list key (its fingerprint annotated), deleted at the end.
func speakerWithKey(e *env, node string) (remove func()) {
	leases := e.kube.CoordinationV1().Leases(heraldNS)
	now := metav1.NewMicroTime(time.Now())
	secs := int32(600)
	l := &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: v1beta1.SpeakerLeasePrefix + node,
			Labels:      map[string]string{v1beta1.LabelSpeakerLiveness: "true"},
			Annotations: map[string]string{v1beta1.AnnotationMemberlistKeys: v1beta1.MemberlistKeyFingerprint([]byte("0123456789abcdef"))}},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: &node, LeaseDurationSeconds: &secs, RenewTime: &now},
	}
	if _, err := leases.Create(e.ctx, l, metav1.CreateOptions{}); err != nil {
		e.t.Fatal(err)
	}
	remove = func() { _ = leases.Delete(e.ctx, l.Name, metav1.DeleteOptions{}) }
	e.t.Cleanup(remove)
	return remove
}

func TestFreshControllerInventsNoKeyWhileSpeakersHoldOne(t *testing.T) {
	e := newEnv(t)
	const name = "test-memberlist-fresh"
	read := memberlistSecret(e, name)
	removeSpeaker := speakerWithKey(e, "keynode")
	reg := prometheus.NewRegistry()
	e.startController(controller.Options{MemberlistSecret: name, Registerer: reg})
	e.waitEvent(heraldNS, name, controller.ReasonMemberlistKeyMissing, "1 live speaker(s) run with a member-list key", "docs/security.md")
	if k, ok := read(); ok {
		t.Fatalf("a key was invented while a speaker runs with another: %q", k)
	}
	e.eventually("herald_controller_memberlist_key_missing 1", 20*time.Second, func() bool {
		return gaugeValue(t, reg, "herald_controller_memberlist_key_missing") == 1
	})

	// The operator creates the Secret: it is kept, and remembered.
	secrets := e.kube.CoreV1().Secrets(heraldNS)
	own := []byte("b3BlcmF0b3Ita2V5LTAxMjM0NTY3ODlhYmNkZWY=")
	_, err := secrets.Create(e.ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: map[string][]byte{v1beta1.MemberlistSecretKey: own}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	e.eventually("herald_controller_memberlist_key_missing 0", 20*time.Second, func() bool {
		return gaugeValue(t, reg, "herald_controller_memberlist_key_missing") == 0
	})
	if err := secrets.Delete(e.ctx, name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	e.eventually("the operator's key written back", 20*time.Second, func() bool {
		k, ok := read()
		return ok && string(k) == string(own)
	})

	// A fresh controller, no Secret, and no speaker left: a new key.
	removeSpeaker()
	e.startController(controller.Options{MemberlistSecret: name + "-2"})
	read2 := memberlistSecret(e, name+"-2")
	e.eventually("a new key once no speaker holds one", 20*time.Second, func() bool {
		k, ok := read2()
		return ok && len(k) > 0 && string(k) != string(own)
	})
}

// gaugeValue reads an unlabelled gauge from reg (-1 when absent).
func gaugeValue(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() == name && len(f.GetMetric()) == 1 {
			return f.GetMetric()[0].GetGauge().GetValue()
		}
	}
	return -1
}
