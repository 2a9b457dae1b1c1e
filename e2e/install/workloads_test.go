package install

import (
	"os"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

func workloads(t *testing.T) (*appsv1.Deployment, *appsv1.DaemonSet) {
	t.Helper()
	data, err := os.ReadFile(manifests(t, "herald.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var dep *appsv1.Deployment
	var ds *appsv1.DaemonSet
	for _, o := range objects(t, string(data)) {
		switch o.GetKind() {
		case "Deployment":
			dep = &appsv1.Deployment{}
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, dep); err != nil {
				t.Fatal(err)
			}
		case "DaemonSet":
			ds = &appsv1.DaemonSet{}
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, ds); err != nil {
				t.Fatal(err)
			}
		}
	}
	if dep == nil || ds == nil {
		t.Fatal("herald.yaml lacks the controller Deployment or the speaker DaemonSet")
	}
	return dep, ds
}

func TestControllerWorkloadIsLockedDown(t *testing.T) {
	dep, _ := workloads(t)
	if dep.Spec.Replicas == nil || *dep.Spec.Replicas != 2 {
		t.Error("the controller runs 2 replicas (leader election)")
	}
	pod := dep.Spec.Template.Spec
	if pod.SecurityContext == nil || pod.SecurityContext.RunAsNonRoot == nil || !*pod.SecurityContext.RunAsNonRoot {
		t.Error("controller pod must run as non-root")
	}
	checkSeccomp(t, "controller", pod)
	c := pod.Containers[0]
	sc := c.SecurityContext
	if sc == nil || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem || sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
		t.Error("controller: read-only root filesystem, no privilege escalation")
	}
	if sc == nil || sc.Capabilities == nil || !slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) || len(sc.Capabilities.Add) != 0 {
		t.Error("controller: drop ALL capabilities, add none")
	}
	checkProbesAndResources(t, "controller", c)
	if pod.ServiceAccountName != "herald-controller" {
		t.Errorf("controller service account %q", pod.ServiceAccountName)
	}
}

func TestSpeakerWorkloadHasOnlyWhatItNeeds(t *testing.T) {
	_, ds := workloads(t)
	pod := ds.Spec.Template.Spec
	if !pod.HostNetwork {
		t.Error("the speaker runs on the host network")
	}
	c := pod.Containers[0]
	sc := c.SecurityContext
	if sc == nil || (sc.Privileged != nil && *sc.Privileged) {
		t.Error("the speaker must not be privileged")
	}
	if sc == nil || sc.Capabilities == nil || !slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) ||
		!slices.Equal(sc.Capabilities.Add, []corev1.Capability{"NET_RAW"}) {
		t.Errorf("speaker capabilities: %+v, want drop ALL, add NET_RAW only", sc.Capabilities)
	}
	checkSeccomp(t, "speaker", pod)
	if sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem {
		t.Error("speaker: read-only root filesystem")
	}
	tolerateAll := false
	for _, tol := range pod.Tolerations {
		tolerateAll = tolerateAll || (tol.Operator == corev1.TolerationOpExists && tol.Key == "")
	}
	if !tolerateAll {
		t.Error("the speaker must tolerate every taint (control-plane nodes included)")
	}
	nodeName := false
	for _, e := range c.Env {
		nodeName = nodeName || (e.Name == "NODE_NAME" && e.ValueFrom != nil && e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == "spec.nodeName")
	}
	if !nodeName {
		t.Error("NODE_NAME must come from the downward API (spec.nodeName)")
	}
	hostIP := false
	for _, e := range c.Env {
		hostIP = hostIP || (e.Name == "HOST_IP" && e.ValueFrom != nil && e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == "status.hostIP")
	}
	if !hostIP {
		t.Error("HOST_IP must come from the downward API (status.hostIP): the metrics and health endpoints listen on it")
	}
	for _, a := range c.Args {
		if strings.HasPrefix(a, "--metrics-addr=0.0.0.0") || strings.HasPrefix(a, "--metrics-addr=[::]") ||
			strings.HasPrefix(a, "--health-addr=0.0.0.0") || strings.HasPrefix(a, "--health-addr=[::]") {
			t.Errorf("speaker argument %s listens on every local address (VIPs included in IPVS mode)", a)
		}
	}
	secret := false
	for _, v := range pod.Volumes {
		secret = secret || (v.Secret != nil && v.Secret.SecretName == "herald-memberlist")
	}
	if !secret {
		t.Error("the member-list key must be mounted from the herald-memberlist Secret")
	}
	checkProbesAndResources(t, "speaker", c)
}

// checkSeccomp wants the runtime's default seccomp profile for the pod
// (set on the pod, not overridden by the container).
func checkSeccomp(t *testing.T, name string, pod corev1.PodSpec) {
	t.Helper()
	if pod.SecurityContext == nil || pod.SecurityContext.SeccompProfile == nil || pod.SecurityContext.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
		t.Errorf("%s: pod seccompProfile RuntimeDefault", name)
	}
	for _, c := range pod.Containers {
		if c.SecurityContext != nil && c.SecurityContext.SeccompProfile != nil && c.SecurityContext.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
			t.Errorf("%s: container %s overrides the seccomp profile: %+v", name, c.Name, c.SecurityContext.SeccompProfile)
		}
	}
}

func checkProbesAndResources(t *testing.T, name string, c corev1.Container) {
	t.Helper()
	if c.LivenessProbe == nil || c.ReadinessProbe == nil {
		t.Errorf("%s: liveness and readiness probes", name)
	}
	if c.Resources.Requests.Cpu().IsZero() || c.Resources.Requests.Memory().IsZero() || c.Resources.Limits.Memory().IsZero() {
		t.Errorf("%s: CPU and memory requests and a memory limit", name)
	}
}
