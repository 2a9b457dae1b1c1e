package k8s

import (
	"os"
	"testing"

	clientfeatures "k8s.io/client-go/features"
)

func TestListThenWatchTurnsOnlyWatchListOff(t *testing.T) {
	if _, set := os.LookupEnv(watchListEnv); set {
		t.Skipf("%s is set: client-go's own choice is kept", watchListEnv)
	}
	before := clientfeatures.FeatureGates()
	ListThenWatch()
	t.Cleanup(func() { clientfeatures.ReplaceFeatureGates(before) })
	if watchListEnabled() {
		t.Error("WatchListClient still on")
	}
	for _, f := range []clientfeatures.Feature{clientfeatures.InformerResourceVersion, clientfeatures.InOrderInformers, clientfeatures.ClientsAllowCBOR} {
		if got, want := clientfeatures.FeatureGates().Enabled(f), before.Enabled(f); got != want {
			t.Errorf("%s: %v, was %v", f, got, want)
		}
	}
}
