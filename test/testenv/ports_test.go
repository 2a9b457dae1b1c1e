package testenv

import (
	"context"
	"net"
	"net/netip"
	"strconv"
	"testing"
	"time"
)

// TestLostPortIsRecognised: etcd and kube-apiserver started on a port
// another process holds exit in a way lostItsPort recognises (so Start
// retries on fresh ports), and a failure for another reason is not.
func TestLostPortIsRecognised(t *testing.T) {
	held, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	port := held.Addr().(*net.TCPAddr).Port
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cp := &ControlPlane{Dir: t.TempDir()}
	defer cp.Stop()

	etcd, err := Binary("etcd")
	if err != nil {
		t.Fatal(err)
	}
	_, other := FreePorts2()
	if _, err := cp.startEtcdOn(ctx, etcd, false, port, other); !lostItsPort(cp.Etcd, err) {
		t.Errorf("etcd on a held client port: %v, not recognised as a lost port", err)
	}

	if cp.PKI, err = newPKI(cp.Dir); err != nil {
		t.Fatal(err)
	}
	serving, err := cp.PKI.ServingCert([]net.IP{net.ParseIP("127.0.0.1")})
	if err != nil {
		t.Fatal(err)
	}
	if err := cp.PKI.write("apiserver.crt", serving.CertPEM); err != nil {
		t.Fatal(err)
	}
	if err := cp.PKI.write("apiserver.key", serving.KeyPEM); err != nil {
		t.Fatal(err)
	}
	saKey, saPub, err := cp.PKI.serviceAccountKey()
	if err != nil {
		t.Fatal(err)
	}
	api, err := Binary("kube-apiserver")
	if err != nil {
		t.Fatal(err)
	}
	// the serving listener is made before etcd is dialled: no etcd needed
	args := []string{"--etcd-servers=http://127.0.0.1:" + strconv.Itoa(other), "--bind-address=127.0.0.1",
		"--tls-cert-file=" + cp.PKI.Dir + "/apiserver.crt", "--tls-private-key-file=" + cp.PKI.Dir + "/apiserver.key",
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--service-account-key-file=" + saPub, "--service-account-signing-key-file=" + saKey,
		"--service-cluster-ip-range=198.51.100.0/24", "--cert-dir=" + cp.Dir + "/certs"}
	addr := netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), uint16(port))
	if err := cp.runAPIServer(ctx, api, addr, false, args); !lostItsPort(cp.APIServer, err) {
		t.Errorf("kube-apiserver on a held port: %v, not recognised as a lost port", err)
	}
	retire(cp.APIServer, 1)
	if err := cp.runAPIServer(ctx, api, addr, false, []string{"--no-such-flag"}); err == nil || lostItsPort(cp.APIServer, err) {
		t.Errorf("kube-apiserver with a bad flag: %v, taken for a lost port", err)
	}
}
