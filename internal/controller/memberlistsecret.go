package controller

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"log/slog"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"github.com/herald-lb/herald/api/v1beta1"
)

// memberlistRecheck is how often a healthy member-list Secret is checked
// again (so a deleted one comes back).
const memberlistRecheck = time.Minute

// KeepMemberlistSecret makes sure the speakers' member-list Secret exists
// with a usable key until ctx ends: it creates it with a random 32-byte key
// when missing, repairs one whose key is missing or empty, and never
// changes a usable key. Every controller replica runs it, leader or not, so
// that applying the manifests alone is a complete install even while no
// replica leads; failures are retried with exponential backoff (1 s to
// 1 min). Writing the Secret needs no lease: every replica writes the same
// thing, and a create that loses the race finds the winner's Secret.
func KeepMemberlistSecret(ctx context.Context, kube kubernetes.Interface, namespace, name string, log *slog.Logger) {
	if name == "" {
		return
	}
	backoff := wait.Backoff{Duration: time.Second, Factor: 2, Jitter: 0.1, Steps: 1 << 30, Cap: time.Minute}
	for {
		next := memberlistRecheck
		if err := ensureMemberlistSecret(ctx, kube, namespace, name, log); err != nil {
			if ctx.Err() != nil {
				return
			}
			next = backoff.Step()
			log.Warn("member-list Secret; retrying", "secret", namespace+"/"+name, "in", next.Round(time.Millisecond), "error", err)
		} else {
			backoff = wait.Backoff{Duration: time.Second, Factor: 2, Jitter: 0.1, Steps: 1 << 30, Cap: time.Minute}
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(next):
		}
	}
}

func ensureMemberlistSecret(ctx context.Context, kube kubernetes.Interface, namespace, name string, log *slog.Logger) error {
	secrets := kube.CoreV1().Secrets(namespace)
	cur, err := secrets.Get(ctx, name, metav1.GetOptions{})
	switch {
	case err == nil && len(cur.Data[v1beta1.MemberlistSecretKey]) > 0:
		return nil
	case err != nil && !apierrors.IsNotFound(err):
		return fmt.Errorf("reading the member-list Secret %s/%s: %w", namespace, name, err)
	}
	raw := make([]byte, 32)
	if _, err := rand.Read(raw); err != nil {
		return err
	}
	key := []byte(base64.StdEncoding.EncodeToString(raw))
	if err == nil { // exists without a usable key: repair it
		cur = cur.DeepCopy()
		if cur.Data == nil {
			cur.Data = map[string][]byte{}
		}
		cur.Data[v1beta1.MemberlistSecretKey] = key
		if _, err := secrets.Update(ctx, cur, metav1.UpdateOptions{FieldManager: FieldManager}); err != nil {
			return fmt.Errorf("repairing the member-list Secret %s/%s: %w", namespace, name, err)
		}
		log.Info("repaired the speakers' member-list Secret (its key was missing) with a random key", "secret", namespace+"/"+name)
		return nil
	}
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace,
			Labels: map[string]string{"app.kubernetes.io/name": "herald", "app.kubernetes.io/component": "speaker"}},
		Data: map[string][]byte{v1beta1.MemberlistSecretKey: key},
	}
	_, err = secrets.Create(ctx, secret, metav1.CreateOptions{FieldManager: FieldManager})
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("creating the member-list Secret %s/%s: %w", namespace, name, err)
	}
	log.Info("created the speakers' member-list Secret with a random key", "secret", namespace+"/"+name)
	return nil
}
