package kubeapi

import (
	"context"
	"flag"
	"fmt"
	"os"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
)

var shared *Server

// RunMain starts one API server for a test package, installs the given CRDs, runs the setup hooks (which
// return their cleanup), runs the tests and stops everything. Call it from TestMain:
// os.Exit(kubeapi.RunMain(m, kubeapi.DefaultCRDs)).
func RunMain(m *testing.M, crds func() ([]string, error), setup ...func(*Server) (func(), error)) int {
	// A fuzzing run (coordinator or worker) runs only fuzz targets, which need no API server.
	flag.Parse()
	for _, name := range []string{"test.fuzz", "test.fuzzworker"} {
		if f := flag.Lookup(name); f != nil && f.Value.String() != "" && f.Value.String() != "false" {
			return m.Run()
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	s, err := Start(ctx, Options{})
	cancel()
	if err != nil {
		fmt.Fprintln(os.Stderr, "kubeapi:", err)
		return 1
	}
	defer s.Stop()
	if crds != nil {
		paths, err := crds()
		if err == nil {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			err = s.InstallCRDs(ctx, paths...)
			cancel()
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "kubeapi: installing CRDs:", err)
			return 1
		}
	}
	for _, hook := range setup {
		cleanup, err := hook(s)
		if err != nil {
			fmt.Fprintln(os.Stderr, "kubeapi: test setup:", err)
			return 1
		}
		defer cleanup()
	}
	shared = s
	return m.Run()
}

// Shared is the package's server started by RunMain.
func Shared(t testing.TB) *Server {
	t.Helper()
	if shared == nil {
		t.Fatal("kubeapi.Shared: no server; call kubeapi.RunMain from TestMain")
	}
	return shared
}

// ServiceAccountToken ensures namespace and ServiceAccount exist and returns a fresh token for it from the
// TokenRequest API. When boundSecret is set, the token is bound to a Secret of that name (created if
// missing), so deleting that Secret revokes the token — how tests rotate credentials.
func (s *Server) ServiceAccountToken(ctx context.Context, namespace, name, boundSecret string) (string, error) {
	cs := s.AdminClientset()
	if err := s.EnsureNamespace(ctx, namespace); err != nil {
		return "", err
	}
	_, err := cs.CoreV1().ServiceAccounts(namespace).Create(ctx, &corev1.ServiceAccount{
		ObjectMeta: metav1.ObjectMeta{Name: name},
	}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return "", err
	}
	req := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{
		ExpirationSeconds: ptr.To[int64](3600),
	}}
	if boundSecret != "" {
		sec, err := cs.CoreV1().Secrets(namespace).Create(ctx, &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: boundSecret},
		}, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			sec, err = cs.CoreV1().Secrets(namespace).Get(ctx, boundSecret, metav1.GetOptions{})
		}
		if err != nil {
			return "", err
		}
		req.Spec.BoundObjectRef = &authenticationv1.BoundObjectReference{
			Kind: "Secret", APIVersion: "v1", Name: sec.Name, UID: sec.UID,
		}
	}
	tr, err := cs.CoreV1().ServiceAccounts(namespace).CreateToken(ctx, name, req, metav1.CreateOptions{})
	if err != nil {
		return "", err
	}
	return tr.Status.Token, nil
}

// ServiceAccountTokenFor is a fresh token of the ServiceAccount (created if missing) minted for audience,
// as `kubectl create token NAME --audience AUDIENCE` mints it.
func (s *Server) ServiceAccountTokenFor(ctx context.Context, namespace, name, audience string) (string, error) {
	if _, err := s.ServiceAccountToken(ctx, namespace, name, ""); err != nil { // ensures both exist
		return "", err
	}
	req := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{
		ExpirationSeconds: ptr.To[int64](3600), Audiences: []string{audience},
	}}
	tr, err := s.AdminClientset().CoreV1().ServiceAccounts(namespace).CreateToken(ctx, name, req, metav1.CreateOptions{})
	if err != nil {
		return "", err
	}
	return tr.Status.Token, nil
}

// EnsureNamespace creates a namespace if it does not exist.
func (s *Server) EnsureNamespace(ctx context.Context, name string) error {
	_, err := s.AdminClientset().CoreV1().Namespaces().Create(ctx, &corev1.Namespace{
		ObjectMeta: metav1.ObjectMeta{Name: name},
	}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	return nil
}

// BindClusterRole grants a ClusterRole to a user (tests give the tester just what they need).
func (s *Server) BindClusterRole(ctx context.Context, bindingName, role string, subject rbacv1.Subject) error {
	_, err := s.AdminClientset().RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: bindingName},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: role},
		Subjects:   []rbacv1.Subject{subject},
	}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	return nil
}

// Eventually polls cond until it holds, failing the test with the message after timeout. Tests against a
// real API server wait for convergence; they never assert how long it took.
func Eventually(t testing.TB, timeout time.Duration, cond func() bool, format string, args ...any) {
	t.Helper()
	// cond runs on the test's goroutine (unlike require.Eventually's), so it may use require itself.
	err := wait.PollUntilContextTimeout(context.Background(), 25*time.Millisecond, timeout, true,
		func(context.Context) (bool, error) { return cond(), nil })
	if err != nil {
		t.Fatalf(format, args...)
	}
}
