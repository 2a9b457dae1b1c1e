package lean_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/herald-lb/herald/api/generated/clientset/versioned"
	heraldv1 "github.com/herald-lb/herald/api/v1beta1"
	"github.com/herald-lb/herald/internal/k8s"
	"github.com/herald-lb/herald/internal/k8s/lean"
	"github.com/herald-lb/herald/test/labkit"
	"github.com/herald-lb/herald/test/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// TestAgainstTheAPIServer drives every client of lean.API against a real
// kube-apiserver: informers see objects created by the full clientset and
// their changes, field selectors apply, Leases and SpeakerStatuses are
// written and read back, and events are recorded on a Service (and
// counted again through the sink's Patch) and on one of Herald's kinds.
func TestAgainstTheAPIServer(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cfg := testenv.Shared(t).AdminConfig
	kube := kubernetes.NewForConfigOrDie(cfg)
	herald := versioned.NewForConfigOrDie(cfg)
	ns := fmt.Sprintf("lean-%d", time.Now().UnixNano()%1e6)
	if _, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	api, err := lean.New(cfg, ns)
	if err != nil {
		t.Fatal(err)
	}

	svcInf, err := lean.NewInformer(api.Services, &corev1.Service{}, lean.InformerOptions{Transform: k8s.DropManagedFields})
	if err != nil {
		t.Fatal(err)
	}
	poolName := ns + "-b"
	poolInf, err := lean.NewInformer(api.Pools, &heraldv1.IPAddressPool{}, lean.InformerOptions{Tweak: func(o *metav1.ListOptions) {
		o.FieldSelector = fields.OneTermEqualSelector("metadata.name", poolName).String()
	}})
	if err != nil {
		t.Fatal(err)
	}
	for _, inf := range []cache.SharedIndexInformer{svcInf, poolInf} {
		go inf.RunWithContext(ctx)
	}
	if !cache.WaitForCacheSync(ctx.Done(), svcInf.HasSynced, poolInf.HasSynced) {
		t.Fatal("caches did not sync")
	}
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Ports: []corev1.ServicePort{{Port: 80}}}}
	if svc, err = kube.CoreV1().Services(ns).Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	cached := func() *corev1.Service {
		obj, ok, _ := svcInf.GetIndexer().GetByKey(ns + "/web")
		if !ok {
			return nil
		}
		return obj.(*corev1.Service)
	}
	labkit.Eventually(t, 30*time.Second, "the informer to see the new Service", func() bool { return cached() != nil })
	if c := cached(); c.ManagedFields != nil || c.Spec.Ports[0].Port != 80 {
		t.Errorf("cached Service: managedFields %v, ports %v: want no managedFields, port 80", c.ManagedFields, c.Spec.Ports)
	}
	svc.Labels = map[string]string{"changed": "yes"}
	if svc, err = kube.CoreV1().Services(ns).Update(ctx, svc, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	labkit.Eventually(t, 30*time.Second, "the informer to see the Service's change", func() bool { return cached().Labels["changed"] == "yes" })

	for _, name := range []string{ns + "-a", poolName} {
		pool := &heraldv1.IPAddressPool{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: heraldv1.IPAddressPoolSpec{Addresses: []string{"198.51.100.0/28"}}}
		if _, err := herald.HeraldV1beta1().IPAddressPools().Create(ctx, pool, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		defer herald.HeraldV1beta1().IPAddressPools().Delete(context.Background(), name, metav1.DeleteOptions{})
	}
	labkit.Eventually(t, 30*time.Second, "the pool informer to see its pool", func() bool { return len(poolInf.GetStore().ListKeys()) == 1 })
	if keys := poolInf.GetStore().ListKeys(); len(keys) != 1 || keys[0] != poolName {
		t.Errorf("pool informer with a field selector on %s holds %v", poolName, keys)
	}

	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: ns + "-node"}}
	if _, err := kube.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	defer kube.CoreV1().Nodes().Delete(context.Background(), node.Name, metav1.DeleteOptions{})
	if got, err := api.Nodes.Get(ctx, node.Name, metav1.GetOptions{}); err != nil || got.Name != node.Name {
		t.Errorf("Nodes.Get: %v, %v", got, err)
	}
	if _, err := api.EndpointSlices.List(ctx, metav1.ListOptions{}); err != nil {
		t.Errorf("EndpointSlices.List: %v", err)
	}
	if _, err := api.Secrets.List(ctx, metav1.ListOptions{}); err != nil {
		t.Errorf("Secrets.List: %v", err)
	}

	checkLeases(ctx, t, api)
	checkSpeakerStatus(ctx, t, api, node.Name)
	checkEvents(ctx, t, api, kube, svc, ns)
}

// checkLeases: create, read, update, list and delete a Lease.
func checkLeases(ctx context.Context, t *testing.T, api *lean.API) {
	t.Helper()
	holder := "node1"
	l, err := api.Leases.Create(ctx, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "l", Labels: map[string]string{"k": "v"}},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: &holder}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	holder2 := "node2"
	l.Spec.HolderIdentity = &holder2
	if _, err := api.Leases.Update(ctx, l, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if got, err := api.Leases.Get(ctx, "l", metav1.GetOptions{}); err != nil || *got.Spec.HolderIdentity != holder2 {
		t.Fatalf("Lease read back: %v, %v; want holder %s", got, err, holder2)
	}
	if list, err := api.Leases.List(ctx, metav1.ListOptions{LabelSelector: "k=v"}); err != nil || len(list.Items) != 1 {
		t.Fatalf("Lease list by label: %v, %v", list, err)
	}
	if err := api.Leases.Delete(ctx, "l", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := api.Leases.Get(ctx, "l", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("deleted Lease: %v, want NotFound", err)
	}
}

// checkSpeakerStatus: create, update and read back a SpeakerStatus.
func checkSpeakerStatus(ctx context.Context, t *testing.T, api *lean.API, name string) {
	t.Helper()
	st, err := api.SpeakerStatuses.Create(ctx, &heraldv1.SpeakerStatus{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{FieldManager: "herald-speaker"})
	if err != nil {
		t.Fatal(err)
	}
	st.Status.Pod = "speaker-x"
	if _, err := api.SpeakerStatuses.Update(ctx, st, metav1.UpdateOptions{FieldManager: "herald-speaker"}); err != nil {
		t.Fatal(err)
	}
	if got, err := api.SpeakerStatuses.Get(ctx, name, metav1.GetOptions{}); err != nil || got.Status.Pod != "speaker-x" {
		t.Fatalf("SpeakerStatus read back: %+v, %v", got, err)
	}
}

// checkEvents: events through the lean sink and scheme, on a Service
// (recorded twice: the second is a Patch of the first's count) and on a
// cluster-scoped Herald object (it lands in "default").
func checkEvents(ctx context.Context, t *testing.T, api *lean.API, kube kubernetes.Interface, svc *corev1.Service, ns string) {
	t.Helper()
	rec, stop := k8s.NewRecorder(ctx, api.Events, api.Scheme, "herald-speaker")
	defer stop()
	rec.Eventf(svc, corev1.EventTypeNormal, "LeanTest", "announcing from %s", ns)
	rec.Eventf(svc, corev1.EventTypeNormal, "LeanTest", "announcing from %s", ns)
	peer := &heraldv1.BGPPeer{ObjectMeta: metav1.ObjectMeta{Name: ns + "-peer", UID: "u-peer"}}
	rec.Eventf(peer, corev1.EventTypeWarning, "LeanTestPeer", "session down")
	found := func(namespace, reason, kind string, count int32) bool {
		list, err := kube.CoreV1().Events(namespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false
		}
		for _, e := range list.Items {
			if e.Reason == reason && e.InvolvedObject.Kind == kind && e.Count >= count && e.Source.Component == "herald-speaker" {
				return true
			}
		}
		return false
	}
	labkit.Eventually(t, 30*time.Second, "the Service's event counted twice", func() bool { return found(ns, "LeanTest", "Service", 2) })
	labkit.Eventually(t, 30*time.Second, "the BGPPeer's event in default", func() bool { return found("default", "LeanTestPeer", "BGPPeer", 1) })
}
