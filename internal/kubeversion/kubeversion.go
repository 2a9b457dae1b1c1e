package kubeversion

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	apiversion "k8s.io/apimachinery/pkg/version"
	"k8s.io/client-go/discovery"
)

// MinimumMinor is the oldest Kubernetes minor release (1.MinimumMinor)
// Herald supports.
const MinimumMinor = 31

// Check returns nil when the API server's version is 1.31 or newer, and an
// error naming the version and the reason otherwise. The version comes
// from gitVersion (v1.31.2, v1.31.2-gke.100, v1.32.0-rc.1), else from the
// major and minor fields (which some distributions suffix with "+").
func Check(info *apiversion.Info) error {
	major, minor, err := parse(info)
	if err != nil {
		return err
	}
	if major > 1 || (major == 1 && minor >= MinimumMinor) {
		return nil
	}
	return fmt.Errorf("the API server runs Kubernetes %s, older than 1.%d, the oldest Herald supports: "+
		"Herald's CRDs validate addresses with CEL IP and CIDR functions (Kubernetes 1.31+) and it sets "+
		"Services' status.loadBalancer.ingress[].ipMode (1.30+); upgrade the cluster or use an older "+
		"Herald (supported versions: docs/operations.md)", display(info, major, minor), MinimumMinor)
}

// CheckServer asks the API server for its version and checks it.
func CheckServer(d discovery.ServerVersionInterface) error {
	info, err := d.ServerVersion()
	if err != nil {
		return fmt.Errorf("reading the API server's version: %w", err)
	}
	return Check(info)
}

// WaitAndCheckServer is CheckServer that keeps asking while the API server
// cannot be reached, as at a pod's start before its node routes the
// Service address (seen in the lab: "no route to host" for the first
// second): retries back off from 200 ms to 5 s, each failure is passed to
// retrying, and only ctx ends the wait. A version that is too old is
// returned at once.
func WaitAndCheckServer(ctx context.Context, d discovery.ServerVersionInterface, retrying func(error)) error {
	wait := 200 * time.Millisecond
	for {
		info, err := d.ServerVersion()
		if err == nil {
			return Check(info)
		}
		err = fmt.Errorf("reading the API server's version: %w", err)
		if retrying != nil {
			retrying(err)
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(wait):
		}
		wait = min(2*wait, 5*time.Second)
	}
}

func parse(info *apiversion.Info) (major, minor int, err error) {
	if v := strings.TrimPrefix(info.GitVersion, "v"); v != "" {
		parts := strings.SplitN(v, ".", 3)
		if len(parts) >= 2 {
			major, err1 := strconv.Atoi(parts[0])
			minor, err2 := strconv.Atoi(leadingDigits(parts[1]))
			if err1 == nil && err2 == nil {
				return major, minor, nil
			}
		}
	}
	major, err1 := strconv.Atoi(leadingDigits(info.Major))
	minor, err2 := strconv.Atoi(leadingDigits(info.Minor))
	if err1 != nil || err2 != nil {
		return 0, 0, fmt.Errorf("cannot read the API server's version (gitVersion %q, major %q, minor %q)", info.GitVersion, info.Major, info.Minor)
	}
	return major, minor, nil
}

// leadingDigits returns the digits s starts with ("31+" -> "31").
func leadingDigits(s string) string {
	i := 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	return s[:i]
}

func display(info *apiversion.Info, major, minor int) string {
	if info.GitVersion != "" {
		return info.GitVersion
	}
	return fmt.Sprintf("%d.%d", major, minor)
}
