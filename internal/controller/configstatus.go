package controller

import (
	"context"
	"errors"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	heraldac "github.com/herald-lb/herald/api/generated/applyconfiguration/api/v1beta1"
	"github.com/herald-lb/herald/api/v1beta1"
	"github.com/herald-lb/herald/internal/config"
)

// writeConfigStatuses sets the Valid condition of every advertisement and
// peer, writing only those that change; it returns the first error.
func (c *Controller) writeConfigStatuses(ctx context.Context, in config.Input, problems []config.Problem) error {
	hc := c.herald.HeraldV1beta1()
	var errs []error
	for _, o := range in.L2Advertisements {
		errs = append(errs, c.writeValid(ctx, problems, "L2Advertisement", o.ObjectMeta, o.Status, func(ctx context.Context, st *heraldac.ConfigStatusApplyConfiguration) error {
			_, err := hc.L2Advertisements().ApplyStatus(ctx, heraldac.L2Advertisement(o.Name).WithResourceVersion(o.ResourceVersion).WithStatus(st), applyOpts)
			return err
		}))
	}
	for _, o := range in.BGPAdvertisements {
		errs = append(errs, c.writeValid(ctx, problems, "BGPAdvertisement", o.ObjectMeta, o.Status, func(ctx context.Context, st *heraldac.ConfigStatusApplyConfiguration) error {
			_, err := hc.BGPAdvertisements().ApplyStatus(ctx, heraldac.BGPAdvertisement(o.Name).WithResourceVersion(o.ResourceVersion).WithStatus(st), applyOpts)
			return err
		}))
	}
	for _, o := range in.Peers {
		errs = append(errs, c.writeValid(ctx, problems, "BGPPeer", o.ObjectMeta, o.Status, func(ctx context.Context, st *heraldac.ConfigStatusApplyConfiguration) error {
			_, err := hc.BGPPeers().ApplyStatus(ctx, heraldac.BGPPeer(o.Name).WithResourceVersion(o.ResourceVersion).WithStatus(st), applyOpts)
			return err
		}))
	}
	return errors.Join(errs...)
}

// writeValid applies an object's Valid condition when it changed, behind
// the fence and conditional on the resourceVersion the decision read.
func (c *Controller) writeValid(ctx context.Context, problems []config.Problem, kind string, meta metav1.ObjectMeta, cur v1beta1.ConfigStatus,
	apply func(context.Context, *heraldac.ConfigStatusApplyConfiguration) error) error {
	want := validConditions(problems, kind, meta.Name)
	if sameConditions(cur.Conditions, want, meta.Generation) {
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
