package cluster_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"log/slog"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/voiced/voiced/control/cluster"
)

// selfSigned writes a certificate for 127.0.0.1 and its key as PEM files.
func selfSigned(t *testing.T) (cert, key string) {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "voiced control"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
		KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true, IsCA: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &k.PublicKey, k)
	require.NoError(t, err)
	kd, err := x509.MarshalECPrivateKey(k)
	require.NoError(t, err)
	dir := t.TempDir()
	cert, key = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	require.NoError(t, os.WriteFile(cert, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600))
	require.NoError(t, os.WriteFile(key, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kd}), 0o600))
	return cert, key
}

// TestInternalTLS: with a certificate the API is served over HTTPS; a
// client trusting the CA file reaches it, one that does not is refused by
// TLS, and plain HTTP gets nothing.
func TestInternalTLS(t *testing.T) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	cert, key := selfSigned(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	ln.Close()
	stop, err := cluster.Listen(addr, cert, key, cluster.NewServer(cluster.ServerConfig{Secret: secret}, cluster.Backend{}, log), log)
	require.NoError(t, err)
	defer stop()
	ctx := context.Background()

	trusted, err := cluster.NewClient(cluster.ClientConfig{URL: "https://" + addr, Secret: secret, CAFile: cert}, log)
	require.NoError(t, err)
	require.NoError(t, trusted.Ping(ctx))

	system, err := cluster.NewClient(cluster.ClientConfig{URL: "https://" + addr, Secret: secret}, log)
	require.NoError(t, err)
	require.ErrorContains(t, system.Ping(ctx), "certificate")

	plain, err := cluster.NewClient(cluster.ClientConfig{URL: "http://" + addr, Secret: secret}, log)
	require.NoError(t, err)
	require.Error(t, plain.Ping(ctx))

	_, err = cluster.NewClient(cluster.ClientConfig{URL: "https://" + addr, Secret: secret, CAFile: key}, log)
	require.ErrorContains(t, err, "PEM certificates")
	_, err = cluster.Listen("127.0.0.1:0", key, cert, nil, log)
	require.Error(t, err, "a key for a certificate is refused")
}
