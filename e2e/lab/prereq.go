package lab

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"runtime"
	"slices"
	"strings"

	"github.com/herald-lb/herald/test/testenv"
)

// debianPackages are the packages the lab runs commands from. The Habets
// `arping` conflicts with iputils-arping; the lab uses iputils-arping.
func debianPackages() []string {
	return []string{
		"iproute2", "procps", "iputils-ping", "iputils-arping", "ndisc6", "tcpdump",
		"nftables", "iptables", "conntrack", "frr", "bird2",
	}
}

// commandsNeeded are checked on machines without dpkg.
func commandsNeeded() []string {
	return []string{
		"ip", "sysctl", "ping", "arping", "ndisc6", "tcpdump", "nft", "iptables", "conntrack",
		"vtysh", "/usr/lib/frr/zebra", "/usr/lib/frr/bgpd", "/usr/lib/frr/bfdd", "bird", "birdc",
	}
}

// checkPlatform refuses anything but Linux as root.
func checkPlatform() error {
	if runtime.GOOS != "linux" {
		return fmt.Errorf("the lab needs Linux (network namespaces); this is %s", runtime.GOOS)
	}
	if os.Geteuid() != 0 {
		return errors.New("the lab needs root (network namespaces, raw sockets, apt-get); run it as root, e.g. `sudo make lab-up`")
	}
	return nil
}

// ensurePackages installs the missing Debian packages with
// hack/install-deps.sh (apt-get), unless noInstall.
func ensurePackages(ctx context.Context, noInstall bool, log *slog.Logger) error {
	missing, err := missingPackages(ctx)
	if err != nil {
		return err
	}
	if len(missing) == 0 {
		return checkFRRUser()
	}
	if noInstall {
		return fmt.Errorf("missing Debian packages %s: install them with `hack/install-deps.sh`", strings.Join(missing, " "))
	}
	root, err := testenv.RepoRoot()
	if err != nil {
		return fmt.Errorf("missing packages %s, and no hack/install-deps.sh to install them: %w", strings.Join(missing, " "), err)
	}
	log.Info("installing missing Debian packages with apt-get", "packages", missing)
	cmd := exec.CommandContext(ctx, filepath.Join(root, "hack", "install-deps.sh"), missing...)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("installing %s with hack/install-deps.sh: %w", strings.Join(missing, " "), err)
	}
	if still, err := missingPackages(ctx); err != nil || len(still) > 0 {
		return fmt.Errorf("packages still missing after apt-get: %v %v", still, err)
	}
	return checkFRRUser()
}

// missingPackages asks dpkg which packages are not installed; without
// dpkg it checks for the commands and fails if any is missing.
func missingPackages(ctx context.Context) ([]string, error) {
	if _, err := exec.LookPath("dpkg-query"); err != nil {
		var gone []string
		for _, c := range commandsNeeded() {
			if _, err := exec.LookPath(c); err != nil {
				gone = append(gone, c)
			}
		}
		if len(gone) > 0 {
			return nil, fmt.Errorf("commands %s are missing and this is not a Debian system: install iproute2, FRR, BIRD 2, iputils, ndisc6, tcpdump, nftables, iptables, conntrack by hand", strings.Join(gone, " "))
		}
		return nil, nil
	}
	pkgs := debianPackages()
	argv := append([]string{"dpkg-query", "-W", "-f", "${Package} ${db:Status-Status}\n"}, pkgs...)
	out, _ := run(ctx, argv...) // exit status 1 when some are unknown
	installed := map[string]bool{}
	for _, line := range strings.Split(out, "\n") {
		if f := strings.Fields(line); len(f) == 2 && f[1] == "installed" {
			installed[f[0]] = true
		}
	}
	var missing []string
	for _, p := range pkgs {
		if !installed[p] {
			missing = append(missing, p)
		}
	}
	slices.Sort(missing)
	return missing, nil
}

func checkFRRUser() error {
	if _, err := user.Lookup("frr"); err != nil {
		return fmt.Errorf("user frr (created by the frr package) is missing: %w", err)
	}
	return nil
}
