package manifests_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/o2ims-operator/o2ims-operator/api/v1alpha1"
	"github.com/o2ims-operator/o2ims-operator/tests/kubeapi"
)

const nbiPath = "/O2ims_infrastructureProvisioning/v1/provisioningRequests"

// selfSigned answers a self-signed certificate and key (PEM) for the NBI Service's name and 127.0.0.1.
func selfSigned(t *testing.T) (certPEM, keyPEM []byte, cert *x509.Certificate) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(time.Now().UnixNano()),
		Subject:               pkix.Name{CommonName: "o2ims-operator-nbi.o2ims.svc"},
		DNSNames:              []string{"o2ims-operator-nbi.o2ims.svc", "o2ims-operator-nbi.o2ims.svc.cluster.local"},
		IPAddresses:           []net.IP{net.ParseIP("127.0.0.1")},
		NotBefore:             time.Now().Add(-time.Minute),
		NotAfter:              time.Now().Add(time.Hour),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	cert, err = x509.ParseCertificate(der)
	require.NoError(t, err)
	kder, err := x509.MarshalECPrivateKey(key)
	require.NoError(t, err)
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}), cert
}

// aggregate does what the controller-manager's ClusterRole aggregation controller does, which this API
// server (no controller-manager) does not: the built-in role's rules become those of every ClusterRole its
// aggregationRule selects. It answers the names selected.
func aggregate(t *testing.T, ctx context.Context, api *kubeapi.Server, role string) []string {
	t.Helper()
	rbac := api.AdminClientset().RbacV1()
	cr, err := rbac.ClusterRoles().Get(ctx, role, metav1.GetOptions{})
	require.NoError(t, err)
	require.NotNil(t, cr.AggregationRule, "the built-in %s aggregates", role)
	all, err := rbac.ClusterRoles().List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	var rules []rbacv1.PolicyRule
	var names []string
	for _, other := range all.Items {
		for _, sel := range cr.AggregationRule.ClusterRoleSelectors {
			s, err := metav1.LabelSelectorAsSelector(&sel)
			require.NoError(t, err)
			if other.Name != role && s.Matches(labels.Set(other.Labels)) {
				rules = append(rules, other.Rules...)
				names = append(names, other.Name)
				break
			}
		}
	}
	cr.Rules = rules
	_, err = rbac.ClusterRoles().Update(ctx, cr, metav1.UpdateOptions{})
	require.NoError(t, err)
	return names
}

// kubelet plays the kubelet's part for a rendered container outside a pod: Secret volumes are written to
// local directories (an optional Secret that is absent leaves its directory empty, a required one fails),
// and the environment resolved (values naming a mount path rewritten to its local directory, the downward
// API's metadata.namespace resolved).
func kubelet(t *testing.T, ctx context.Context, api *kubeapi.Server, spec corev1.PodSpec, namespace, dir string) map[string]string {
	t.Helper()
	local := map[string]string{} // mount path → local directory
	c := spec.Containers[0]
	for _, m := range c.VolumeMounts {
		var vol *corev1.Volume
		for i := range spec.Volumes {
			if spec.Volumes[i].Name == m.Name {
				vol = &spec.Volumes[i]
			}
		}
		require.NotNil(t, vol, m.Name)
		require.NotNil(t, vol.Secret, "%s: only Secret volumes are played here", m.Name)
		d := filepath.Join(dir, m.Name)
		require.NoError(t, os.MkdirAll(d, 0o700))
		sec, err := api.AdminClientset().CoreV1().Secrets(namespace).Get(ctx, vol.Secret.SecretName, metav1.GetOptions{})
		if apierrors.IsNotFound(err) && vol.Secret.Optional != nil && *vol.Secret.Optional {
			local[m.MountPath] = d
			continue
		}
		require.NoError(t, err, "the pod would wait in ContainerCreating for Secret %s", vol.Secret.SecretName)
		for k, v := range sec.Data {
			require.NoError(t, os.WriteFile(filepath.Join(d, k), v, 0o600))
		}
		local[m.MountPath] = d
	}
	env := map[string]string{}
	for _, e := range c.Env {
		switch {
		case e.ValueFrom != nil && e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == "metadata.namespace":
			env[e.Name] = namespace
		case e.ValueFrom != nil && e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == "status.podIP":
			// No pod here, so no pod IP: the operator runs as it does before the kubelet fills it.
		case e.ValueFrom != nil:
			t.Fatalf("%s is set from a source this test does not resolve", e.Name)
		default:
			v := e.Value
			for mp, d := range local {
				if strings.HasPrefix(v, mp+"/") {
					v = d + strings.TrimPrefix(v, mp)
				}
			}
			env[e.Name] = v
		}
	}
	return env
}

// nbi, ha and authentication as production stacks them, applied to the real API server with kubectl and
// run as the rendered Deployment's container (its arguments and environment, the certificate from the
// Secret `kubectl create secret tls` made, as the shipped ServiceAccount with only the rendered roles): the
// NBI listens beyond loopback over TLS only. A real TLS client verifying the self-signed certificate: no
// token is 401; a viewer (a ServiceAccount bound to the built-in `view`) lists and reads but cannot create
// (403); an editor (bound to `edit`) creates. Plain HTTP gets no answer from the API.
func TestNBIOverTLSWithAuthenticationAsRendered(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	api := kubeapi.Shared(t)
	binary := operatorBinary(t)
	dir := t.TempDir()
	site := filepath.Join(dir, "site")
	require.NoError(t, kubeapi.WriteKustomization(site, true, "nbi-auth", "nbi-tls", "ha"))
	out, err := kubectl(t, "apply", "-k", site)
	require.NoError(t, err, out)
	out, err = kubectl(t, "wait", "--for=condition=established", "crd/provisioningrequests.o2ims.provisioning.oran.org")
	require.NoError(t, err, out)

	certPEM, keyPEM, cert := selfSigned(t)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "tls.crt"), certPEM, 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "tls.key"), keyPEM, 0o600))
	out, err = kubectl(t, "create", "secret", "tls", "o2ims-operator-nbi-tls", "--namespace", "o2ims",
		"--cert", filepath.Join(dir, "tls.crt"), "--key", filepath.Join(dir, "tls.key"))
	require.NoError(t, err, out)

	rendered, err := kubectl(t, "kustomize", site)
	require.NoError(t, err, rendered)
	dep := deployment(t, parse(t, rendered))
	c := container(t, dep)
	env := kubelet(t, ctx, api, dep.Spec.Template.Spec, dep.Namespace, filepath.Join(dir, "volumes"))
	require.Equal(t, "0.0.0.0", env["NBI_HOST"])
	require.Equal(t, "kubernetes", env["NBI_AUTH"])

	// The only substitutions: free ports for the NBI and the health listener (this machine is shared), and
	// a kubeconfig with the ServiceAccount's token where a pod has its mounted token.
	ports, err := kubeapi.FreePorts(2)
	require.NoError(t, err)
	env["NBI_PORT"] = strconv.Itoa(ports[0])
	args := append([]string(nil), c.Args...)
	for i, a := range args {
		if strings.HasPrefix(a, "--liveness=") {
			args[i] = strings.Replace(a, ":8080/", fmt.Sprintf(":%d/", ports[1]), 1)
			require.NotEqual(t, a, args[i])
		}
	}
	token, err := api.ServiceAccountToken(ctx, "o2ims", dep.Spec.Template.Spec.ServiceAccountName, "")
	require.NoError(t, err)
	tokenFile := filepath.Join(dir, "token")
	require.NoError(t, os.WriteFile(tokenFile, []byte(token), 0o600))
	kc, err := api.WriteKubeconfig(filepath.Join(dir, "operator.kubeconfig"), "", tokenFile)
	require.NoError(t, err)
	args = append(args, "--kubeconfig="+kc)

	p := startOperator(t, binary, env, args, filepath.Join(dir, "operator.log"))
	defer p.stop(t)
	p.waitReady(t, ports[1])

	// Callers: the built-in roles, with ProvisioningRequests aggregated into them.
	assert.Contains(t, aggregate(t, ctx, api, "view"), "o2ims-provisioningrequests-view")
	edit := aggregate(t, ctx, api, "edit")
	assert.Contains(t, edit, "o2ims-provisioningrequests-edit")
	assert.NotContains(t, edit, "o2ims-provisioningrequests-view", "edit gains reads from its own role")
	// The NBI asks for its own audience and authorises with the O2IMS roles (nbi-auth's o2ims-roles.yaml):
	// the viewer is a reader there, the editor a provisioner.
	callers := map[string]string{}
	for role, o2ims := range map[string]string{"view": "o2ims-nbi-reader", "edit": "o2ims-nbi-provisioner"} {
		sa := "nbi-" + role
		tok, err := api.ServiceAccountTokenFor(ctx, "default", sa, "o2ims-nbi")
		require.NoError(t, err)
		out, err := kubectl(t, "create", "clusterrolebinding", sa, "--clusterrole="+role, "--serviceaccount=default:"+sa)
		require.NoError(t, err, out)
		out, err = kubectl(t, "create", "clusterrolebinding", sa+"-o2ims", "--clusterrole="+o2ims, "--serviceaccount=default:"+sa)
		require.NoError(t, err, out)
		callers[role] = tok
	}
	out, err = kubectl(t, "auth", "can-i", "list", "provisioningrequests.o2ims.provisioning.oran.org", "--as=system:serviceaccount:default:nbi-view")
	assert.NoError(t, err, out)
	out, err = kubectl(t, "auth", "can-i", "create", "provisioningrequests.o2ims.provisioning.oran.org", "--as=system:serviceaccount:default:nbi-view")
	assert.Error(t, err, "a viewer may create: %s", out)

	pool := x509.NewCertPool()
	pool.AddCert(cert)
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: pool, ServerName: "o2ims-operator-nbi.o2ims.svc", MinVersion: tls.VersionTLS12},
	}}
	url := fmt.Sprintf("https://127.0.0.1:%d%s", ports[0], nbiPath)
	do := func(method, target, token, body string) (int, string) {
		t.Helper()
		var r io.Reader
		if body != "" {
			r = strings.NewReader(body)
		}
		req, err := http.NewRequestWithContext(ctx, method, target, r)
		require.NoError(t, err)
		if body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := client.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		require.NotNil(t, resp.TLS)
		require.True(t, resp.TLS.PeerCertificates[0].Equal(cert), "served another certificate")
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	post := `{"provisioningRequestId": "nbi-tls-01", "name": "Edge 01", "description": "",
  "templateName": "nephio-workload-cluster", "templateVersion": "v3.0.0",
  "templateParameters": {"clusterName": "nbi-tls-01"}}`

	code, body := do(http.MethodGet, url, "", "")
	assert.Equal(t, http.StatusUnauthorized, code, body)
	code, body = do(http.MethodGet, url, callers["view"], "")
	assert.Equal(t, http.StatusOK, code, body)
	code, body = do(http.MethodPost, url, callers["view"], post)
	assert.Equal(t, http.StatusForbidden, code, body)
	code, body = do(http.MethodPost, url, callers["edit"], post)
	assert.Equal(t, http.StatusCreated, code, body)
	kubeapi.Eventually(t, 10*time.Second, func() bool {
		code, _ := do(http.MethodGet, url+"/nbi-tls-01", callers["view"], "")
		return code == http.StatusOK
	}, "the viewer never read the created request")

	// Plain HTTP to the NBI's address: the TLS listener answers nothing of the API.
	resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d%s", ports[0], nbiPath))
	if err == nil {
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		assert.Equal(t, http.StatusBadRequest, resp.StatusCode, "plain HTTP answered: %s", b)
		assert.NotContains(t, string(b), "provisioningRequest")
	}
}

// operator is the binary running as a rendered container would.
type operator struct {
	cmd  *exec.Cmd
	done chan error
	log  string
}

func startOperator(t *testing.T, binary string, env map[string]string, args []string, logPath string) *operator {
	t.Helper()
	logFile, err := os.Create(logPath)
	require.NoError(t, err)
	cmd := exec.Command(binary, args...)
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	require.NoError(t, cmd.Start())
	p := &operator{cmd: cmd, done: make(chan error, 1), log: logPath}
	go func() { p.done <- cmd.Wait(); logFile.Close() }()
	return p
}

func (p *operator) logText() string {
	b, _ := os.ReadFile(p.log)
	return string(b)
}

// waitReady waits until /readyz on the health port answers 200.
func (p *operator) waitReady(t *testing.T, healthPort int) {
	t.Helper()
	health := fmt.Sprintf("http://127.0.0.1:%d/readyz", healthPort)
	kubeapi.Eventually(t, 90*time.Second, func() bool {
		resp, err := http.Get(health)
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}, "the operator never became ready:\n%s", lazyLog{p})
}

// stop sends SIGTERM and expects exit 0 within 10 s.
func (p *operator) stop(t *testing.T) {
	t.Helper()
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-p.done:
		assert.NoError(t, err, "exit after SIGTERM")
	case <-time.After(10 * time.Second):
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		<-p.done
		t.Error("still running 10 s after SIGTERM")
	}
	if t.Failed() {
		t.Logf("operator log:\n%s", p.logText())
	}
}

type lazyLog struct{ p *operator }

func (l lazyLog) String() string { return l.p.logText() }

// The rendered base with NBI_HOST moved off loopback and no TLS (what a Deployment written for the Python
// image may set): the operator runs without its NBI — the chain works, /readyz is 200 with a line saying
// why and what to set, the log says it once, nothing listens on NBI_PORT; with NBI_INSECURE=true the NBI
// is served, with a WARN line saying it is in clear.
func TestNonLoopbackNBIWithoutTLSNeedsNBIInsecure(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	api := kubeapi.Shared(t)
	binary := operatorBinary(t)
	dir := t.TempDir()
	site := filepath.Join(dir, "site")
	require.NoError(t, kubeapi.WriteKustomization(site, true, "nbi-auth"))
	out, err := kubectl(t, "apply", "-k", site)
	require.NoError(t, err, out)
	rendered, err := kubectl(t, "kustomize", site)
	require.NoError(t, err, rendered)
	dep := deployment(t, parse(t, rendered))
	token, err := api.ServiceAccountToken(ctx, "o2ims", dep.Spec.Template.Spec.ServiceAccountName, "")
	require.NoError(t, err)
	tokenFile := filepath.Join(dir, "token")
	require.NoError(t, os.WriteFile(tokenFile, []byte(token), 0o600))
	kc, err := api.WriteKubeconfig(filepath.Join(dir, "operator.kubeconfig"), "", tokenFile)
	require.NoError(t, err)
	start := func(name string, extra map[string]string) (*operator, int, int) {
		env := kubelet(t, ctx, api, dep.Spec.Template.Spec, dep.Namespace, filepath.Join(dir, name))
		require.Equal(t, "127.0.0.1", env["NBI_HOST"], "nbi-auth alone keeps the NBI on loopback")
		ports, err := kubeapi.FreePorts(2)
		require.NoError(t, err)
		env["NBI_PORT"] = strconv.Itoa(ports[0])
		for k, v := range extra {
			env[k] = v
		}
		args := []string{"--kubeconfig=" + kc, "--log-format=console"}
		for _, a := range container(t, dep).Args {
			args = append(args, strings.Replace(a, ":8080/", fmt.Sprintf(":%d/", ports[1]), 1))
		}
		return startOperator(t, binary, env, args, filepath.Join(dir, name+".log")), ports[1], ports[0]
	}

	p, health, nbiPort := start("refused", map[string]string{"NBI_HOST": "0.0.0.0"})
	runsWithoutItsNBI(t, api, p, health, nbiPort)
	p.stop(t)

	p, health, _ = start("insecure", map[string]string{"NBI_HOST": "0.0.0.0", "NBI_INSECURE": "true"})
	defer p.stop(t)
	p.waitReady(t, health)
	var warn string
	for _, l := range strings.Split(p.logText(), "\n") {
		if strings.Contains(l, "NBI_INSECURE=true") {
			warn = l
		}
	}
	assert.Contains(t, warn, "WARN")
	assert.Contains(t, warn, "without TLS")
}

// runsWithoutItsNBI checks an operator whose NBI address was refused: ready, saying why on /readyz and in
// its log, nothing on the NBI's port, and the chain handling a request (an invalid one: failed by the
// chain without Porch or Cluster API having to answer).
func runsWithoutItsNBI(t *testing.T, api *kubeapi.Server, p *operator, health, nbiPort int) {
	t.Helper()
	const why = `NBI_HOST="0.0.0.0" is not a loopback address and the NBI has no TLS, so it is not served (the provisioning chain runs): set NBI_HOST=127.0.0.1, or NBI_TLS_CERT_FILE and NBI_TLS_KEY_FILE (manifests/nbi-tls), or NBI_INSECURE=true to serve it in clear`
	p.waitReady(t, health)
	resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/readyz", health))
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Contains(t, string(body), "degraded: northbound: "+why)
	assert.Contains(t, p.logText(), "the northbound API is not served: "+why)
	_, err = net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", nbiPort), time.Second)
	assert.Error(t, err, "something listens on NBI_PORT")

	ctx := context.Background()
	pr := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": v1alpha1.APIVersion, "kind": v1alpha1.Kind,
		"metadata": map[string]any{"name": "nbi-refused-chain"},
		"spec":     map[string]any{"templateName": "t", "templateVersion": "v1", "templateParameters": map[string]any{}},
	}}
	res := api.AdminDynamic().Resource(v1alpha1.GVR)
	_, err = res.Create(ctx, pr, metav1.CreateOptions{})
	require.NoError(t, err)
	kubeapi.Eventually(t, 60*time.Second, func() bool {
		u, err := res.Get(ctx, "nbi-refused-chain", metav1.GetOptions{})
		return err == nil && v1alpha1.StatusOf(u).State == v1alpha1.StateFailed &&
			strings.Contains(v1alpha1.StatusOf(u).Message, "validation failed")
	}, "the chain never handled a request:\n%s", lazyLog{p})
	require.NoError(t, res.Delete(ctx, "nbi-refused-chain", metav1.DeleteOptions{}))
	kubeapi.Eventually(t, 30*time.Second, func() bool {
		_, err := res.Get(ctx, "nbi-refused-chain", metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	}, "the request never went away")
}
