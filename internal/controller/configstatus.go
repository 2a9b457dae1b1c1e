package controller

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	heraldac "github.com/herald-lb/herald/api/generated/applyconfiguration/api/v1beta1"
	"github.com/herald-lb/herald/api/v1beta1"
	"github.com/herald-lb/herald/internal/config"
)

// writeConfigStatuses sets the Valid condition of every advertisement and
// peer, and the record of its version in force (status.inForce), writing
// only those that change; it returns the first error.
func (c *Controller) writeConfigStatuses(ctx context.Context, in config.Input, problems []config.Problem) error {
	hc := c.herald.HeraldV1beta1()
	var errs []error
	for _, o := range in.L2Advertisements {
		rec, same := inForceRecord(problems, "L2Advertisement", o.Name, o.Status.InForce, func() *v1beta1.L2AdvertisementInForce { return config.L2AdvertisementInForce(o) })
		errs = append(errs, c.writeValid(ctx, problems, "L2Advertisement", o.ObjectMeta, o.Status.ConfigStatus, same, nil, func(ctx context.Context, st *heraldac.ConfigStatusApplyConfiguration) error {
			ac, err := applyConfig[heraldac.L2AdvertisementInForceApplyConfiguration](rec)
			if err != nil {
				return err
			}
			_, err = hc.L2Advertisements().ApplyStatus(ctx, heraldac.L2Advertisement(o.Name).WithResourceVersion(o.ResourceVersion).
				WithStatus(&heraldac.L2AdvertisementStatusApplyConfiguration{ConfigStatusApplyConfiguration: *st, InForce: ac}), c.applyOpts())
			return err
		}))
	}
	for _, o := range in.BGPAdvertisements {
		rec, same := inForceRecord(problems, "BGPAdvertisement", o.Name, o.Status.InForce, func() *v1beta1.BGPAdvertisementInForce { return config.BGPAdvertisementInForce(o) })
		errs = append(errs, c.writeValid(ctx, problems, "BGPAdvertisement", o.ObjectMeta, o.Status.ConfigStatus, same, nil, func(ctx context.Context, st *heraldac.ConfigStatusApplyConfiguration) error {
			ac, err := applyConfig[heraldac.BGPAdvertisementInForceApplyConfiguration](rec)
			if err != nil {
				return err
			}
			_, err = hc.BGPAdvertisements().ApplyStatus(ctx, heraldac.BGPAdvertisement(o.Name).WithResourceVersion(o.ResourceVersion).
				WithStatus(&heraldac.BGPAdvertisementStatusApplyConfiguration{ConfigStatusApplyConfiguration: *st, InForce: ac}), c.applyOpts())
			return err
		}))
	}
	for _, o := range in.Peers {
		rec, same := inForceRecord(problems, "BGPPeer", o.Name, o.Status.InForce, func() *v1beta1.BGPPeerInForce { return config.PeerInForce(o) })
		errs = append(errs, c.writeValid(ctx, problems, "BGPPeer", o.ObjectMeta, o.Status.ConfigStatus, same, c.peerConditions(o.Name), func(ctx context.Context, st *heraldac.ConfigStatusApplyConfiguration) error {
			ac, err := applyConfig[heraldac.BGPPeerInForceApplyConfiguration](rec)
			if err != nil {
				return err
			}
			_, err = hc.BGPPeers().ApplyStatus(ctx, heraldac.BGPPeer(o.Name).WithResourceVersion(o.ResourceVersion).
				WithStatus(&heraldac.BGPPeerStatusApplyConfiguration{ConfigStatusApplyConfiguration: *st, InForce: ac}), c.applyOpts())
			return err
		}))
	}
	return errors.Join(errs...)
}

// inForceRecord returns the record of what is in force to write in an
// object's status: its current version when that is in force (valid, not
// kept at an older version), else the record it has (an older version
// kept, or none while the object was never valid). same reports whether
// that is the record the status holds already.
func inForceRecord[R any](problems []config.Problem, kind, name string, cur *R, now func() *R) (rec *R, same bool) {
	if !config.InForceNow(problems, kind, name) {
		return cur, true
	}
	rec = now()
	return rec, equality.Semantic.DeepEqual(rec, cur)
}

// applyConfig converts a typed record to its apply configuration (they
// share their JSON form); nil stays nil, so that the apply keeps no record.
func applyConfig[AC any, R any](rec *R) (*AC, error) {
	if rec == nil {
		return nil, nil
	}
	b, err := json.Marshal(rec)
	if err != nil {
		return nil, fmt.Errorf("encoding the record in force: %w", err)
	}
	out := new(AC)
	if err := json.Unmarshal(b, out); err != nil {
		return nil, fmt.Errorf("decoding the record in force: %w", err)
	}
	return out, nil
}

// writeValid applies an object's Valid condition and the extra ones
// (and, through apply, its record in force) when any changed, behind the
// fence and conditional on the resourceVersion the decision read.
// sameRecord says the record needs no write.
func (c *Controller) writeValid(ctx context.Context, problems []config.Problem, kind string, meta metav1.ObjectMeta, cur v1beta1.ConfigStatus, sameRecord bool,
	extra []condition, apply func(context.Context, *heraldac.ConfigStatusApplyConfiguration) error) error {
	want := append(validConditions(problems, kind, meta.Name), extra...)
	if sameRecord && sameConditions(cur.Conditions, want, meta.Generation) {
		return nil
	}
	wctx, cancel, err := c.writeCtx(ctx)
	if err != nil {
		return err
	}
	defer cancel()
	if err := apply(wctx, configStatus(cur, want, meta.Generation, time.Now())); err != nil {
		return fmt.Errorf("%s %s status: %w", kind, meta.Name, err)
	}
	return nil
}

func validConditions(problems []config.Problem, kind, name string) []condition {
	ok, reason, msg := validCondition(config.ProblemsOf(problems, kind, name))
	return []condition{{Type: v1beta1.ConditionValid, Status: ok, Reason: reason, Message: msg}}
}

func configStatus(cur v1beta1.ConfigStatus, want []condition, generation int64, now time.Time) *heraldac.ConfigStatusApplyConfiguration {
	return heraldac.ConfigStatus().WithObservedGeneration(generation).
		WithConditions(applyConditions(cur.Conditions, want, generation, now)...)
}

// findObject returns the input object of a kind and name, for events.
func findObject(in config.Input, kind, name string) runtime.Object {
	switch kind {
	case "IPAddressPool":
		return named(in.Pools, name)
	case "L2Advertisement":
		return named(in.L2Advertisements, name)
	case "BGPAdvertisement":
		return named(in.BGPAdvertisements, name)
	case "BGPPeer":
		return named(in.Peers, name)
	case "Community":
		return named(in.Communities, name)
	}
	return nil
}

// named returns the object called name, or nil.
func named[T interface {
	runtime.Object
	GetName() string
}](objs []T, name string) runtime.Object {
	for _, o := range objs {
		if o.GetName() == name {
			return o
		}
	}
	return nil
}
