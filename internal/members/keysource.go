package members

import (
	"errors"
	"fmt"
	"io/fs"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	corelisters "k8s.io/client-go/listers/core/v1"

	heraldv1 "github.com/herald-lb/herald/api/v1beta1"
	"github.com/herald-lb/herald/internal/daemon"
)

// KeySource is where the member-list key comes from: the file mounted
// from the Secret, and, while that file is not there yet, the same Secret
// as the speaker's synced cache of Herald's namespace holds it.
//
// The Secret volume is optional: right after an install the speakers
// start before the controller has created the Secret, and the kubelet
// fills an optional volume only at its next sync of the pod (its sync
// period, a minute plus jitter), so a speaker would wait up to that long
// for a key that is already in the API. The file wins once it exists: a
// pod started after a key rotation mounts the Secret's new content.
type KeySource struct {
	File string
	// Secret names the Secret in Namespace; empty: the file only.
	Secret, Namespace string
	// Secrets is the speaker's cache of Herald's namespace (nil: the file
	// only).
	Secrets corelisters.SecretNamespaceLister
}

// ErrNoKeyYet: neither the file nor the Secret holds a key yet, a
// condition that resolves by itself (the controller creates the Secret).
var ErrNoKeyYet = errors.New("no key yet")

// Read returns the keys and where they came from ("file", or a phrase
// naming the Secret). Its errors are
// classified: ErrNoKeyYet (wrapped with why) while there is no key yet,
// which resolves by itself; any other error (a malformed key, an
// unreadable file) is marked daemon.Permanent: only an operator fixes it.
//
// A malformed file with a well-formed key in the Secret takes the
// Secret's: the operator fixed the Secret and the kubelet has not
// refreshed the volume yet.
func (k KeySource) Read() (Keys, string, error) {
	keys, err := ReadKeyFile(k.File)
	if err == nil {
		return keys, "file", nil
	}
	fileErr := err
	if !errors.Is(err, fs.ErrNotExist) {
		if sk, serr := k.fromSecret(); serr == nil {
			return sk, "Secret (the file's key is malformed)", nil
		}
		return keys, "", daemon.Permanent(err)
	}
	keys, err = k.fromSecret()
	switch {
	case err == nil:
		return keys, "Secret", nil
	case errors.Is(err, ErrNoKeyYet):
		return keys, "", fmt.Errorf("%w; %w", fileErr, err)
	}
	return keys, "", err
}

// fromSecret reads the key from the Secret in the cache: ErrNoKeyYet while
// it is missing or empty, a Permanent error when it is malformed.
func (k KeySource) fromSecret() (Keys, error) {
	if k.Secret == "" || k.Secrets == nil {
		return Keys{}, fmt.Errorf("%w (no --memberlist-secret to read it from)", ErrNoKeyYet)
	}
	sec, err := k.Secrets.Get(k.Secret)
	switch {
	case apierrors.IsNotFound(err):
		return Keys{}, fmt.Errorf("%w: Secret %s/%s not found", ErrNoKeyYet, k.Namespace, k.Secret)
	case err != nil:
		return Keys{}, fmt.Errorf("%w: Secret %s/%s: %w", ErrNoKeyYet, k.Namespace, k.Secret, err)
	}
	data := sec.Data[heraldv1.MemberlistSecretKey]
	if len(data) == 0 {
		// The controller repairs an empty key; the file would be empty too.
		return Keys{}, fmt.Errorf("%w: Secret %s/%s has no data under %q", ErrNoKeyYet, k.Namespace, k.Secret, heraldv1.MemberlistSecretKey)
	}
	keys, err := ParseKeys(data)
	if err != nil {
		return keys, daemon.Permanent(fmt.Errorf("Secret %s/%s, key %q: %w", k.Namespace, k.Secret, heraldv1.MemberlistSecretKey, err))
	}
	return keys, nil
}
