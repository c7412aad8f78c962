package security_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/exqgo/exq"
	"github.com/exqgo/exq/internal/testutil"
)

// testPKI is a throwaway CA and a server certificate for 127.0.0.1 signed by it, as PEM files.
type testPKI struct {
	caFile, certFile, keyFile string
	roots                     *x509.CertPool
}

func newTestPKI(t *testing.T) testPKI {
	t.Helper()
	dir := t.TempDir()
	now := time.Now()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	caTmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "exq security test CA"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(24 * time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	require.NoError(t, err)
	ca, err := x509.ParseCertificate(caDER)
	require.NoError(t, err)

	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2),
		Subject:      pkix.Name{CommonName: "127.0.0.1"},
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1)},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	require.NoError(t, err)
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	require.NoError(t, err)

	p := testPKI{
		caFile:   filepath.Join(dir, "ca.crt"),
		certFile: filepath.Join(dir, "server.crt"),
		keyFile:  filepath.Join(dir, "server.key"),
		roots:    x509.NewCertPool(),
	}
	p.roots.AddCert(ca)
	for file, block := range map[string]*pem.Block{
		p.caFile:   {Type: "CERTIFICATE", Bytes: caDER},
		p.certFile: {Type: "CERTIFICATE", Bytes: der},
		p.keyFile:  {Type: "PRIVATE KEY", Bytes: keyDER},
	} {
		require.NoError(t, os.WriteFile(file, pem.EncodeToMemory(block), 0o600))
	}
	return p
}

// requireTLSRedis skips the test when the installed redis-server was built without TLS (it is
// then not linked with OpenSSL, and would refuse the tls-* options), counted by testutil; under
// CI=true it fails instead, as CI installs Debian's redis-server, which is built with TLS.
func requireTLSRedis(t *testing.T) {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		return // StartServer skips, or fails under CI=true, with its own message
	}
	ldd, err := exec.Command("ldd", bin).Output()
	if err != nil {
		return // a static build, or no ldd: let the server start tell
	}
	if !strings.Contains(string(ldd), "libssl") {
		version, _ := exec.Command(bin, "--version").Output()
		testutil.SkipMissing(t, fmt.Sprintf("%s (%s) is built without TLS (not linked with libssl); the TLS tests need a build with BUILD_TLS=yes, such as Debian's redis-server",
			bin, strings.TrimSpace(string(version))))
	}
}

// TestTLS runs a TLS-only redis-server (no plain port) with a test CA and checks that a
// rediss:// URL and a caller's go-redis client with the CA both run jobs end to end, that
// certificates are verified, and that a plain redis:// URL to the TLS port fails Start with
// ErrRedisUnavailable.
func TestTLS(t *testing.T) {
	requireTLSRedis(t)
	pki := newTestPKI(t)
	port := strconv.Itoa(testutil.FreePort(t))
	srv := testutil.StartServer(t, testutil.ServerOptions{NoPort: true, Port: mustAtoi(t, port), Args: []string{
		"--tls-port", port,
		"--tls-cert-file", pki.certFile,
		"--tls-key-file", pki.keyFile,
		"--tls-ca-cert-file", pki.caFile,
		"--tls-auth-clients", "no",
	}})
	addr := srv.Addr()

	runJob := func(t *testing.T, o exq.Options) {
		t.Helper()
		r := newRuns()
		o.Namespace = testutil.Namespace(t)
		o.Workers = map[string]exq.Worker{"TLS.Job": r.worker(nil)}
		o.Logger = jsonLogger(&logBuffer{})
		e := startNode(t, fast(o))
		ctx, cancel := bounded()
		defer cancel()
		jid, err := e.Enqueue(ctx, "default", "TLS.Job", []any{"over TLS"})
		require.NoError(t, err)
		testutil.WaitFor(t, "the job runs over TLS", func() bool { return r.succeeded(jid) })

		// An enqueue-only client on the same connection settings.
		c, err := exq.NewClient(ctx, o.ClientOptions())
		require.NoError(t, err)
		defer c.Close()
		jid, err = c.Enqueue(ctx, "default", "TLS.Job", nil)
		require.NoError(t, err)
		testutil.WaitFor(t, "the client's job runs over TLS", func() bool { return r.succeeded(jid) })
		require.NoError(t, stopNode(e))
	}

	t.Run("rediss URL with skip_verify", func(t *testing.T) {
		runJob(t, exq.Options{RedisURL: "rediss://" + addr + "/0?skip_verify=true"})
	})

	t.Run("caller's client trusting the test CA", func(t *testing.T) {
		rdb := redis.NewClient(&redis.Options{Addr: addr, TLSConfig: &tls.Config{RootCAs: pki.roots, MinVersion: tls.VersionTLS12}})
		defer rdb.Close() // exq leaves a caller's client open
		runJob(t, exq.Options{Redis: rdb})
	})

	t.Run("certificates are verified", func(t *testing.T) {
		ctx, cancel := bounded()
		defer cancel()
		// The test CA is in no system pool: verification must fail.
		_, err := exq.Start(ctx, exq.Options{RedisURL: "rediss://" + addr + "/0", RedisTimeout: 2 * time.Second})
		require.ErrorIs(t, err, exq.ErrRedisUnavailable)
		assert.Contains(t, err.Error(), "certificate")
		t.Logf("rediss:// without the CA: %v", err)
	})

	t.Run("plain redis URL to the TLS port", func(t *testing.T) {
		ctx, cancel := bounded()
		defer cancel()
		begin := time.Now()
		_, err := exq.Start(ctx, exq.Options{RedisURL: "redis://" + addr + "/0", RedisTimeout: 2 * time.Second})
		require.ErrorIs(t, err, exq.ErrRedisUnavailable)
		t.Logf("redis:// to a TLS port, after %s: %v", time.Since(begin).Round(time.Millisecond), err)
	})
}

func mustAtoi(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(s)
	require.NoError(t, err)
	return n
}
