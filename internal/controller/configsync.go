package controller

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"

	"github.com/herald-lb/herald/api/v1beta1"
	"github.com/herald-lb/herald/internal/allocator"
	"github.com/herald-lb/herald/internal/config"
)

// rebuildConfig reads every Herald object and Secret from the listers,
// builds a new snapshot (keeping refused edits' last valid versions, see
// config.LastGood), hands its pools to the allocator (which never drops an
// assignment), reports new problems, and requeues what may change. An error
// (listing, or writing a status) goes back to the config queue's backoff.
func (c *Controller) rebuildConfig(ctx context.Context) error {
	in, err := c.listers.Input()
	if err != nil {
		return fmt.Errorf("listing configuration: %w", err)
	}
	cfg, problems := c.lastGood.Build(in)
	c.mu.Lock()
	err = c.alloc.SetPools(allocatorPools(cfg))
	c.cfg = cfg
	c.poolGens = poolGenerations(in.Pools)
	c.poolInForce = poolsInForce(in.Pools, problems)
	old := c.problems
	c.problems = problems
	c.mu.Unlock()
	if err != nil {
		c.log.Error("configuring the allocator", "error", err)
	}
	c.log.Debug("configuration rebuilt", "pools", len(cfg.Pools), "problems", len(problems))
	c.reportProblems(old, problems, in)
	statusErr := c.writeConfigStatuses(ctx, in, problems)
	c.enqueueAllServices()
	c.enqueueAllPools()
	return statusErr
}

// poolGenerations maps each pool's name to its generation.
func poolGenerations(pools []*v1beta1.IPAddressPool) map[string]int64 {
	out := make(map[string]int64, len(pools))
	for _, p := range pools {
		out[p.Name] = p.Generation
	}
	return out
}

// poolsInForce maps each pool in force in its version of the input to the
// record of that version.
func poolsInForce(pools []*v1beta1.IPAddressPool, problems []config.Problem) map[string]*v1beta1.IPAddressPoolInForce {
	out := make(map[string]*v1beta1.IPAddressPoolInForce, len(pools))
	for _, p := range pools {
		if config.InForceNow(problems, "IPAddressPool", p.Name) {
			out[p.Name] = config.PoolInForce(p)
		}
	}
	return out
}

// allocatorPools converts the snapshot's pools, sorted by name.
func allocatorPools(cfg *config.Config) []allocator.Pool {
	out := make([]allocator.Pool, 0, len(cfg.Pools))
	for _, name := range cfg.PoolNames() {
		p := cfg.Pools[name]
		out = append(out, allocator.Pool{
			Name: p.Name, Ranges: p.Ranges, AutoAssign: p.AutoAssign, AvoidBuggyIPs: p.AvoidBuggyIPs,
			ShareAcrossNamespaces: p.ShareAcrossNamespaces, Reserved: p.SubnetRouterAnycast,
			Priority: p.Priority, Namespaces: p.Namespaces, NamespaceSelectors: p.NamespaceSelectors,
			ServiceSelectors: p.ServiceSelectors, Closed: p.Deleting,
			HeldOutside: p.Outside, OutsideUnrecorded: p.OutsideUnrecorded,
		})
	}
	return out
}

// reportProblems emits one Warning event per problem that was not there
// before, on the object it names, and logs it.
func (c *Controller) reportProblems(old, now []config.Problem, in config.Input) {
	seen := map[string]bool{}
	for _, p := range old {
		seen[p.Error()] = true
	}
	for _, p := range now {
		if seen[p.Error()] {
			continue
		}
		c.log.Warn("configuration problem", "kind", p.Kind, "name", p.Name, "field", p.Field, "reason", p.Reason, "message", p.Message)
		if obj := findObject(in, p.Kind, p.Name); obj != nil {
			c.rec.Eventf(obj, corev1.EventTypeWarning, p.Reason, "%s: %s", p.Field, p.Message)
		}
	}
}

// conditionFromProblems summarises an object's problems as its Valid
// condition.
func validCondition(problems []config.Problem) (status bool, reason, message string) {
	if len(problems) == 0 {
		return true, "Valid", "the object is valid and in use"
	}
	msg := ""
	for i, p := range problems {
		if i > 0 {
			msg += "; "
		}
		msg += fmt.Sprintf("%s: %s", p.Field, p.Message)
	}
	return false, problems[0].Reason, msg
}
