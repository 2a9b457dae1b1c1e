package members

import (
	"bytes"
	"encoding/base64"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/herald-lb/herald/api/v1beta1"
)

func TestReadKeyFile(t *testing.T) {
	key32 := bytes.Repeat([]byte{0xa5}, 32)
	key16 := []byte("0123456789abcdef")
	rawWithNewline := append(bytes.Repeat([]byte{0x01}, 31), '\n') // a binary key may end in 0x0a
	cases := []struct {
		name    string
		content []byte
		want    []byte
		wantErr string
	}{
		{"raw 16", key16, key16, ""},
		{"raw 32 ending in a newline byte", rawWithNewline, rawWithNewline, ""},
		{"base64 32", []byte(base64.StdEncoding.EncodeToString(key32)), key32, ""},
		{"base64 32 with newline", []byte(base64.StdEncoding.EncodeToString(key32) + "\n"), key32, ""},
		{"base64 24", []byte(base64.StdEncoding.EncodeToString(key32[:24])), key32[:24], ""},
		{"raw 16 with newline", append(bytes.Clone(key16), '\n'), nil, "holds 17 bytes"},
		{"empty", nil, nil, "holds 0 bytes"},
		{"base64 of 20 bytes", []byte(base64.StdEncoding.EncodeToString(key32[:20])), nil, "want a 16, 24 or 32-byte key"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "key")
			if err := os.WriteFile(path, tc.content, 0o600); err != nil {
				t.Fatal(err)
			}
			got, err := ReadKeyFile(path)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) || !strings.Contains(err.Error(), path) {
					t.Fatalf("error %v, want one naming %s and saying %q", err, path, tc.wantErr)
				}
				return
			}
			if err != nil || !bytes.Equal(got.Primary, tc.want) || len(got.Others) != 0 {
				t.Fatalf("got %x, %v; want %x", got, err, tc.want)
			}
		})
	}
}

// TestReadKeyFileRotation: several base64 keys, the first the primary.
func TestReadKeyFileRotation(t *testing.T) {
	k1, k2, k3 := bytes.Repeat([]byte{1}, 32), bytes.Repeat([]byte{2}, 16), bytes.Repeat([]byte{3}, 24)
	b := base64.StdEncoding.EncodeToString
	cases := []struct {
		name    string
		content string
		primary []byte
		others  [][]byte
		wantErr string
	}{
		{"lines", b(k1) + "\n" + b(k2) + "\n", k1, [][]byte{k2}, ""},
		{"commas and spaces", b(k2) + ", " + b(k1) + " " + b(k3), k2, [][]byte{k1, k3}, ""},
		{"duplicates dropped", b(k1) + "\n" + b(k1) + "\n" + b(k2) + "\n" + b(k2), k1, [][]byte{k2}, ""},
		{"one bad key", b(k1) + "\n" + b(k1[:20]), nil, nil, "key 2 of 2"},
		{"not base64", b(k1) + "\nnot-a-key", nil, nil, "key 2 of 2"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "key")
			if err := os.WriteFile(path, []byte(tc.content), 0o600); err != nil {
				t.Fatal(err)
			}
			got, err := ReadKeyFile(path)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || !bytes.Equal(got.Primary, tc.primary) || !slices.EqualFunc(got.Others, tc.others, bytes.Equal) {
				t.Fatalf("got %x, %v; want primary %x others %x", got, err, tc.primary, tc.others)
			}
		})
	}
}

func TestReadKeyFileMissing(t *testing.T) {
	path := filepath.Join(t.TempDir(), "absent")
	if _, err := ReadKeyFile(path); err == nil || !strings.Contains(err.Error(), path) {
		t.Fatalf("error %v, want one naming %s", err, path)
	}
}

func TestNewRefusesMissingOrBadKey(t *testing.T) {
	cases := []struct {
		key     []byte
		wantErr string
	}{
		{nil, "Secret"},
		{[]byte("short"), "5 bytes"},
	}
	for _, tc := range cases {
		_, err := New(Config{NodeName: "n1", BindAddr: "127.0.0.1", SecretKey: tc.key})
		if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
			t.Errorf("key %q: error %v, want one mentioning %q", tc.key, err, tc.wantErr)
		}
	}
}

// FuzzParseKeys: any key file content either fails or gives valid,
// distinct keys; one valid key alone always reads back as itself.
func FuzzParseKeys(f *testing.F) {
	k32 := base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{7}, 32))
	k16 := base64.StdEncoding.EncodeToString([]byte("0123456789abcdef"))
	for _, seed := range []string{k32, k32 + "\n", k32 + "\n" + k16, k16 + "," + k32 + " " + k16, "0123456789abcdef", "", "\n\n", "a,b"} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		keys, err := ParseKeys(data)
		if err != nil {
			return
		}
		if !validKeyLen(len(keys.Primary)) {
			t.Fatalf("primary of %d bytes", len(keys.Primary))
		}
		seen := [][]byte{keys.Primary}
		for _, k := range keys.Others {
			if !validKeyLen(len(k)) || slices.ContainsFunc(seen, func(s []byte) bool { return bytes.Equal(s, k) }) {
				t.Fatalf("other key %x invalid or repeated in %x", k, keys)
			}
			seen = append(seen, k)
		}
		if validKeyLen(len(data)) {
			if again, err := ParseKeys(data); err != nil || !bytes.Equal(again.Primary, keys.Primary) {
				t.Fatal("parsing is not deterministic")
			}
		}
	})
}

func TestKeyFingerprintsSendingKeyFirst(t *testing.T) {
	a, b := bytes.Repeat([]byte{1}, 16), bytes.Repeat([]byte{2}, 32)
	got := keyFingerprints(a, [][]byte{b})
	want := []string{v1beta1.MemberlistKeyFingerprint(a), v1beta1.MemberlistKeyFingerprint(b)}
	if !slices.Equal(got, want) {
		t.Errorf("fingerprints %v, want %v", got, want)
	}
	m := &Members{keys: got}
	fps := m.KeyFingerprints()
	fps[0] = "changed"
	if m.KeyFingerprints()[0] != want[0] {
		t.Error("KeyFingerprints must return a copy")
	}
}
