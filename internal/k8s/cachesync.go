package k8s

import (
	"context"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/cache"
)

// cacheSyncPoll is how often WaitForCacheSync checks the informers.
const cacheSyncPoll = 5 * time.Millisecond

// WaitForCacheSync waits until every informer has synced, checking every
// 5 ms, and reports whether they did before ctx ended. client-go's
// cache.WaitForCacheSync checks every 100 ms: informers that list in a few
// milliseconds were reported synced 100 ms late, a serial wait at every
// start of the controller and of every speaker. A check is a few atomic
// loads per informer.
func WaitForCacheSync(ctx context.Context, synced ...cache.InformerSynced) bool {
	return wait.PollUntilContextCancel(ctx, cacheSyncPoll, true, func(context.Context) (bool, error) {
		for _, s := range synced {
			if !s() {
				return false, nil
			}
		}
		return true, nil
	}) == nil
}
