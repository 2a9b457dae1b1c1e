package members

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"os"
)

// ReadKeyFile reads the gossip encryption key from a file, normally a
// Secret key mounted into the speaker Pod. The content is either the key
// itself (exactly 16, 24 or 32 bytes: AES-128, -192 or -256) or its
// standard base64 encoding, with or without a trailing newline, e.g. made
// with `head -c 32 /dev/urandom | base64`.
//
// Every speaker reads the same Secret through this function, so all of
// them derive the same key even for content that would parse both ways.
func ReadKeyFile(path string) ([]byte, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("members key file %s: %w", path, err)
	}
	key, err := parseKey(data)
	if err != nil {
		return nil, fmt.Errorf("members key file %s: %w", path, err)
	}
	return key, nil
}

func parseKey(data []byte) ([]byte, error) {
	text := bytes.TrimSpace(data)
	if decoded, err := base64.StdEncoding.DecodeString(string(text)); err == nil && validKeyLen(len(decoded)) {
		return decoded, nil
	}
	if validKeyLen(len(data)) {
		return bytes.Clone(data), nil
	}
	return nil, fmt.Errorf("holds %d bytes: want a 16, 24 or 32-byte key, raw or base64-encoded", len(data))
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
