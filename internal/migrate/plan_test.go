package migrate

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestClassify(t *testing.T) {
	cases := []struct {
		ns, name string
		labels   map[string]string
		want     role
	}{
		{"metallb-system", "controller", map[string]string{"app": "metallb", "component": "controller"}, controllerRole},
		{"metallb-system", "speaker", map[string]string{"app": "metallb", "component": "speaker"}, speakerRole},
		{"lb", "metallb-controller", map[string]string{"app.kubernetes.io/name": "metallb", "app.kubernetes.io/component": "controller"}, controllerRole},
		{"lb", "metallb-speaker", map[string]string{"app.kubernetes.io/name": "metallb", "app.kubernetes.io/component": "speaker"}, speakerRole},
		{"metallb-system", "frr-k8s-daemon", map[string]string{"app.kubernetes.io/name": "frr-k8s", "app.kubernetes.io/component": "frr-k8s"}, frrK8sRole},
		{"metallb-system", "frr-k8s-webhook-server", nil, frrK8sRole},
		{"metallb-system", "controller", nil, controllerRole},
		{"kube-system", "controller", nil, notMetalLB},
		{"herald-system", "herald-speaker", map[string]string{"app.kubernetes.io/name": "herald", "app.kubernetes.io/component": "speaker"}, notMetalLB},
	}
	for _, c := range cases {
		if got := classify(c.ns, c.name, c.labels); got != c.want {
			t.Errorf("classify(%s/%s) = %v, want %v", c.ns, c.name, got, c.want)
		}
	}
}

func TestPlanGolden(t *testing.T) {
	frr := Inventory{
		Controllers: []Workload{{Kind: "deployment", Namespace: "metallb-system", Name: "controller", Selector: "app=metallb,component=controller"}},
		Speakers:    []Workload{{Kind: "daemonset", Namespace: "metallb-system", Name: "speaker", Selector: "app=metallb,component=speaker"}},
		FRRK8s: []Workload{
			{Kind: "daemonset", Namespace: "metallb-system", Name: "frr-k8s-daemon", Selector: "app.kubernetes.io/name=frr-k8s"},
			{Kind: "deployment", Namespace: "metallb-system", Name: "frr-k8s-webhook-server", Selector: "component=frr-k8s-webhook-server"},
		},
		Webhooks:          []string{"frr-k8s-validating-webhook-configuration", "metallb-webhook-configuration"},
		FRRConfigurations: []ref{{"metallb-system", "metallb-node-a"}, {"metallb-system", "metallb-node-b"}},
		Services:          20,
	}
	cases := map[string]struct {
		inv  Inventory
		opts PlanOptions
	}{
		"frr-k8s": {frr, PlanOptions{ConfigFile: "herald-config.yaml", HeraldNamespace: "herald-system",
			Secrets: []SecretCopy{{FromNamespace: "metallb-system", FromName: "bgp-auth", ToNamespace: "herald-system", ToName: "bgp-auth"}}}},
		"empty": {Inventory{}, PlanOptions{ConfigFile: "herald-config.yaml", HeraldNamespace: "herald-system"}},
	}
	for name, c := range cases {
		var b bytes.Buffer
		if err := WriteScript(&b, Plan(c.inv, c.opts)); err != nil {
			t.Fatal(err)
		}
		golden := filepath.Join("testdata", "plan", name+".golden")
		if *update {
			if err := os.WriteFile(golden, b.Bytes(), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		want, err := os.ReadFile(golden)
		if err != nil {
			t.Fatalf("%v (run go test -update)", err)
		}
		if !bytes.Equal(b.Bytes(), want) {
			t.Errorf("%s: plan differs from %s:\n%s", name, golden, b.String())
		}
	}
	// The order that keeps addresses: controller stopped before Herald's
	// starts; Herald's speakers started under the hold while MetalLB's
	// announce, the hold released only once MetalLB's have stopped (and
	// released by the trap should a later command fail).
	var b bytes.Buffer
	_ = WriteScript(&b, Plan(frr, PlanOptions{ConfigFile: "c.yaml", HeraldNamespace: "herald-system"}))
	s := b.String()
	order := []string{"scale deployment/controller --replicas=0", "delete validatingwebhookconfiguration metallb-webhook-configuration",
		"controller.yaml", "reason=NotAdoptedFromMetalLB", "name: herald-announce-hold", "speaker.yaml", "rollout status daemonset/herald-speaker",
		"trap 'kubectl -n herald-system delete lease herald-announce-hold", "delete daemonset/speaker", "delete daemonset/frr-k8s-daemon",
		`component=speaker" -o jsonpath="{.items[*].status.containerStatuses[*].state.running}"`,
		"frrconfigurations.frrk8s.metallb.io/metallb-node-a", "\nkubectl -n herald-system delete lease herald-announce-hold", "kubectl herald status"}
	at := -1
	for _, o := range order {
		i := strings.Index(s, o)
		if i <= at {
			t.Errorf("%q is not after the previous step in the plan", o)
		}
		at = i
	}
}
