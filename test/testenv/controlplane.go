package testenv

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/herald-lb/herald/test/labkit"
)

// Options shape a control plane. The zero value serves on 127.0.0.1 with
// free ports in a new temporary directory.
type Options struct {
	// Dir holds PKI, logs and etcd data; default: a new temporary directory,
	// removed by Stop.
	Dir string
	// BindAddress of kube-apiserver; default 127.0.0.1. The serving
	// certificate also covers 127.0.0.1 and ExtraSANs.
	BindAddress netip.Addr
	// Port of kube-apiserver; 0 picks a free one.
	Port int
	// ExtraSANs are more IP addresses the serving certificate is valid for.
	ExtraSANs []netip.Addr
	// ServiceCIDRs default to a dual-stack pair inside the documentation
	// ranges, large enough for 254 IPv4 and a million IPv6 Services (cluster
	// IPs are API data only: nothing is configured on any interface).
	ServiceCIDRs string
	// AuthorizationModes of kube-apiserver; default "RBAC" (a lab with
	// kubelets uses "Node,RBAC").
	AuthorizationModes string
	// ExtraArgs are appended to kube-apiserver's command line.
	ExtraArgs []string
	// Detached starts etcd and kube-apiserver as processes that outlive
	// the caller (labkit.ProcessOptions.Detached); the caller records
	// their PIDs.
	Detached bool
}

// ControlPlane is a running etcd + kube-apiserver.
type ControlPlane struct {
	Dir       string
	URL       string // https://host:port
	PKI       *PKI
	Etcd      *labkit.Process
	APIServer *labkit.Process
	// AdminConfig authenticates as a member of system:masters.
	AdminConfig *rest.Config
	// AdminKubeconfig is the path of a kubeconfig file for AdminConfig.
	AdminKubeconfig string
	ownDir          bool
}

// Start builds (when not cached) and starts etcd and kube-apiserver and
// waits until the API server is ready.
func Start(ctx context.Context, opts Options) (*ControlPlane, error) {
	cp := &ControlPlane{Dir: opts.Dir}
	if cp.Dir == "" {
		d, err := os.MkdirTemp("", "herald-cp-")
		if err != nil {
			return nil, err
		}
		cp.Dir, cp.ownDir = d, true
	}
	if err := cp.start(ctx, opts); err != nil {
		cp.Stop()
		return nil, err
	}
	return cp, nil
}

func (cp *ControlPlane) start(ctx context.Context, opts Options) error {
	etcdBin, err := Binary("etcd")
	if err != nil {
		return err
	}
	apiBin, err := Binary("kube-apiserver")
	if err != nil {
		return err
	}
	pkiDir := filepath.Join(cp.Dir, "pki")
	if err := os.MkdirAll(pkiDir, 0o700); err != nil {
		return err
	}
	if cp.PKI, err = newPKI(pkiDir); err != nil {
		return err
	}
	etcdURL, err := cp.startEtcd(ctx, etcdBin, opts.Detached)
	if err != nil {
		return err
	}
	return cp.startAPIServer(ctx, apiBin, etcdURL, opts)
}

// portAttempts bounds the retries of a process that lost its port: a port
// freePort found free can be taken by any connect() (other test packages'
// clients run beside this one) before the process binds it.
const portAttempts = 3

func (cp *ControlPlane) startEtcd(ctx context.Context, bin string, detached bool) (string, error) {
	for attempt := 1; ; attempt++ {
		clientPort, peerPort := FreePorts2()
		client, err := cp.startEtcdOn(ctx, bin, detached, clientPort, peerPort)
		if err == nil || attempt == portAttempts || !lostItsPort(cp.Etcd, err) {
			return client, err
		}
		retire(cp.Etcd, attempt)
		if err := os.RemoveAll(filepath.Join(cp.Dir, "etcd")); err != nil {
			return "", fmt.Errorf("etcd: clearing the data of an attempt that lost its port: %w", err)
		}
	}
}

func (cp *ControlPlane) startEtcdOn(ctx context.Context, bin string, detached bool, clientPort, peerPort int) (string, error) {
	client := "http://127.0.0.1:" + strconv.Itoa(clientPort)
	peer := "http://127.0.0.1:" + strconv.Itoa(peerPort)
	var err error
	cp.Etcd, err = startProcess("etcd", filepath.Join(cp.Dir, "etcd.log"), detached, bin,
		"--name=test", "--data-dir="+filepath.Join(cp.Dir, "etcd"),
		"--listen-client-urls="+client, "--advertise-client-urls="+client,
		"--listen-peer-urls="+peer, "--initial-advertise-peer-urls="+peer,
		"--initial-cluster=test="+peer, "--log-level=warn", "--unsafe-no-fsync",
		"--quota-backend-bytes=4294967296")
	if err != nil {
		return "", err
	}
	err = waitStarted(ctx, 30*time.Second, cp.Etcd, func() bool {
		resp, err := probeClient.Get(client + "/health")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
	return client, err
}

// retire stops an attempt that lost its port and moves its log aside, so
// that the next attempt's log holds only its own lines.
func retire(p *labkit.Process, attempt int) {
	_ = p.StopWithin(time.Second)
	_ = os.Rename(p.LogPath, fmt.Sprintf("%s.attempt%d", p.LogPath, attempt))
}

// probeClient bounds readiness probes: what listens on a port may not be
// the process that was meant to.
var probeClient = &http.Client{Timeout: 2 * time.Second}

// lostItsPort reports whether a process exited while starting because
// its port was taken (see portAttempts).
func lostItsPort(p *labkit.Process, err error) bool {
	return p != nil && errors.Is(err, errExited) && strings.Contains(p.Tail(50), "address already in use")
}

func (cp *ControlPlane) startAPIServer(ctx context.Context, bin, etcdURL string, opts Options) error {
	bind := opts.BindAddress
	if !bind.IsValid() {
		bind = netip.MustParseAddr("127.0.0.1")
	}
	sans := []net.IP{net.ParseIP("127.0.0.1"), net.IP(bind.AsSlice())}
	for _, a := range opts.ExtraSANs {
		sans = append(sans, net.IP(a.AsSlice()))
	}
	serving, err := cp.PKI.ServingCert(sans)
	if err != nil {
		return err
	}
	if err := cp.PKI.writePair("apiserver", serving); err != nil {
		return err
	}
	// The API server's client certificate towards kubelets (kubectl logs,
	// exec, port-forward): kubelets trust the CA and authorize
	// system:masters.
	kubeletClient, err := cp.PKI.ClientCert("kube-apiserver-kubelet-client", "system:masters")
	if err != nil {
		return err
	}
	if err := cp.PKI.writePair("apiserver-kubelet-client", kubeletClient); err != nil {
		return err
	}
	saKey, saPub, err := cp.PKI.serviceAccountKey()
	if err != nil {
		return err
	}
	cidrs := opts.ServiceCIDRs
	if cidrs == "" {
		cidrs = "198.51.100.0/24,2001:db8:5::/108"
	}
	p := cp.PKI.Dir
	authz := opts.AuthorizationModes
	if authz == "" {
		authz = "RBAC"
	}
	args := []string{
		"--etcd-servers=" + etcdURL, "--bind-address=" + bind.String(),
		"--tls-cert-file=" + filepath.Join(p, "apiserver.crt"), "--tls-private-key-file=" + filepath.Join(p, "apiserver.key"),
		"--client-ca-file=" + filepath.Join(p, "ca.crt"),
		"--kubelet-client-certificate=" + filepath.Join(p, "apiserver-kubelet-client.crt"),
		"--kubelet-client-key=" + filepath.Join(p, "apiserver-kubelet-client.key"),
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--service-account-key-file=" + saPub, "--service-account-signing-key-file=" + saKey,
		"--service-cluster-ip-range=" + cidrs,
		"--authorization-mode=" + authz, "--allow-privileged=true", "--profiling=false",
		"--cert-dir=" + filepath.Join(cp.Dir, "apiserver-certs"),
		"--max-requests-inflight=2000", "--max-mutating-requests-inflight=1000",
		"--v=1",
	}
	if bind.IsLoopback() {
		// the kubernetes Service's endpoint cannot be a loopback address;
		// tests on 127.0.0.1 do without it.
		args = append(args, "--endpoint-reconciler-type=none")
	}
	// Advertised explicitly: without it the API server picks the address
	// of the default route's interface, and a test in a network namespace
	// of its own (hack/own-network.sh) has no default route.
	args = append(args, "--advertise-address="+bind.String())
	args = append(args, opts.ExtraArgs...)
	for attempt := 1; ; attempt++ {
		port := opts.Port
		if port == 0 {
			port = freePort()
		}
		err := cp.runAPIServer(ctx, bin, netip.AddrPortFrom(bind, uint16(port)), opts.Detached, args)
		if err == nil || opts.Port != 0 || attempt == portAttempts || !lostItsPort(cp.APIServer, err) {
			return err
		}
		retire(cp.APIServer, attempt)
	}
}

// runAPIServer starts kube-apiserver on addr, writes the admin kubeconfig
// and waits until it is ready.
func (cp *ControlPlane) runAPIServer(ctx context.Context, bin string, addr netip.AddrPort, detached bool, args []string) error {
	args = append(slices.Clip(args), "--secure-port="+strconv.Itoa(int(addr.Port())))
	var err error
	if cp.APIServer, err = startProcess("kube-apiserver", filepath.Join(cp.Dir, "kube-apiserver.log"), detached, bin, args...); err != nil {
		return err
	}
	cp.URL = "https://" + addr.String()
	if cp.AdminConfig, err = cp.ClientConfig("herald-test-admin", "system:masters"); err != nil {
		return err
	}
	cp.AdminKubeconfig = filepath.Join(cp.Dir, "admin.kubeconfig")
	if err := WriteKubeconfig(cp.AdminKubeconfig, cp.AdminConfig); err != nil {
		return err
	}
	return cp.waitReady(ctx)
}

func (cp *ControlPlane) waitReady(ctx context.Context) error {
	cs, err := kubernetes.NewForConfig(cp.AdminConfig)
	if err != nil {
		return err
	}
	return waitStarted(ctx, 90*time.Second, cp.APIServer, func() bool {
		// a bounded probe: what listens on the port may not be ours
		ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		body, err := cs.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
		return err == nil && string(body) == "ok"
	})
}

// ClientConfig returns a REST config that authenticates with a client
// certificate for user in groups.
func (cp *ControlPlane) ClientConfig(user string, groups ...string) (*rest.Config, error) {
	kp, err := cp.PKI.ClientCert(user, groups...)
	if err != nil {
		return nil, err
	}
	return &rest.Config{
		Host:            cp.URL,
		TLSClientConfig: rest.TLSClientConfig{CAData: cp.PKI.CAPEM, CertData: kp.CertPEM, KeyData: kp.KeyPEM},
		QPS:             1000, Burst: 2000,
	}, nil
}

// TokenConfig returns a REST config that authenticates with a bearer token
// (for ServiceAccount tokens from the TokenRequest API).
func (cp *ControlPlane) TokenConfig(token string) *rest.Config {
	return &rest.Config{
		Host:            cp.URL,
		TLSClientConfig: rest.TLSClientConfig{CAData: cp.PKI.CAPEM},
		BearerToken:     token,
		QPS:             1000, Burst: 2000,
	}
}

// WriteKubeconfig writes cfg (certificate or token auth) as a kubeconfig.
func WriteKubeconfig(path string, cfg *rest.Config) error {
	kc := clientcmdapi.NewConfig()
	kc.Clusters["test"] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData}
	kc.AuthInfos["test"] = &clientcmdapi.AuthInfo{
		ClientCertificateData: cfg.CertData, ClientKeyData: cfg.KeyData, Token: cfg.BearerToken,
	}
	kc.Contexts["test"] = &clientcmdapi.Context{Cluster: "test", AuthInfo: "test"}
	kc.CurrentContext = "test"
	return clientcmd.WriteToFile(*kc, path)
}

// Stop stops kube-apiserver and etcd by PID and removes the directory if
// Start created it.
func (cp *ControlPlane) Stop() {
	if cp.APIServer != nil {
		_ = cp.APIServer.Stop()
	}
	if cp.Etcd != nil {
		_ = cp.Etcd.Stop()
	}
	if cp.ownDir {
		os.RemoveAll(cp.Dir)
	}
}

// CAPool returns the cluster CA as a cert pool (for plain HTTPS checks).
func (cp *ControlPlane) CAPool() *x509.CertPool {
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(cp.PKI.CAPEM)
	return pool
}

// TLSConfig for raw HTTPS requests to the API server as admin.
func (cp *ControlPlane) TLSConfig() (*tls.Config, error) {
	cert, err := tls.X509KeyPair(cp.AdminConfig.CertData, cp.AdminConfig.KeyData)
	if err != nil {
		return nil, err
	}
	return &tls.Config{RootCAs: cp.CAPool(), Certificates: []tls.Certificate{cert}}, nil
}

// errExited is the error of a process that ended while being waited for.
var errExited = errors.New("process exited")

// stopGrace is how long Stop gives etcd and kube-apiserver after SIGTERM.
const stopGrace = 10 * time.Second

// startProcess starts path with args as process name, its output going
// to logPath.
func startProcess(name, logPath string, detached bool, path string, args ...string) (*labkit.Process, error) {
	return labkit.Spawn(labkit.ProcessOptions{Name: name, LogPath: logPath, Argv: append([]string{path}, args...),
		Detached: detached, Grace: stopGrace})
}

// waitStarted waits up to timeout for ok, failing early (errExited) when
// proc ends; the error carries proc's last log lines.
func waitStarted(ctx context.Context, timeout time.Duration, proc *labkit.Process, ok func() bool) error {
	err := labkit.Poll(ctx, timeout, proc.Name+" to start", func() (bool, error) {
		if ok() {
			return true, nil
		}
		if proc.Exited() {
			return false, errExited
		}
		return false, nil
	})
	if err != nil {
		return fmt.Errorf("%w; last log lines:\n%s", err, proc.Tail(30))
	}
	return nil
}

// FreePorts2 returns two distinct TCP ports on 127.0.0.1 that were free a
// moment ago (two freePort calls can return the same one: the first is
// closed before the second is chosen).
func FreePorts2() (int, int) {
	a, b := freePort(), freePort()
	for b == a && a != 0 {
		b = freePort()
	}
	return a, b
}

func freePort() int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}
