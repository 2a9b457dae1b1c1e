package lab

import (
	"strings"
	"time"

	"github.com/herald-lb/herald/test/labkit"
)

// stopNodes takes the nodes down in the order that leaves nothing behind:
// the kubelets first (so nothing restarts a container), then every
// process in the nodes' cgroups (the containers), then containerd and
// its shims. The cgroups themselves go in removeRun. It returns what
// failed; the caller stops the remaining processes.
func (l *Lab) stopNodes(procs []*labkit.Process) []string {
	var errs []string
	for _, p := range procs {
		if strings.HasPrefix(p.Name, "kubelet-") {
			if err := p.Stop(); err != nil {
				errs = append(errs, err.Error())
			}
		}
	}
	errs = append(errs, removeCgroups(l.id)...)
	for _, p := range procs {
		if strings.HasPrefix(p.Name, "containerd-") {
			if err := p.Stop(); err != nil {
				errs = append(errs, err.Error())
			}
		}
	}
	// the shims outlive containerd: they name the node directory on their
	// command line
	terminate(pidsReferring(l.dir+"/nodes/"), 5*time.Second)
	return errs
}
