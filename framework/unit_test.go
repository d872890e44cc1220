package framework

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"github.com/o2ims-operator/o2ims-operator/framework/kopf"
	"io"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestClassifyAPIError(t *testing.T) {
	gr := schema.GroupResource{Group: "config.porch.kpt.dev", Resource: "packagevariants"}
	cases := []struct {
		name          string
		err           error
		write         bool
		class         ErrorClass
		retryable     bool
		mayHaveLanded bool
	}{
		{"unauthorized", apierrors.NewUnauthorized("token expired"), false, ClassUnauthorized, true, false},
		{"forbidden", apierrors.NewForbidden(gr, "x", errors.New("no")), true, ClassUnauthorized, false, false},
		{"not found", apierrors.NewNotFound(gr, "x"), false, ClassNotFound, false, false},
		{"already exists", apierrors.NewAlreadyExists(gr, "x"), true, ClassConflict, true, false},
		{"conflict", apierrors.NewConflict(gr, "x", errors.New("rv")), true, ClassConflict, true, false},
		{"invalid", apierrors.NewInvalid(schema.GroupKind{Kind: "PackageVariant"}, "x", nil), true, ClassInvalid, false, false},
		{"bad request", apierrors.NewBadRequest("no"), true, ClassInvalid, false, false},
		{"too many requests", apierrors.NewTooManyRequests("slow down", 1), true, ClassUnavailable, true, false},
		{"unavailable", apierrors.NewServiceUnavailable("overloaded"), true, ClassUnavailable, true, false},
		{"internal on write", apierrors.NewInternalError(errors.New("etcd")), true, ClassUnavailable, true, true},
		{"internal on read", apierrors.NewInternalError(errors.New("etcd")), false, ClassUnavailable, true, false},
		{"gateway timeout", apierrors.NewTimeoutError("slow", 1), true, ClassUnavailable, true, true},
		{"transport on write", &net.OpError{Op: "read", Err: errors.New("reset")}, true, ClassTransport, true, true},
		{"eof on read", io.ErrUnexpectedEOF, false, ClassTransport, true, false},
		{"deadline", context.DeadlineExceeded, true, ClassTransport, true, true},
		{"config", &ConfigError{errors.New("token file missing")}, true, ClassConfig, false, false},
		{"redirect", fmt.Errorf("get: %w", ErrRedirectRefused), false, ClassProtocol, false, false},
		{"unknown on write", errors.New("something odd"), true, ClassProtocol, false, true},
		{"unknown on read", errors.New("something odd"), false, ClassProtocol, false, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := ClassifyAPIError("create PackageVariant default/x", c.write, c.err)
			e, ok := AsAPIError(err)
			require.True(t, ok)
			assert.Equal(t, c.class, e.Class)
			assert.Equal(t, c.retryable, e.Retryable, "retryable")
			assert.Equal(t, c.mayHaveLanded, e.MayHaveLanded, "may have landed")
			assert.Contains(t, e.Error(), "create PackageVariant default/x")
			assert.ErrorIs(t, err, c.err)
			assert.True(t, IsClass(err, c.class))
			assert.Same(t, e, ClassifyAPIError("again", false, err).(*APIError), "classifying twice keeps the first verdict")
		})
	}
	assert.Nil(t, ClassifyAPIError("x", true, nil))
	e, _ := AsAPIError(ClassifyAPIError("patch", true, apierrors.NewInternalError(errors.New("boom"))))
	assert.Equal(t, "unavailable 500, retryable, a write may have landed", e.Summary())
}

func TestParseLiveness(t *testing.T) {
	for in, want := range map[string][2]string{
		"http://0.0.0.0:8080/healthz": {"0.0.0.0:8080", "/healthz"},
		"http://localhost/healthz":    {"localhost:80", "/healthz"},
		"http://127.0.0.1:9000":       {"127.0.0.1:9000", "/healthz"},
		"http://[::1]:8080/live":      {"[::1]:8080", "/live"},
	} {
		addr, path, err := ParseLiveness(in)
		require.NoError(t, err, in)
		assert.Equal(t, want, [2]string{addr, path}, in)
	}
	for _, bad := range []string{"https://0.0.0.0:8080/healthz", "0.0.0.0:8080", "http:///healthz", "http://x:1/metrics", "::"} {
		_, _, err := ParseLiveness(bad)
		assert.Error(t, err, bad)
	}
}

func TestParseLogLevelAcceptsThePythonNames(t *testing.T) {
	for in, want := range map[string]zapcore.Level{
		"DEBUG": zapcore.DebugLevel, "info": zapcore.InfoLevel, "": zapcore.InfoLevel,
		"WARNING": zapcore.WarnLevel, "warn": zapcore.WarnLevel, "ERROR": zapcore.ErrorLevel, "CRITICAL": zapcore.FatalLevel,
	} {
		got, err := ParseLogLevel(in)
		require.NoError(t, err, in)
		assert.Equal(t, want, got, in)
	}
	_, err := ParseLogLevel("LOUD")
	assert.EqualError(t, err, `LOG_LEVEL "LOUD" is not one of DEBUG, INFO, WARNING, ERROR, CRITICAL`)
	assert.NotNil(t, NewLogger(zapcore.InfoLevel, true))
	assert.NotNil(t, NewLogger(zapcore.DebugLevel, false))
}

func TestLoadConfigHonoursThePythonImagesTransportKnobs(t *testing.T) {
	dir := t.TempDir()
	kc := filepath.Join(dir, "kubeconfig")
	require.NoError(t, os.WriteFile(kc, []byte(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:6443"}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c
`), 0o600))
	ca := filepath.Join(dir, "ca.crt")
	caPEM := selfSignedPEM(t)
	require.NoError(t, os.WriteFile(ca, caPEM, 0o600))
	notPEM := filepath.Join(dir, "not.crt")
	require.NoError(t, os.WriteFile(notPEM, []byte("x"), 0o600))
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

	cfg, err := LoadConfig(kc, env(nil))
	require.NoError(t, err)
	assert.Equal(t, "https://127.0.0.1:6443", cfg.Host)

	cfg, err = LoadConfig(kc, env(map[string]string{"KUBERNETES_CA_FILE": ca}))
	require.NoError(t, err)
	assert.Equal(t, caPEM, cfg.TLSClientConfig.CAData, "the bundle is loaded")
	assert.Empty(t, cfg.TLSClientConfig.CAFile)

	// The Python image's spellings of true, in any case; and of false.
	for _, v := range []string{"true", "1", "yes", "on", "TRUE", "On"} {
		cfg, err = LoadConfig(kc, env(map[string]string{"UNSAFE_SKIP_TLS_VERIFY": v}))
		require.NoError(t, err, v)
		assert.True(t, cfg.TLSClientConfig.Insecure, v)
	}
	for _, v := range []string{"false", "0", "no", "off", ""} {
		cfg, err = LoadConfig(kc, env(map[string]string{"UNSAFE_SKIP_TLS_VERIFY": v}))
		require.NoError(t, err, v)
		assert.False(t, cfg.TLSClientConfig.Insecure, v)
	}
	_, err = LoadConfig(kc, env(map[string]string{"UNSAFE_SKIP_TLS_VERIFY": "maybe"}))
	assert.ErrorContains(t, err, "UNSAFE_SKIP_TLS_VERIFY")

	_, err = LoadConfig(kc, env(map[string]string{"KUBERNETES_CA_FILE": ca, "UNSAFE_SKIP_TLS_VERIFY": "yes"}))
	assert.ErrorContains(t, err, "contradict")
	_, err = LoadConfig(kc, env(map[string]string{"KUBERNETES_CA_FILE": filepath.Join(dir, "missing")}))
	assert.ErrorContains(t, err, "KUBERNETES_CA_FILE")
	_, err = LoadConfig(kc, env(map[string]string{"KUBERNETES_CA_FILE": notPEM}))
	assert.ErrorContains(t, err, "no PEM certificate")
	_, err = LoadConfig(filepath.Join(dir, "nope"), env(nil))
	assert.ErrorContains(t, err, "no Kubernetes client configuration")
}

func TestProgressRecordsOfBothKopfGenerationsDecode(t *testing.T) {
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	// kopf 1.36: naive UTC.
	hs, err := decodeProgress(`{"started":"2026-11-01T10:00:00.123456","delayed":"2026-11-01T10:01:00.000000","retries":2,"success":false,"failure":false,"message":"waiting"}`, now)
	require.NoError(t, err)
	assert.Equal(t, time.Date(2026, 11, 1, 10, 0, 0, 123456000, time.UTC), hs.started)
	assert.Equal(t, 2, hs.retries)
	assert.Equal(t, "waiting", hs.message)
	assert.False(t, hs.finished())
	// kopf >= 1.37 (the released Python image pins 1.40.1): offset-aware.
	hs, err = decodeProgress(`{"started":"2026-11-01T10:00:00.123456+00:00","stopped":"2026-11-01T10:00:05+00:00","success":true}`, now)
	require.NoError(t, err)
	assert.Equal(t, time.Date(2026, 11, 1, 10, 0, 0, 123456000, time.UTC), hs.started)
	assert.True(t, hs.finished())
	// Without "started" the record starts now, as kopf does.
	hs, err = decodeProgress(`{"retries":1}`, now)
	require.NoError(t, err)
	assert.Equal(t, now, hs.started)

	for _, bad := range []string{`{`, `[]`, `{"started":"yesterday"}`, `{"retries":-1}`, `{"retries":"2"}`} {
		_, err := decodeProgress(bad, now)
		assert.Error(t, err, bad)
	}

	// What we start is written in the operator's form (aware by default: kopf >= 1.37, the released
	// image), reads back identically and is the compact JSON kopf writes.
	in := &handlerState{started: hs.started, retries: 3, message: "x", delayed: now, purpose: "create"}
	enc := encodeProgress(in.record(kopf.TimeAware))
	assert.Equal(t, `{"started":"2026-11-30T12:00:00.000000+00:00","delayed":"2026-11-30T12:00:00.000000+00:00","purpose":"create","retries":3,"success":false,"failure":false,"message":"x"}`, enc)
	out, err := decodeProgress(enc, now)
	require.NoError(t, err)
	assert.True(t, sameRecord(in.record(kopf.TimeAware), out.record(kopf.TimeNaive)), "a record read aware stays aware")
	assert.Equal(t, `{"started":"2026-11-30T12:00:00.000000","delayed":"2026-11-30T12:00:00.000000","purpose":"create","retries":3,"success":false,"failure":false,"message":"x"}`,
		encodeProgress(in.record(kopf.TimeNaive)), "the kopf 1.36 option")

	// A record keeps the form it was read in, whatever the operator's setting: the image that wrote it
	// reads it again after a rollback.
	naive, err := decodeProgress(`{"started":"2026-11-01T10:00:00.123456","retries":2,"success":false,"failure":false}`, now)
	require.NoError(t, err)
	naive.retries++
	naive.delayed = now
	assert.Equal(t, `{"started":"2026-11-01T10:00:00.123456","delayed":"2026-11-30T12:00:00.000000","retries":3,"success":false,"failure":false}`, encodeProgress(naive.record(kopf.TimeAware)))
	aware, err := decodeProgress(`{"started":"2026-12-01T08:49:17.749626+00:00","retries":2,"success":false,"failure":false,"subrefs":["create_fn/create_fn.<locals>.sub_validations"]}`, now)
	require.NoError(t, err)
	aware.retries++
	assert.Equal(t, `{"started":"2026-12-01T08:49:17.749626+00:00","retries":3,"success":false,"failure":false,"subrefs":["create_fn/create_fn.<locals>.sub_validations"]}`, encodeProgress(aware.record(kopf.TimeNaive)))
}

func TestEssenceLeavesOutKopfStateAndKubectlAnnotations(t *testing.T) {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "x/v1", "kind": "Widget",
		"metadata": map[string]any{
			"name": "w", "resourceVersion": "5", "labels": map[string]any{"app": "a"},
			"annotations": map[string]any{
				"kubectl.kubernetes.io/last-applied-configuration": "{}",
				"mine.example.com/kopf-managed":                    "yes",
				"mine.example.com/create_fn":                       "{}",
				"kopf.zalando.org/last-handled-configuration":      "{}",
				"team.example.com/owner":                           "radio",
			},
		},
		"spec":   map[string]any{"a": int64(1)},
		"status": map[string]any{"phase": "x"},
	}}
	assert.Equal(t, map[string]any{
		"spec":     map[string]any{"a": int64(1)},
		"metadata": map[string]any{"labels": map[string]any{"app": "a"}, "annotations": map[string]any{"team.example.com/owner": "radio"}},
	}, essence(u, "mine.example.com"))
	// Our own prefix is left out even without the marker (kopf's progress storage clears it).
	u.SetAnnotations(map[string]string{"mine.example.com/last-handled-configuration": "{}", "other.example.com/x": "y"})
	assert.Equal(t, map[string]any{"x": "y"}[""], nil)
	assert.Equal(t, map[string]any{"other.example.com/x": "y"}, essence(u, "mine.example.com")["metadata"].(map[string]any)["annotations"])
	assert.Equal(t, map[string]any{"spec": 1}, kopf.ClearOwn(map[string]any{"spec": 1, "metadata": map[string]any{"annotations": map[string]any{"mine.example.com/a": "b"}}}, "mine.example.com"))
	u.SetAnnotations(map[string]string{"team.example.com/owner": "radio"})
	assert.True(t, kopf.SameEssence(essence(u, "mine.example.com"), map[string]any{
		"metadata": map[string]any{"annotations": map[string]any{"team.example.com/owner": "radio"}, "labels": map[string]any{"app": "a"}},
		"spec":     map[string]any{"a": 1.0},
	}), "1 and 1.0 are the same essence")
}

func TestPatchesAreEmptyWhenTheyChangeNothing(t *testing.T) {
	u := &unstructured.Unstructured{Object: map[string]any{
		"metadata": map[string]any{"name": "w", "resourceVersion": "9", "annotations": map[string]any{"a": "1"}, "finalizers": []any{"f"}},
		"status":   map[string]any{"provisioningStatus": map[string]any{"provisioningState": "progressing", "provisioningMessage": "m"}},
	}}
	p := newPatch()
	p.SetStatus("progressing", "provisioningStatus", "provisioningState")
	p.SetAnnotation("a", "1")
	p.DeleteAnnotation("absent")
	p.finalizers = []string{"f"}
	assert.Nil(t, p.statusPatch(u))
	assert.Nil(t, p.metadataPatch(u))

	p.SetStatus("fulfilled", "provisioningStatus", "provisioningState")
	assert.JSONEq(t, `{"metadata":{"resourceVersion":"9"},"status":{"provisioningStatus":{"provisioningState":"fulfilled"}}}`,
		string(p.statusPatch(u)), "a status write carries the resourceVersion the pass read")
	p.finalizers = nil
	p.DeleteAnnotation("a")
	assert.JSONEq(t, `{"metadata":{"annotations":{"a":null}}}`, string(p.metadataPatch(u)))
	p.finalizers = []string{}
	assert.JSONEq(t, `{"metadata":{"annotations":{"a":null},"finalizers":[],"resourceVersion":"9"}}`, string(p.metadataPatch(u)),
		"a finalizer change carries the resourceVersion")
}

func TestOutcomes(t *testing.T) {
	assert.Equal(t, outcomeSuccess, classify(nil).kind)
	o := classify(fmt.Errorf("wrapped: %w", Temporary(0, "waiting")))
	assert.Equal(t, outcomeTemporary, o.kind)
	assert.Equal(t, defaultTemporaryDelay, o.delay, "kopf's default delay")
	assert.Equal(t, outcomePermanent, classify(&PermanentError{Message: "bad", Err: io.EOF}).kind)
	assert.Equal(t, "bad: EOF", (&PermanentError{Message: "bad", Err: io.EOF}).Error())
	assert.Equal(t, "EOF", (&TemporaryError{Err: io.EOF}).Error())
	assert.Equal(t, "wait: EOF", (&TemporaryError{Message: "wait", Err: io.EOF}).Error())
	assert.ErrorIs(t, &TemporaryError{Err: io.EOF}, io.EOF)
	assert.Equal(t, outcomeError, classify(io.EOF).kind)

	again := classify(fmt.Errorf("wrapped: %w", Again("claiming 2 hosts")))
	assert.Equal(t, outcomeTemporary, again.kind, "Again is a temporary outcome (same metrics, same record)")
	assert.Equal(t, againDelay, again.delay, "not kopf's 60 s default")
	assert.Equal(t, "wrapped: claiming 2 hosts", again.message)
	assert.Equal(t, againDelay, classify(&TemporaryError{Message: "x", Delay: time.Hour, Again: true}).delay, "Again wins over a delay")
}

func TestResourceVersionComparison(t *testing.T) {
	assert.True(t, rvReached("10", "9"))
	assert.True(t, rvReached("10", "10"))
	assert.False(t, rvReached("9", "10"))
	assert.True(t, rvReached("abc", "abc"))
	assert.False(t, rvReached("abd", "abc"))
	assert.True(t, rvReached("1", ""))
}

func TestResourceOfAnAPIPath(t *testing.T) {
	for path, want := range map[string]string{
		"/api/v1/namespaces/default/events":                                             "events",
		"/api/v1/namespaces/default/events/x.123":                                       "events",
		"/api/v1/namespaces/metal3/secrets/netbox-1-bmc-secret":                         "secrets",
		"/apis/o2ims.provisioning.oran.org/v1alpha1/provisioningrequests/edge-1/status": "provisioningrequests/status",
		"/apis/o2ims.provisioning.oran.org/v1alpha1/provisioningrequests":               "provisioningrequests",
		"/apis/config.porch.kpt.dev/v1alpha1/namespaces/default/packagevariants":        "packagevariants",
		"/apis/coordination.k8s.io/v1/namespaces/o2ims/leases/o2ims-operator":           "leases",
		"/api/v1/namespaces/o2ims":                                                      "namespaces",
		"/apis":                                                                         "other",
		"/apis/cluster.x-k8s.io/v1beta2":                                                "discovery",
	} {
		assert.Equal(t, want, resourceOf(path), path)
	}
}

// Every line of a burst is written: zap's production sampling (100 a second, then one in 100) is off.
func TestLoggerKeepsEveryLineOfABurst(t *testing.T) {
	for _, json := range []bool{true, false} {
		cfg := loggerConfig(zapcore.InfoLevel, json)
		out := filepath.Join(t.TempDir(), "log")
		cfg.OutputPaths = []string{out}
		log, err := cfg.Build()
		require.NoError(t, err)
		for i := 0; i < 500; i++ {
			log.Info("the same line", zap.String("object", "r1"))
		}
		_ = log.Sync()
		raw, err := os.ReadFile(out)
		require.NoError(t, err)
		assert.Equal(t, 500, strings.Count(string(raw), "the same line"), "json=%v: lines were dropped", json)
	}
}

// selfSignedPEM is a CA certificate in PEM, made for the test.
func selfSignedPEM(t *testing.T) []byte {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test-ca"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}
