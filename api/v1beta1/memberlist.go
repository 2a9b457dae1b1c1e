package v1beta1

import (
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"strings"
)

// MemberlistSecretKey is the data key of the member-list Secret
// (herald-memberlist by default): the controller writes the speakers'
// encryption key under it, and the speakers mount it as their key file or,
// until the kubelet has filled that volume, read it from the Secret.
const MemberlistSecretKey = "key"

// AnnotationMemberlistKeys, on a speaker's liveness Lease, lists the
// fingerprints (MemberlistKeyFingerprint) of the member-list keys that
// speaker runs with, comma-separated, the key it sends with first. It says
// that the speaker holds a key (so the controller never invents another
// while speakers run) and lets every reader see which speakers cannot hear
// each other (MemberlistKeysCompatible) without showing the keys.
const AnnotationMemberlistKeys = "herald.dev/memberlist-keys"

// MemberlistKeyFingerprint is a short, one-way name of a member-list key:
// 12 hex digits of the SHA-256 of a fixed label and the key. It tells keys
// apart and reveals nothing usable of a 16-byte or longer random key.
func MemberlistKeyFingerprint(key []byte) string {
	sum := sha256.Sum256(append([]byte("herald.dev/memberlist-key\x00"), key...))
	return hex.EncodeToString(sum[:6])
}

// ParseMemberlistKeys reads AnnotationMemberlistKeys' value; nil when
// empty.
func ParseMemberlistKeys(value string) []string {
	var out []string
	for _, f := range strings.Split(value, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

// MemberlistKeysCompatible says whether two speakers with these key
// fingerprints (the sending key first) can hear each other: each one's
// sending key is among the other's keys. Either list empty: unknown, taken
// as compatible.
func MemberlistKeysCompatible(a, b []string) bool {
	if len(a) == 0 || len(b) == 0 {
		return true
	}
	return slices.Contains(b, a[0]) && slices.Contains(a, b[0])
}
