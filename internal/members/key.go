package members

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"os"
	"slices"
	"strings"
	"unicode"

	"github.com/herald-lb/herald/api/v1beta1"
)

// Keys is the member-list keyring: Primary encrypts what this speaker
// sends; Primary and every one of Others decrypt what it receives. Others
// exist for rotation (see ReadKeyFile).
type Keys struct {
	Primary []byte
	Others  [][]byte
}

// ReadKeyFile reads the gossip encryption keys from a file, normally a
// Secret key mounted into the speaker Pod. The content is either one key
// (exactly 16, 24 or 32 bytes: AES-128, -192 or -256, raw or in standard
// base64, with or without a trailing newline, e.g. made with
// `head -c 32 /dev/urandom | base64`), or several base64 keys separated by
// newlines, commas or spaces: the first is the primary, the others are
// only accepted from other speakers. That is how the key rotates without
// splitting the member list: add the new key second, then put it first,
// then remove the old one, rolling the speakers after each step.
//
// Every speaker reads the same Secret through this function, so all of
// them derive the same keys even for content that would parse both ways.
func ReadKeyFile(path string) (Keys, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return Keys{}, fmt.Errorf("members key file %s: %w", path, err)
	}
	keys, err := ParseKeys(data)
	if err != nil {
		return Keys{}, fmt.Errorf("members key file %s: %w", path, err)
	}
	return keys, nil
}

// ParseKeys reads the content of a key file or of the Secret's key: one
// key (raw or base64), else a list of base64 keys (see ReadKeyFile).
func ParseKeys(data []byte) (Keys, error) {
	key, err := parseKey(data)
	if err == nil {
		return Keys{Primary: key}, nil
	}
	fields := strings.FieldsFunc(string(data), func(r rune) bool { return r == ',' || unicode.IsSpace(r) })
	if len(fields) < 2 {
		return Keys{}, err
	}
	var keys Keys
	for i, f := range fields {
		key, err := base64.StdEncoding.DecodeString(f)
		if err != nil || !validKeyLen(len(key)) {
			return Keys{}, fmt.Errorf("key %d of %d is not the base64 of a 16, 24 or 32-byte key", i+1, len(fields))
		}
		if i == 0 {
			keys.Primary = key
		} else if !bytes.Equal(key, keys.Primary) && !slices.ContainsFunc(keys.Others, func(k []byte) bool { return bytes.Equal(k, key) }) {
			keys.Others = append(keys.Others, key)
		}
	}
	return keys, nil
}

func parseKey(data []byte) ([]byte, error) {
	text := bytes.TrimSpace(data)
	if decoded, err := base64.StdEncoding.DecodeString(string(text)); err == nil && validKeyLen(len(decoded)) {
		return decoded, nil
	}
	if validKeyLen(len(data)) {
		return bytes.Clone(data), nil
	}
	return nil, fmt.Errorf("holds %d bytes: want a 16, 24 or 32-byte key, raw or base64-encoded (or several base64 keys, one per line)", len(data))
}

func validKeyLen(n int) bool { return n == 16 || n == 24 || n == 32 }

// checkKey refuses to run without encryption: the member list decides who
// announces which address, so an unauthenticated packet must not move it.
func checkKey(key []byte) error {
	if len(key) == 0 {
		return fmt.Errorf("no gossip encryption key: Config.SecretKey is required; " +
			"read it with ReadKeyFile from the key file mounted from the speaker's Secret")
	}
	if !validKeyLen(len(key)) {
		return fmt.Errorf("gossip encryption key is %d bytes: want 16, 24 or 32 (AES-128, -192 or -256)", len(key))
	}
	return nil
}

// KeyFingerprints names the keys this member runs with, the sending key
// first (v1beta1.MemberlistKeyFingerprint): the speaker publishes them on
// its liveness Lease so that a member whose key differs from its peers'
// is seen, by them and by the controller, without showing the keys.
func (m *Members) KeyFingerprints() []string { return slices.Clone(m.keys) }

func keyFingerprints(primary []byte, others [][]byte) []string {
	out := []string{v1beta1.MemberlistKeyFingerprint(primary)}
	for _, k := range others {
		out = append(out, v1beta1.MemberlistKeyFingerprint(k))
	}
	return out
}
