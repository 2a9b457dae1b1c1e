package lab

import (
	"sync"

	"k8s.io/client-go/kubernetes"

	"github.com/herald-lb/herald/test/testenv"
)

// Network is the lab's network: every host of the address plan (plan.go)
// as a namespace herald-<run>-<host> on one segment (topology.go), and
// what tests do to it (netops.go, Exec). It is built on test/labkit
// (InNS, NSPIDs, DeleteNS, the range check).
type Network struct {
	id    string
	nodes []Node

	macsMu sync.Mutex
	// macs maps a segment MAC to its host (router, client, nodeN).
	macs map[string]string
}

// Routers is the lab's BGP router, FRR or BIRD (test/labkit's FRR
// and BIRD), as it runs now (router.go, routerstate.go).
type Routers struct {
	routerMu    sync.Mutex
	router      *routerRun
	nodeRouters []*nodeRouter // BGPOptions.NodeRouters
}

// Cluster is the lab's Kubernetes side as tests reach it: the control
// plane, clients and kubeconfigs, kubectl, and Nodes and Services through
// the API (controlplane.go, kubectl.go, nodes.go, services.go). The
// kubelets, containerd and controllers that make it real belong to the
// run (cluster.go, kubelet.go).
type Cluster struct {
	cp              *testenv.ControlPlane
	kube            kubernetes.Interface
	adminKubeconfig string
	proxyKubeconfig string
}
