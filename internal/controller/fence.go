package controller

import (
	"context"
)

// writeCtx returns the context a write to the API server runs under: it
// ends when this replica's lease may have expired (see leader.Fence), and is
// refused with leader.ErrNotLeader once it has. Every write of the controller
// but the member-list Secret (which any replica may create) passes here.
func (c *Controller) writeCtx(ctx context.Context) (context.Context, context.CancelFunc, error) {
	return c.fence.Check(ctx)
}
