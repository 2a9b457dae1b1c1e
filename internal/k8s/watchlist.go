package k8s

import (
	"os"

	clientfeatures "k8s.io/client-go/features"
)

// watchListEnv is client-go's own switch for the WatchListClient gate.
const watchListEnv = "KUBE_FEATURE_" + string(clientfeatures.WatchListClient)

// ListThenWatch makes this process's informers start with a LIST served
// from the API server's watch cache, then watch, instead of client-go's
// default since 1.35, a streaming watch (WatchListClient) that first waits
// until the watch cache is provably fresh. For a resource that has not
// changed for a while, such as Herald's CRDs, that wait is about a second
// per informer: measured against kube-apiserver v1.37, a controller's caches
// synced in 1.10 s with streaming and in 0.13 s without, and the
// Services' addresses came that much later after every start and every
// failover. Setting $KUBE_FEATURE_WatchListClient keeps client-go's own
// choice. Call it first thing in main, before any client is made.
func ListThenWatch() {
	if _, set := os.LookupEnv(watchListEnv); set {
		return
	}
	clientfeatures.ReplaceFeatureGates(listThenWatch{clientfeatures.FeatureGates()})
}

// listThenWatch turns WatchListClient off and leaves every other gate as
// it was.
type listThenWatch struct{ clientfeatures.Gates }

func (g listThenWatch) Enabled(f clientfeatures.Feature) bool {
	if f == clientfeatures.WatchListClient {
		return false
	}
	return g.Gates.Enabled(f)
}

// watchListEnabled reports the gate as client-go sees it (for tests).
func watchListEnabled() bool {
	return clientfeatures.FeatureGates().Enabled(clientfeatures.WatchListClient)
}
