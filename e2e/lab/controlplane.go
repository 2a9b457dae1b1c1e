package lab

import (
	"context"
	"fmt"
	"net/netip"
	"path/filepath"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/herald-lb/herald/test/labkit"
	"github.com/herald-lb/herald/test/testenv"
)

// startControlPlane starts etcd and kube-apiserver (bound to
// 198.51.100.126 only), writes the kubeconfigs, installs the CRDs and
// creates the Node objects.
func (l *Lab) startControlPlane(ctx context.Context) error {
	start := time.Now()
	cp, err := testenv.Start(ctx, testenv.Options{
		Dir:         filepath.Join(l.dir, "cp"),
		BindAddress: netip.MustParseAddr(RootIPv4),
		Port:        l.opts.APIServerPort,
		ExtraSANs: []netip.Addr{netip.MustParseAddr(RootIPv6),
			netip.MustParseAddr("198.51.100.225"), netip.MustParseAddr("2001:db8:5::1")},
		ServiceCIDRs:       ServiceCIDRs,
		Detached:           l.opts.Detached,
		AuthorizationModes: "Node,RBAC",
		ExtraArgs:          []string{"--enable-admission-plugins=NodeRestriction", "--kubelet-preferred-address-types=InternalIP"},
	})
	if err != nil {
		return fmt.Errorf("control plane: %w", err)
	}
	l.cp = cp
	for _, p := range []*labkit.Process{cp.Etcd, cp.APIServer} {
		r := recordOf(p.Name+"@"+l.id, "", p.PID(), p.LogPath)
		l.remember(r)
		if err := l.state.addProcess(r); err != nil {
			return err
		}
	}
	if err := l.state.update(func(s *state) { s.APIServer = cp.URL }); err != nil {
		return err
	}
	l.addTiming("kube-apiserver ready", start)
	return l.initCluster(ctx)
}

func (l *Lab) initCluster(ctx context.Context) error {
	start := time.Now()
	var err error
	if l.kube, err = kubernetes.NewForConfig(l.cp.AdminConfig); err != nil {
		return err
	}
	l.adminKubeconfig = filepath.Join(l.dir, "admin.kubeconfig")
	if err := testenv.WriteKubeconfig(l.adminKubeconfig, l.cp.AdminConfig); err != nil {
		return fmt.Errorf("admin kubeconfig: %w", err)
	}
	if l.proxyKubeconfig, err = l.Kubeconfig("kube-proxy", "system:kube-proxy"); err != nil {
		return err
	}
	if err := l.state.update(func(s *state) { s.AdminKubeconfig = l.adminKubeconfig }); err != nil {
		return err
	}
	if err := testenv.InstallCRDs(ctx, l.cp.AdminConfig, filepath.Join(l.repo, "manifests", "crds")); err != nil {
		return fmt.Errorf("installing CRDs: %w", err)
	}
	l.addTiming("CRDs installed", start)
	return nil
}

// ControlPlane is the lab's etcd + kube-apiserver (for ClientConfig and
// TokenConfig of other identities).
func (cl *Cluster) ControlPlane() *testenv.ControlPlane { return cl.cp }

// Client is an admin clientset.
func (cl *Cluster) Client() kubernetes.Interface { return cl.kube }

// AdminConfig authenticates as a member of system:masters.
func (cl *Cluster) AdminConfig() *rest.Config { return rest.CopyConfig(cl.cp.AdminConfig) }

// AdminKubeconfig is the path of the admin kubeconfig; its server,
// https://198.51.100.126:<port>, is reachable from the root namespace
// and from inside every lab namespace.
func (cl *Cluster) AdminKubeconfig() string { return cl.adminKubeconfig }

// KubeProxyKubeconfig is the kubeconfig kube-proxy uses (user
// system:kube-proxy).
func (cl *Cluster) KubeProxyKubeconfig() string { return cl.proxyKubeconfig }

// APIServerURL is https://198.51.100.126:<port>.
func (cl *Cluster) APIServerURL() string { return cl.cp.URL }

// Kubeconfig writes a kubeconfig for a client-certificate identity (user
// in groups) into the run directory as <name>.kubeconfig and returns its
// path.
func (l *Lab) Kubeconfig(name, user string, groups ...string) (string, error) {
	cfg, err := l.cp.ClientConfig(user, groups...)
	if err != nil {
		return "", fmt.Errorf("client certificate for %s: %w", user, err)
	}
	path := filepath.Join(l.dir, name+".kubeconfig")
	if err := testenv.WriteKubeconfig(path, cfg); err != nil {
		return "", fmt.Errorf("kubeconfig %s: %w", path, err)
	}
	return path, nil
}

// ServiceAccountKubeconfig creates the ServiceAccount (and its namespace)
// when missing, requests a token for it (valid for 24 h) and writes a
// kubeconfig that authenticates as it, for processes in lab namespaces
// that must run with their real RBAC identity.
func (l *Lab) ServiceAccountKubeconfig(ctx context.Context, namespace, name string) (string, error) {
	if err := l.ensureNamespace(ctx, namespace); err != nil {
		return "", err
	}
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}}
	if _, err := l.kube.CoreV1().ServiceAccounts(namespace).Create(ctx, sa, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return "", fmt.Errorf("ServiceAccount %s/%s: %w", namespace, name, err)
	}
	secs := int64(24 * 3600)
	tr, err := l.kube.CoreV1().ServiceAccounts(namespace).CreateToken(ctx, name,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &secs}}, metav1.CreateOptions{})
	if err != nil {
		return "", fmt.Errorf("token for ServiceAccount %s/%s: %w", namespace, name, err)
	}
	path := filepath.Join(l.dir, "sa-"+namespace+"-"+name+".kubeconfig")
	if err := testenv.WriteKubeconfig(path, l.cp.TokenConfig(tr.Status.Token)); err != nil {
		return "", err
	}
	return path, nil
}
