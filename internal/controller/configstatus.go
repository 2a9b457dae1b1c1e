package controller

import (
	"context"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	heraldac "github.com/herald-lb/herald/api/generated/applyconfiguration/api/v1beta1"
	"github.com/herald-lb/herald/api/v1beta1"
	"github.com/herald-lb/herald/internal/config"
)

// writeConfigStatuses sets the Valid condition of every advertisement and
// peer, writing only those that change.
func (c *Controller) writeConfigStatuses(ctx context.Context, in config.Input, problems []config.Problem) {
	now := time.Now()
	opts := metav1.ApplyOptions{FieldManager: FieldManager, Force: true}
	hc := c.herald.HeraldV1beta1()
	for _, o := range in.L2Advertisements {
		want := validConditions(problems, "L2Advertisement", o.Name)
		if sameConditions(o.Status.Conditions, want, o.Generation) {
			continue
		}
		ac := heraldac.L2Advertisement(o.Name).WithStatus(configStatus(o.Status, want, o.Generation, now))
		_, err := hc.L2Advertisements().ApplyStatus(ctx, ac, opts)
		c.logWrite(err, "L2Advertisement", o.Name)
	}
	for _, o := range in.BGPAdvertisements {
		want := validConditions(problems, "BGPAdvertisement", o.Name)
		if sameConditions(o.Status.Conditions, want, o.Generation) {
			continue
		}
		ac := heraldac.BGPAdvertisement(o.Name).WithStatus(configStatus(o.Status, want, o.Generation, now))
		_, err := hc.BGPAdvertisements().ApplyStatus(ctx, ac, opts)
		c.logWrite(err, "BGPAdvertisement", o.Name)
	}
	for _, o := range in.Peers {
		want := validConditions(problems, "BGPPeer", o.Name)
		if sameConditions(o.Status.Conditions, want, o.Generation) {
			continue
		}
		ac := heraldac.BGPPeer(o.Name).WithStatus(configStatus(o.Status, want, o.Generation, now))
		_, err := hc.BGPPeers().ApplyStatus(ctx, ac, opts)
		c.logWrite(err, "BGPPeer", o.Name)
	}
}

func validConditions(problems []config.Problem, kind, name string) []condition {
	ok, reason, msg := validCondition(config.ProblemsOf(problems, kind, name))
	return []condition{{Type: v1beta1.ConditionValid, Status: ok, Reason: reason, Message: msg}}
}

func configStatus(cur v1beta1.ConfigStatus, want []condition, generation int64, now time.Time) *heraldac.ConfigStatusApplyConfiguration {
	return heraldac.ConfigStatus().WithObservedGeneration(generation).
		WithConditions(applyConditions(cur.Conditions, want, generation, now)...)
}

func (c *Controller) logWrite(err error, kind, name string) {
	if err != nil {
		c.log.Error("writing status", "kind", kind, "name", name, "error", err)
		c.configQueue.AddRateLimited(configKey)
	}
}

// findObject returns the input object of a kind and name, for events.
func findObject(in config.Input, kind, name string) runtime.Object {
	switch kind {
	case "IPAddressPool":
		for _, o := range in.Pools {
			if o.Name == name {
				return o
			}
		}
	case "L2Advertisement":
		for _, o := range in.L2Advertisements {
			if o.Name == name {
				return o
			}
		}
	case "BGPAdvertisement":
		for _, o := range in.BGPAdvertisements {
			if o.Name == name {
				return o
			}
		}
	case "BGPPeer":
		for _, o := range in.Peers {
			if o.Name == name {
				return o
			}
		}
	case "Community":
		for _, o := range in.Communities {
			if o.Name == name {
				return o
			}
		}
	}
	return nil
}
