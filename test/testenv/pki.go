package testenv

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// PKI is a throw-away certificate authority for one control plane.
type PKI struct {
	Dir    string
	caCert *x509.Certificate
	caKey  *ecdsa.PrivateKey
	CAPEM  []byte
}

// KeyPair is a PEM certificate and key.
type KeyPair struct {
	CertPEM, KeyPEM []byte
}

func newPKI(dir string) (*PKI, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "herald-test-ca"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(30 * 24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	p := &PKI{Dir: dir, caCert: cert, caKey: key, CAPEM: pemBlock("CERTIFICATE", der)}
	return p, p.write("ca.crt", p.CAPEM)
}

// ServingCert issues a server certificate for the given addresses and the
// names a Kubernetes API server answers to.
func (p *PKI) ServingCert(ips []net.IP) (KeyPair, error) {
	return p.issue(&x509.Certificate{
		Subject:     pkix.Name{CommonName: "kube-apiserver"},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses: ips,
		DNSNames: []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc",
			"kubernetes.default.svc.cluster.local"},
	})
}

// ClientCert issues a client certificate: CN is the user, O the groups.
func (p *PKI) ClientCert(user string, groups ...string) (KeyPair, error) {
	return p.issue(&x509.Certificate{
		Subject:     pkix.Name{CommonName: user, Organization: groups},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	})
}

func (p *PKI) issue(tmpl *x509.Certificate) (KeyPair, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return KeyPair{}, err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		return KeyPair{}, err
	}
	tmpl.SerialNumber = serial
	tmpl.NotBefore = time.Now().Add(-time.Hour)
	tmpl.NotAfter = time.Now().Add(30 * 24 * time.Hour)
	tmpl.KeyUsage = x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment
	der, err := x509.CreateCertificate(rand.Reader, tmpl, p.caCert, &key.PublicKey, p.caKey)
	if err != nil {
		return KeyPair{}, fmt.Errorf("issuing %q: %w", tmpl.Subject.CommonName, err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return KeyPair{}, err
	}
	return KeyPair{CertPEM: pemBlock("CERTIFICATE", der), KeyPEM: pemBlock("EC PRIVATE KEY", keyDER)}, nil
}

// serviceAccountKey writes an ECDSA key pair for signing service account
// tokens and returns the paths of the private and public key.
func (p *PKI) serviceAccountKey() (priv, pub string, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return "", "", err
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return "", "", err
	}
	pubDER, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	if err != nil {
		return "", "", err
	}
	if err := p.write("sa.key", pemBlock("EC PRIVATE KEY", keyDER)); err != nil {
		return "", "", err
	}
	if err := p.write("sa.pub", pemBlock("PUBLIC KEY", pubDER)); err != nil {
		return "", "", err
	}
	return filepath.Join(p.Dir, "sa.key"), filepath.Join(p.Dir, "sa.pub"), nil
}

// WriteCAKey writes the CA's private key as ca.key (for a
// kube-controller-manager that signs certificates) and returns its path.
func (p *PKI) WriteCAKey() (string, error) {
	der, err := x509.MarshalECPrivateKey(p.caKey)
	if err != nil {
		return "", err
	}
	return filepath.Join(p.Dir, "ca.key"), p.write("ca.key", pemBlock("EC PRIVATE KEY", der))
}

// writePair writes a key pair as name.crt and name.key.
func (p *PKI) writePair(name string, kp KeyPair) error {
	if err := p.write(name+".crt", kp.CertPEM); err != nil {
		return err
	}
	return p.write(name+".key", kp.KeyPEM)
}

func (p *PKI) write(name string, data []byte) error {
	return os.WriteFile(filepath.Join(p.Dir, name), data, 0o600)
}

func pemBlock(typ string, der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der})
}
