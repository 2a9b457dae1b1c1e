package layer2

import (
	"context"
	"errors"
	"fmt"
	"time"
)

var errSubscriptionClosed = errors.New("netlink subscription closed")

// stableAfter is how long a subscription must last for the resubscribe
// backoff to start again from its minimum.
const stableAfter = time.Minute

// Run follows the node's links, addresses and default routes through
// netlink and keeps the responders in step with them and with
// SetAnnouncements, until ctx ends. Then it closes every socket and returns
// nil. It returns an error only when it cannot subscribe at all; a
// subscription that fails later (for example on a receive buffer overrun)
// is renewed, followed by a full relist.
func (a *Announcer) Run(ctx context.Context) error {
	if err := a.begin(ctx); err != nil {
		return err
	}
	defer a.end()
	t := newLinkTable()
	bo := newBackoff(100*time.Millisecond, 30*time.Second)
	for first := true; ; first = false {
		began := time.Now()
		err := a.follow(ctx, t)
		if ctx.Err() != nil {
			return nil
		}
		if first && !t.listed {
			return fmt.Errorf("layer2: follow interfaces: %w", err)
		}
		a.netlink.fail(time.Now(), err)
		if time.Since(began) > stableAfter {
			bo.reset()
		}
		d := bo.next()
		a.log.Warn("netlink subscription failed, resubscribing", "error", err, "after", d)
		if !wait(ctx, d, nil) {
			return nil
		}
	}
}

func (a *Announcer) begin(ctx context.Context) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.runCtx != nil {
		return errors.New("layer2: Run is already running")
	}
	a.runCtx = ctx
	if a.pause.cfg.PauseAfter > 0 {
		go a.heartbeat(ctx)
	}
	return nil
}

// end closes every responder and forgets the interfaces.
func (a *Announcer) end() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.runCtx = nil
	a.net = netState{}
	a.reconcileLocked()
}

// follow subscribes, relists, and applies netlink updates in batches until
// a subscription fails or ctx ends.
func (a *Announcer) follow(ctx context.Context, t *linkTable) error {
	sub, err := subscribe()
	if err != nil {
		return err
	}
	defer sub.stop()
	if err := relist(t); err != nil {
		return err
	}
	a.netlink.ok()
	a.publish(t.snapshot())
	for {
		// Apply everything queued before reconciling, so that a link
		// and its addresses coming up together are seen together.
		ev, err := sub.next(ctx)
		for err == nil && ev != nil {
			t.apply(ev)
			ev, err = sub.pending()
		}
		if err != nil {
			return err
		}
		if t.refreshRoutes {
			t.refreshRoutes = false
			if t.defaults, err = dumpDefaultRoutes(); err != nil {
				return err
			}
		}
		a.publish(t.snapshot())
	}
}

// next waits for the next netlink update.
func (s *subscription) next(ctx context.Context) (any, error) {
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case err := <-s.failed:
		return nil, err
	case u, ok := <-s.links:
		return orClosed(u, ok)
	case u, ok := <-s.addrs:
		return orClosed(u, ok)
	case u, ok := <-s.routes:
		return orClosed(u, ok)
	}
}

// pending returns a netlink update that is already queued, or nil.
func (s *subscription) pending() (any, error) {
	select {
	case err := <-s.failed:
		return nil, err
	case u, ok := <-s.links:
		return orClosed(u, ok)
	case u, ok := <-s.addrs:
		return orClosed(u, ok)
	case u, ok := <-s.routes:
		return orClosed(u, ok)
	default:
		return nil, nil
	}
}

func orClosed(u any, ok bool) (any, error) {
	if !ok {
		return nil, errSubscriptionClosed
	}
	return u, nil
}

// publish hands a new view of the links to the announcer and reconciles.
func (a *Announcer) publish(s netState) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.net = s
	a.reconcileLocked()
}
