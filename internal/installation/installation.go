// Package installation decides what belongs to one Herald installation
// when several share a cluster (--installation, docs/decisions/0021):
// which configuration objects it reads, the name of its SpeakerStatuses,
// and the names it writes under (field manager, event source). The
// default installation (the empty name) keeps the names Herald always
// had. Pure: no client.
package installation

import (
	"fmt"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/herald-lb/herald/api/v1beta1"
)

// Name is an installation's name; "" is the default installation.
type Name string

// MaxLen bounds a name: it is appended to node names (SpeakerStatus,
// at most 253 characters) and to field managers.
const MaxLen = 40

// Parse checks a --installation value: empty, or a DNS label (lower-case
// letters, digits and '-') of at most MaxLen characters.
func Parse(s string) (Name, error) {
	if s == "" {
		return "", nil
	}
	if len(s) > MaxLen {
		return "", fmt.Errorf("--installation %q: at most %d characters", s, MaxLen)
	}
	if errs := validation.IsDNS1123Label(s); len(errs) > 0 {
		return "", fmt.Errorf("--installation %q: %s", s, errs[0])
	}
	return Name(s), nil
}

// IsDefault reports whether n is the default installation.
func (n Name) IsDefault() bool { return n == "" }

// Selector is the label selector of the objects n reads: those labelled
// herald.dev/installation=n, or for the default installation those
// without the label.
func (n Name) Selector() string {
	if n.IsDefault() {
		return "!" + v1beta1.LabelInstallation
	}
	return v1beta1.LabelInstallation + "=" + string(n)
}

// Owns reports whether an object with these labels is n's (what Selector
// selects).
func (n Name) Owns(labels map[string]string) bool {
	v, ok := labels[v1beta1.LabelInstallation]
	if n.IsDefault() {
		return !ok
	}
	return ok && v == string(n)
}

// Labels are the labels n puts on what it creates (its SpeakerStatuses):
// none for the default installation.
func (n Name) Labels() map[string]string {
	if n.IsDefault() {
		return nil
	}
	return map[string]string{v1beta1.LabelInstallation: string(n)}
}

// SpeakerStatus is the name of node's SpeakerStatus in n: the node's
// name, followed by "." and n outside the default installation. It fails
// when the name would exceed an object name's 253 characters.
func (n Name) SpeakerStatus(node string) (string, error) {
	if n.IsDefault() {
		return node, nil
	}
	name := node + "." + string(n)
	if len(name) > validation.DNS1123SubdomainMaxLength {
		return "", fmt.Errorf("node %s: SpeakerStatus name %s.%s is over %d characters; choose a shorter --installation",
			node, node, n, validation.DNS1123SubdomainMaxLength)
	}
	return name, nil
}

// Node is the node of n's SpeakerStatus named name; false when the name
// is not one of n's.
func (n Name) Node(name string) (string, bool) {
	if n.IsDefault() {
		return name, name != ""
	}
	suffix := "." + string(n)
	if len(name) <= len(suffix) || name[len(name)-len(suffix):] != suffix {
		return "", false
	}
	return name[:len(name)-len(suffix)], true
}

// Writer is the name n writes under, made from base ("herald-controller",
// "herald-speaker"): the field manager of its writes and the source of
// its events. The default installation's is base itself, so an upgrade
// keeps recognising what it wrote.
func (n Name) Writer(base string) string {
	if n.IsDefault() {
		return base
	}
	return base + "-" + string(n)
}
