package speaker

import (
	"context"
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/ptr"

	heraldfake "github.com/herald-lb/herald/api/generated/clientset/versioned/fake"
	"github.com/herald-lb/herald/api/v1beta1"
	"github.com/herald-lb/herald/internal/announce"
	"github.com/herald-lb/herald/internal/k8s/lean/leantest"
	"github.com/herald-lb/herald/internal/service"
)

func ptrTo[T any](v T) *T { return &v }

// fullService is a Service with every field the API fills in, and some
// that users add.
func fullService(class *string, etp corev1.ServiceExternalTrafficPolicy) *corev1.Service {
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{
			Name: "web", Namespace: "shop", UID: "u1", ResourceVersion: "42", Labels: map[string]string{"tier": "front"},
			Annotations: map[string]string{
				v1beta1.AnnotationAllocatedFromPool:                "main",
				"kubectl.kubernetes.io/last-applied-configuration": `{"a very long":"json"}`,
			},
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubectl"}},
		},
		Spec: corev1.ServiceSpec{
			Type: corev1.ServiceTypeLoadBalancer, LoadBalancerClass: class, ExternalTrafficPolicy: etp,
			Ports:     []corev1.ServicePort{{Name: "http", Port: 80}},
			ClusterIP: "10.0.0.1", ClusterIPs: []string{"10.0.0.1"}, Selector: map[string]string{"app": "web"},
		},
		Status: corev1.ServiceStatus{
			LoadBalancer: corev1.LoadBalancerStatus{Ingress: []corev1.LoadBalancerIngress{
				{IP: "198.51.100.10", IPMode: ptrTo(corev1.LoadBalancerIPModeVIP)}, {IP: "2001:db8::10"}, {Hostname: "lb.example"},
			}},
			Conditions: []metav1.Condition{{Type: "herald.dev/Announced", Status: metav1.ConditionTrue, Message: "long"}},
		},
	}
}

func fullSlice(node string, ready, serving, terminating *bool) *discoveryv1.EndpointSlice {
	return &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Name: "web-abc", Namespace: "shop", Labels: map[string]string{discoveryv1.LabelServiceName: "web"}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints: []discoveryv1.Endpoint{{
			Addresses: []string{"10.1.0.5"}, NodeName: &node, Zone: ptrTo("a"), Hostname: ptrTo("web-0"),
			TargetRef:  &corev1.ObjectReference{Kind: "Pod", Name: "web-0", Namespace: "shop", UID: "p1"},
			Conditions: discoveryv1.EndpointConditions{Ready: ready, Serving: serving, Terminating: terminating},
		}},
		Ports: []discoveryv1.EndpointPort{{Port: ptrTo(int32(8080))}},
	}
}

// TestSlimServiceKeepsWhatTheSpeakerReads: for every class and traffic
// policy, and every endpoint state, what announce and the class check
// read of a slimmed Service and EndpointSlice equals what they read of the
// full objects; the rest is gone.
func TestSlimServiceKeepsWhatTheSpeakerReads(t *testing.T) {
	classes := []Class{{}, {OwnClassOnly: true}, {Name: "other.example/lb"}}
	bools := []*bool{nil, ptrTo(true), ptrTo(false)}
	for _, class := range []*string{nil, ptrTo(v1beta1.LoadBalancerClass), ptrTo("other.example/lb")} {
		for _, etp := range []corev1.ServiceExternalTrafficPolicy{"", corev1.ServiceExternalTrafficPolicyCluster, corev1.ServiceExternalTrafficPolicyLocal} {
			for _, ready := range bools {
				for _, serving := range bools {
					for _, term := range bools {
						svc, es := fullService(class, etp), fullSlice("node2", ready, serving, term)
						slim, slimES := slimService(svc), slimSlice(es)
						want := announce.ServiceFrom(svc, []*discoveryv1.EndpointSlice{es})
						if got := announce.ServiceFrom(slim, []*discoveryv1.EndpointSlice{slimES}); !reflect.DeepEqual(got, want) {
							t.Fatalf("class %v etp %q: slimmed %+v, full %+v", class, etp, got, want)
						}
						for _, c := range classes {
							if service.Class(c).IsOurs(slim) != service.Class(c).IsOurs(svc) {
								t.Fatalf("class %v, %+v: IsOurs differs", class, c)
							}
						}
					}
				}
			}
		}
	}
	slim := slimService(fullService(nil, ""))
	if len(slim.Annotations) != 1 || slim.ManagedFields != nil || slim.Spec.Ports != nil || slim.Status.Conditions != nil || slim.Spec.Selector != nil {
		t.Errorf("slimmed Service keeps more than the speaker reads: %+v", slim)
	}
	if slim.UID != "u1" || slim.ResourceVersion != "42" {
		t.Errorf("slimmed Service lost its identity (events name it): %+v", slim.ObjectMeta)
	}
	es := slimSlice(fullSlice("node2", nil, nil, nil))
	if ep := es.Endpoints[0]; ep.TargetRef != nil || ep.Addresses != nil || ep.Zone != nil || es.Ports != nil {
		t.Errorf("slimmed EndpointSlice keeps more than the speaker reads: %+v", es)
	}
	if es.Labels[discoveryv1.LabelServiceName] != "web" {
		t.Errorf("slimmed EndpointSlice lost its Service label: %v", es.Labels)
	}
}

// Class is service.Class, named here for the table above.
type Class = service.Class

// TestSlimNodeKeepsWhatTheSpeakerReads: eligibility (every exclusion and
// taint case of the exhaustive test's inputs), addresses and labels read
// the same of a slimmed Node; images and annotations are gone.
func TestSlimNodeKeepsWhatTheSpeakerReads(t *testing.T) {
	now := metav1.Now()
	for _, label := range []map[string]string{nil, {corev1.LabelNodeExcludeBalancers: "true"}, {corev1.LabelNodeExcludeBalancers: "False"}, {v1beta1.LabelDrain: "true"}} {
		for _, taints := range [][]corev1.Taint{nil, {{Key: "ToBeDeletedByClusterAutoscaler", Effect: corev1.TaintEffectNoSchedule}}} {
			for _, deleting := range []*metav1.Time{nil, &now} {
				for _, cond := range []corev1.ConditionStatus{corev1.ConditionTrue, corev1.ConditionFalse} {
					n := &corev1.Node{
						ObjectMeta: metav1.ObjectMeta{Name: "node1", UID: "n1", Labels: label, DeletionTimestamp: deleting,
							Annotations: map[string]string{"csi.volume.kubernetes.io/nodeid": "{}"}},
						Spec: corev1.NodeSpec{Taints: taints, PodCIDR: "10.1.0.0/24"},
						Status: corev1.NodeStatus{
							Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: cond}, {Type: corev1.NodeNetworkUnavailable, Status: cond}},
							Addresses:  []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "198.51.100.11"}, {Type: corev1.NodeInternalIP, Address: "2001:db8:1::11"}},
							Images:     []corev1.ContainerImage{{Names: []string{"registry.example/big:1"}, SizeBytes: 1 << 30}},
						},
					}
					slim := slimNode(n)
					for _, e := range []announce.Eligibility{{}, {IgnoreExcludeLabel: true}} {
						ok1, why1 := announce.NodeEligibleWith(n, e)
						ok2, why2 := announce.NodeEligibleWith(slim, e)
						if ok1 != ok2 || why1 != why2 {
							t.Fatalf("%+v: eligible %v %q slimmed, %v %q full", n.ObjectMeta, ok2, why2, ok1, why1)
						}
					}
					v4a, v6a := nodeAddresses(n)
					v4b, v6b := nodeAddresses(slim)
					if v4a != v4b || v6a != v6b || !reflect.DeepEqual(slim.Labels, n.Labels) || slim.UID != n.UID {
						t.Fatalf("slimmed Node reads differently: %+v", slim)
					}
					if slim.Status.Images != nil || slim.Annotations != nil {
						t.Fatalf("slimmed Node keeps images or annotations: %+v", slim)
					}
				}
			}
		}
	}
}

// TestSlimObjectsInTheInformers: the speaker's informers store the
// slimmed objects, and strip managedFields from the other kinds.
func TestSlimObjectsInTheInformers(t *testing.T) {
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "s", Namespace: "shop", ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "x"}}}}
	kube := fake.NewClientset(fullService(nil, ""), fullSlice("node2", nil, nil, nil), secret)
	s, err := New(leantest.FromClientsets(kube, heraldfake.NewClientset(), "shop"), Options{NodeName: "node1", Namespace: "shop"})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if !s.cluster.sync(ctx) {
		t.Fatal("caches did not sync")
	}
	svc, err := s.cluster.services.Services("shop").Get("web")
	if err != nil || svc.Spec.Ports != nil || svc.Status.LoadBalancer.Ingress[0].IP != "198.51.100.10" {
		t.Errorf("cached Service %+v, %v: want the slimmed one", svc, err)
	}
	obj, _, err := s.cluster.sliceIndex.GetByKey("shop/web-abc")
	es, _ := obj.(*discoveryv1.EndpointSlice)
	if err != nil || es == nil || es.Endpoints[0].TargetRef != nil || *es.Endpoints[0].NodeName != "node2" {
		t.Errorf("cached EndpointSlice %+v, %v: want the slimmed one", es, err)
	}
	sec, err := s.cluster.listers.Secrets.Get("s")
	if err != nil || sec.ManagedFields != nil {
		t.Errorf("cached Secret %+v, %v: want it without managedFields", sec, err)
	}
}

// TestNodeStatusReportQueuesNoReconcile: the kubelet's periodic status
// report (new heartbeat times, a new resourceVersion, images) leaves the
// slimmed Node as it was and queues no reconcile; a change to anything
// the speaker reads of a Node queues one, as do adds and deletes.
func TestNodeStatusReportQueuesNoReconcile(t *testing.T) {
	base := func() *corev1.Node {
		return &corev1.Node{
			ObjectMeta: metav1.ObjectMeta{Name: "node1", UID: "n1", ResourceVersion: "10", Labels: map[string]string{"zone": "a"}},
			Spec:       corev1.NodeSpec{Taints: []corev1.Taint{{Key: "dedicated", Value: "lb", Effect: corev1.TaintEffectNoSchedule}}},
			Status: corev1.NodeStatus{
				Conditions: []corev1.NodeCondition{
					{Type: corev1.NodeReady, Status: corev1.ConditionTrue, LastHeartbeatTime: metav1.Unix(100, 0), Reason: "KubeletReady", Message: "kubelet is posting ready status"},
					{Type: corev1.NodeNetworkUnavailable, Status: corev1.ConditionFalse, LastHeartbeatTime: metav1.Unix(100, 0)},
				},
				Addresses: []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "198.51.100.11"}},
			},
		}
	}
	queued := 0
	h := nodeHandler(func() { queued++ })
	for _, tc := range []struct {
		what   string
		change func(*corev1.Node)
		queue  bool
	}{
		{"status report", func(n *corev1.Node) {
			n.ResourceVersion = "11"
			for i := range n.Status.Conditions {
				n.Status.Conditions[i].LastHeartbeatTime = metav1.Unix(400, 0)
			}
			n.Status.Images = []corev1.ContainerImage{{Names: []string{"registry.example/app:2"}}}
		}, false},
		{"label", func(n *corev1.Node) { n.Labels = map[string]string{"zone": "b"} }, true},
		{"exclusion label", func(n *corev1.Node) { n.Labels[corev1.LabelNodeExcludeBalancers] = "true" }, true},
		{"taint", func(n *corev1.Node) {
			n.Spec.Taints = append(n.Spec.Taints, corev1.Taint{Key: "ToBeDeletedByClusterAutoscaler"})
		}, true},
		{"network unavailable", func(n *corev1.Node) { n.Status.Conditions[1].Status = corev1.ConditionTrue }, true},
		{"not ready", func(n *corev1.Node) { n.Status.Conditions[0].Status = corev1.ConditionFalse }, true},
		{"address", func(n *corev1.Node) { n.Status.Addresses[0].Address = "198.51.100.12" }, true},
		{"deleting", func(n *corev1.Node) { n.DeletionTimestamp = ptr.To(metav1.Unix(500, 0)) }, true},
	} {
		old, next := base(), base()
		tc.change(next)
		queued = 0
		h.OnUpdate(slimNode(old), slimNode(next))
		if (queued > 0) != tc.queue {
			t.Errorf("%s: %d reconciles queued, want a reconcile: %v", tc.what, queued, tc.queue)
		}
	}
	queued = 0
	h.OnAdd(slimNode(base()), false)
	h.OnDelete(slimNode(base()))
	if queued != 2 {
		t.Errorf("add and delete queued %d reconciles, want 2", queued)
	}
}
