package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/wait"
	corelisters "k8s.io/client-go/listers/core/v1"

	heraldv1 "github.com/herald-lb/herald/api/v1beta1"
	"github.com/herald-lb/herald/internal/members"
)

// keySource is where the member-list key comes from: the file mounted
// from the Secret, and, while that file is not there yet, the same Secret
// as the speaker's synced cache of Herald's namespace holds it.
//
// The Secret volume is optional: right after an install the speakers
// start before the controller has created the Secret, and the kubelet
// fills an optional volume only at its next sync of the pod (its sync
// period, a minute plus jitter), so a speaker would wait up to that long
// for a key that is already in the API. The file wins once it exists: a
// pod started after a key rotation mounts the Secret's new content.
type keySource struct {
	File string
	// Secret names the Secret in Namespace; empty: the file only.
	Secret, Namespace string
	// Secrets is the speaker's cache of Herald's namespace (nil: the file
	// only).
	Secrets corelisters.SecretNamespaceLister
}

// errNoKeyYet: neither the file nor the Secret holds a key yet.
var errNoKeyYet = errors.New("no key yet")

// read returns the keys, where they came from, errNoKeyYet (wrapped with
// why) while there are none, or any other error for a malformed key.
func (k keySource) read() (members.Keys, string, error) {
	keys, err := members.ReadKeyFile(k.File)
	if err == nil {
		return keys, "file", nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return keys, "", err
	}
	if k.Secret == "" || k.Secrets == nil {
		return keys, "", fmt.Errorf("%w: %w", errNoKeyYet, err)
	}
	sec, serr := k.Secrets.Get(k.Secret)
	switch {
	case apierrors.IsNotFound(serr):
		return keys, "", fmt.Errorf("%w: %w; Secret %s/%s not found", errNoKeyYet, err, k.Namespace, k.Secret)
	case serr != nil:
		return keys, "", fmt.Errorf("%w: %w; Secret %s/%s: %w", errNoKeyYet, err, k.Namespace, k.Secret, serr)
	}
	data := sec.Data[heraldv1.MemberlistSecretKey]
	if len(data) == 0 {
		// The controller repairs an empty key; the file would be empty too.
		return keys, "", fmt.Errorf("%w: %w; Secret %s/%s has no data under %q", errNoKeyYet, err, k.Namespace, k.Secret, heraldv1.MemberlistSecretKey)
	}
	keys, err = members.ParseKeys(data)
	if err != nil {
		return keys, "", fmt.Errorf("Secret %s/%s, key %q: %w", k.Namespace, k.Secret, heraldv1.MemberlistSecretKey, err)
	}
	return keys, "Secret", nil
}

// waitForKey reads the member-list key, waiting up to timeout for the file
// or the Secret to hold one. A malformed key, in the file or in the
// Secret, fails at once.
func waitForKey(ctx context.Context, src keySource, interval, timeout time.Duration, log *slog.Logger) (members.Keys, error) {
	var keys members.Keys
	var from string
	var last error
	warned := false
	err := wait.PollUntilContextTimeout(ctx, interval, timeout, true, func(context.Context) (bool, error) {
		keys, from, last = src.read()
		switch {
		case last == nil:
			return true, nil
		case errors.Is(last, errNoKeyYet):
			if !warned {
				log.Warn("member-list key not there yet; waiting for the Secret to be created", "file", src.File, "secret", src.Secret, "timeout", timeout, "why", last)
				warned = true
			}
			return false, nil
		default:
			return false, last
		}
	})
	switch {
	case err == nil:
	case errors.Is(last, errNoKeyYet):
		return keys, fmt.Errorf("waited %s: %w", timeout, last)
	case last != nil:
		return keys, last
	default:
		return keys, err
	}
	if from == "Secret" {
		log.Info("member-list key read from its Secret; the kubelet has not filled the volume yet", "secret", src.Secret, "file", src.File)
	}
	return keys, err
}
