// Package nodewrites lists the writes in Herald's namespace that a
// speaker's or the controller's credential attempts, each with whether
// the API server must let it through, and runs them with a given
// credential (server-side dry runs: nothing is changed). The install
// test runs them with impersonated identities, the lab test with the
// tokens Herald's pods hold.
package nodewrites

import (
	"context"
	"fmt"
	"strings"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/retry"

	"github.com/herald-lb/herald/api/generated/clientset/versioned"
	heraldv1 "github.com/herald-lb/herald/api/v1beta1"
)

// Write is one write a credential attempts.
type Write struct {
	What    string
	Allowed bool
	// Refusal is a piece of the refusal's message (a refused write).
	Refusal string
	do      func(ctx context.Context, c clients) error
}

type clients struct {
	kube   kubernetes.Interface
	herald versioned.Interface
	ns     string
}

var dryRun = []string{metav1.DryRunAll}

// Speaker is what the speaker of node may and may not write: not the
// announcement hold, not other's liveness Lease, not the leader Lease,
// not other's SpeakerStatus, not its own Lease holding other's identity;
// its own Lease and its own SpeakerStatus, yes.
func Speaker(node, other, leader string) []Write {
	own, others := heraldv1.SpeakerLeasePrefix+node, heraldv1.SpeakerLeasePrefix+other
	return []Write{
		{What: "create the announcement hold", Refusal: "refused: a speaker writes only its own node's", do: createHold},
		{What: "renew " + others, Refusal: "/" + others + " refused", do: renewLease(others, node)},
		{What: "delete the leader Lease " + leader, Refusal: "/" + leader + " refused", do: deleteLease(leader)},
		{What: "write SpeakerStatus " + other, Refusal: "SpeakerStatus " + other + " refused", do: writeStatus(other)},
		{What: "renew " + own + " holding " + other + "'s identity", Refusal: "holderIdentity must be " + node, do: renewLease(own, other)},
		{What: "renew " + own, Allowed: true, do: renewLease(own, node)},
		{What: "write SpeakerStatus " + node, Allowed: true, do: writeStatus(node)},
		{What: "delete " + own, Allowed: true, do: deleteLease(own)},
	}
}

// SpeakerWithoutClaim is what a credential of the speaker's account
// that carries no node-name claim (a token bound to no pod) may write:
// not even node's Lease or SpeakerStatus.
func SpeakerWithoutClaim(node string) []Write {
	const refusal = "the credential carries no node-name claim"
	return []Write{
		{What: "renew " + heraldv1.SpeakerLeasePrefix + node + " without a node claim", Refusal: refusal, do: renewLease(heraldv1.SpeakerLeasePrefix+node, node)},
		{What: "write SpeakerStatus " + node + " without a node claim", Refusal: refusal, do: writeStatus(node)},
	}
}

// Controller is what the controller may and may not write: no speaker's
// liveness Lease (deleting none at all, by RBAC), not the announcement
// hold, no SpeakerStatus (RBAC); its leader Lease, yes.
func Controller(node, leader string) []Write {
	lease := heraldv1.SpeakerLeasePrefix + node
	return []Write{
		{What: "renew " + lease, Refusal: "never a speaker's liveness Lease", do: renewLease(lease, node)},
		{What: "delete " + lease, Refusal: `cannot delete resource "leases"`, do: deleteLease(lease)},
		{What: "create the announcement hold", Refusal: "nor the announcement hold", do: createHold},
		{What: "write SpeakerStatus " + node, Refusal: "forbidden", do: writeStatus(node)},
		{What: "renew the leader Lease " + leader, Allowed: true, do: touchLease(leader)},
	}
}

// Operator is what an operator (a cluster admin) may write: the
// announcement hold, as kubectl herald migrate --plan's script does with
// the operator's credentials.
func Operator() []Write {
	return []Write{{What: "create the announcement hold as the operator", Allowed: true, do: createHold}}
}

// Run attempts each write with cfg's credential in namespace ns, logs
// what came of each with logf (nil: no log), and returns one error per
// write that went otherwise than listed.
func Run(ctx context.Context, cfg *rest.Config, ns string, writes []Write, logf func(string, ...any)) []error {
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return []error{err}
	}
	herald, err := versioned.NewForConfig(cfg)
	if err != nil {
		return []error{err}
	}
	c := clients{kube: kube, herald: herald, ns: ns}
	var errs []error
	for _, w := range writes {
		got := retry.RetryOnConflict(retry.DefaultRetry, func() error { return w.do(ctx, c) })
		if logf != nil {
			logf("%s: %v", w.What, orAllowed(got))
		}
		if err := check(w, got); err != nil {
			errs = append(errs, err)
		}
	}
	return errs
}

func orAllowed(err error) any {
	if err == nil {
		return "allowed"
	}
	return err
}

func check(w Write, err error) error {
	switch {
	case w.Allowed && err != nil:
		return fmt.Errorf("%s: refused (%v), want allowed", w.What, err)
	case w.Allowed:
		return nil
	case err == nil:
		return fmt.Errorf("%s: allowed, want refused", w.What)
	case !apierrors.IsForbidden(err) && !apierrors.IsInvalid(err):
		return fmt.Errorf("%s: %v, want refused as forbidden", w.What, err)
	case !strings.Contains(err.Error(), w.Refusal):
		return fmt.Errorf("%s: refused with %q, want a message with %q", w.What, err.Error(), w.Refusal)
	}
	return nil
}

func createHold(ctx context.Context, c clients) error {
	_, err := c.kube.CoordinationV1().Leases(c.ns).Create(ctx, &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: heraldv1.AnnounceHoldLease},
		Spec:       coordinationv1.LeaseSpec{HolderIdentity: new("attacker")},
	}, metav1.CreateOptions{DryRun: dryRun})
	return err
}

// renewLease reads a Lease and writes it back renewed, holding holder.
func renewLease(name, holder string) func(context.Context, clients) error {
	return func(ctx context.Context, c clients) error {
		leases := c.kube.CoordinationV1().Leases(c.ns)
		l, err := leases.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		l.Spec.HolderIdentity, l.Spec.RenewTime = new(holder), new(metav1.NowMicro())
		_, err = leases.Update(ctx, l, metav1.UpdateOptions{DryRun: dryRun})
		return err
	}
}

// touchLease writes a Lease back with a new renew time, its holder
// unchanged.
func touchLease(name string) func(context.Context, clients) error {
	return func(ctx context.Context, c clients) error {
		leases := c.kube.CoordinationV1().Leases(c.ns)
		l, err := leases.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		l.Spec.RenewTime = new(metav1.NowMicro())
		_, err = leases.Update(ctx, l, metav1.UpdateOptions{DryRun: dryRun})
		return err
	}
}

func deleteLease(name string) func(context.Context, clients) error {
	return func(ctx context.Context, c clients) error {
		return c.kube.CoordinationV1().Leases(c.ns).Delete(ctx, name, metav1.DeleteOptions{DryRun: dryRun})
	}
}

// writeStatus reads a node's SpeakerStatus and writes it back with a
// changed pod name.
func writeStatus(node string) func(context.Context, clients) error {
	return func(ctx context.Context, c clients) error {
		statuses := c.herald.HeraldV1beta1().SpeakerStatuses()
		s, err := statuses.Get(ctx, node, metav1.GetOptions{})
		if err != nil {
			return err
		}
		s.Status.Pod = "forged"
		_, err = statuses.Update(ctx, s, metav1.UpdateOptions{DryRun: dryRun})
		return err
	}
}
