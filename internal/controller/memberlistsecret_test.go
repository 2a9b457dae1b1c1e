package controller_test

import (
	"encoding/base64"
	"testing"
	"time"

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
