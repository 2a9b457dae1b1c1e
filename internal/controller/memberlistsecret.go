package controller

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// MemberlistKeyName is the key of the member-list Secret the speakers
// mount as their encryption key file.
const MemberlistKeyName = "key"

// ensureMemberlistSecret creates the speakers' member-list Secret with a
// random 32-byte key when it does not exist, so that applying the manifests
// alone is a complete install. An existing Secret is never changed.
func (c *Controller) ensureMemberlistSecret(ctx context.Context) error {
	name := c.opts.MemberlistSecret
	if name == "" {
		return nil
	}
	if _, err := c.secrets.Secrets(c.opts.Namespace).Get(name); err == nil {
		return nil
	}
	raw := make([]byte, 32)
	if _, err := rand.Read(raw); err != nil {
		return err
	}
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: c.opts.Namespace,
			Labels: map[string]string{"app.kubernetes.io/name": "herald", "app.kubernetes.io/component": "speaker"}},
		Data: map[string][]byte{MemberlistKeyName: []byte(base64.StdEncoding.EncodeToString(raw))},
	}
	_, err := c.kube.CoreV1().Secrets(c.opts.Namespace).Create(ctx, secret, metav1.CreateOptions{FieldManager: FieldManager})
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("creating the member-list Secret %s/%s: %w", c.opts.Namespace, name, err)
	}
	c.log.Info("created the speakers' member-list Secret with a random key", "secret", c.opts.Namespace+"/"+name)
	return nil
}
