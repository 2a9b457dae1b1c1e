package members

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/herald-lb/herald/internal/daemon"
	"github.com/herald-lb/herald/test/memberkey"
)

// TestKeyReadClassified: every state of the file and the Secret, and
// whether Read calls it a wait (resolves by itself: the controller
// creates the Secret, the kubelet fills the volume) or permanent (a
// malformed key: only an operator fixes it), naming what is wrong.
func TestKeyReadClassified(t *testing.T) {
	for _, c := range []struct {
		name         string
		file, secret string // "-": absent
		noSecretName bool
		wantFrom     string
		wantWait     bool
		wantErr      string
	}{
		{name: "nothing yet", file: "-", secret: "-", wantWait: true, wantErr: "herald-system/herald-memberlist not found"},
		{name: "Secret without key", file: "-", secret: "", wantWait: true, wantErr: `has no data under "key"`},
		{name: "no Secret name", file: "-", secret: memberkey.Good, noSecretName: true, wantWait: true, wantErr: "no such file"},
		{name: "Secret before the volume", file: "-", secret: memberkey.Good, wantFrom: "Secret"},
		{name: "file", file: "fedcba9876543210", secret: "short", wantFrom: "file"},
		{name: "malformed Secret", file: "-", secret: "short", wantErr: `Secret herald-system/herald-memberlist, key "key": holds 5 bytes`},
		{name: "malformed file", file: "short", secret: "-", wantErr: "/key: holds 5 bytes"},
		{name: "malformed file, Secret fixed", file: "short", secret: memberkey.Good, wantFrom: "Secret (the file's key is malformed)"},
		{name: "malformed file and Secret", file: "short", secret: "short", wantErr: "/key: holds 5 bytes"},
	} {
		t.Run(c.name, func(t *testing.T) {
			idx, secrets := memberkey.SecretCache(t)
			path := filepath.Join(t.TempDir(), "key")
			if c.file != "-" {
				if err := os.WriteFile(path, []byte(c.file), 0o400); err != nil {
					t.Fatal(err)
				}
			}
			if c.secret != "-" {
				if err := idx.Add(memberkey.Secret(c.secret)); err != nil {
					t.Fatal(err)
				}
			}
			src := KeySource{File: path, Secret: "herald-memberlist", Namespace: "herald-system", Secrets: secrets}
			if c.noSecretName {
				src.Secret = ""
			}
			_, from, err := src.Read()
			if c.wantErr == "" {
				if err != nil || from != c.wantFrom {
					t.Fatalf("Read = from %q, %v; want from %q", from, err, c.wantFrom)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), c.wantErr) {
				t.Fatalf("Read err = %v, want it to say %q", err, c.wantErr)
			}
			if got := errors.Is(err, ErrNoKeyYet); got != c.wantWait {
				t.Errorf("waits = %v, want %v (%v)", got, c.wantWait, err)
			}
			if daemon.IsPermanent(err) == c.wantWait {
				t.Errorf("permanent = %v, want %v (%v)", !c.wantWait, !c.wantWait, err)
			}
		})
	}
}
