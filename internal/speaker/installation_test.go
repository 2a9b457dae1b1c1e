package speaker

import (
	"context"
	"log/slog"
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"

	heraldfake "github.com/herald-lb/herald/api/generated/clientset/versioned/fake"
	"github.com/herald-lb/herald/api/v1beta1"
	"github.com/herald-lb/herald/internal/installation"
	"github.com/herald-lb/herald/internal/k8s/lean/leantest"
)

// TestInformersReadOwnInstallation: the speaker's informers of Herald's
// configuration hold its installation's objects alone: the default
// installation's those without the label, blue's those labelled blue.
func TestInformersReadOwnInstallation(t *testing.T) {
	objs := []struct {
		name, inst string
	}{{"plain", ""}, {"blue", "blue"}, {"green", "green"}}
	hc := heraldfake.NewSimpleClientset()
	for _, o := range objs {
		meta := metav1.ObjectMeta{Name: o.name}
		if o.inst != "" {
			meta.Labels = map[string]string{v1beta1.LabelInstallation: o.inst}
		}
		if _, err := hc.HeraldV1beta1().IPAddressPools().Create(context.Background(), &v1beta1.IPAddressPool{ObjectMeta: meta}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := hc.HeraldV1beta1().L2Advertisements().Create(context.Background(), &v1beta1.L2Advertisement{ObjectMeta: meta}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	api := leantest.FromClientsets(fake.NewClientset(), hc, "herald-system")
	for inst, want := range map[installation.Name]string{"": "plain", "blue": "blue"} {
		i, err := newKindInformers(api, "node1", inst, slog.New(slog.DiscardHandler))
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		go i.pools.Run(ctx.Done())
		go i.l2Adverts.Run(ctx.Done())
		if !cache.WaitForCacheSync(ctx.Done(), i.pools.HasSynced, i.l2Adverts.HasSynced) {
			cancel()
			t.Fatalf("installation %q: caches not synced", inst)
		}
		for kind, inf := range map[string]cache.SharedIndexInformer{"pools": i.pools, "L2Advertisements": i.l2Adverts} {
			var names []string
			for _, o := range inf.GetStore().List() {
				names = append(names, o.(metav1.Object).GetName())
			}
			if !slices.Equal(names, []string{want}) {
				t.Errorf("installation %q reads %s %v, want [%s] (selector %q)", inst, kind, names, want, inst.Selector())
			}
		}
		cancel()
	}
}
