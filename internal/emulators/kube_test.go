package emulators

import (
	"context"
	"net"
	"os"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

func TestMain(m *testing.M) { os.Exit(Main(m)) }

func clientFor(t *testing.T, kubeconfig string) *kubernetes.Clientset {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	c, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// The shared control plane answers with the admin kubeconfig, gives each test its own namespace,
// and enforces RBAC: a user and a ServiceAccount are refused until a RoleBinding grants them,
// and then get exactly what the Role lists.
func TestKubeRBAC(t *testing.T) {
	k := SharedKube(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ns := k.Namespace(t)
	admin := clientFor(t, k.Kubeconfig)
	if _, err := admin.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c"}}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("admin create: %v", err)
	}

	user := clientFor(t, k.UserKubeconfig(t, "alice", "team-a"))
	sa := clientFor(t, k.ServiceAccountKubeconfig(t, ns, "lifeboat"))
	for name, c := range map[string]*kubernetes.Clientset{"user": user, "serviceaccount": sa} {
		if _, err := c.CoreV1().ConfigMaps(ns).Get(ctx, "c", metav1.GetOptions{}); !apierrors.IsForbidden(err) {
			t.Fatalf("%s before the binding: got %v, want Forbidden", name, err)
		}
	}
	_, err := admin.RbacV1().Roles(ns).Create(ctx, &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Name: "read-configmaps"},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get"}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = admin.RbacV1().RoleBindings(ns).Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "read-configmaps"},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "read-configmaps"},
		Subjects: []rbacv1.Subject{
			{Kind: "Group", APIGroup: "rbac.authorization.k8s.io", Name: "team-a"},
			{Kind: "ServiceAccount", Name: "lifeboat", Namespace: ns},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	k.WaitAllowed(t, ns, "alice", []string{"team-a"}, "get", "", "configmaps", "")
	k.WaitAllowed(t, ns, "system:serviceaccount:"+ns+":lifeboat", nil, "get", "", "configmaps", "")
	for name, c := range map[string]*kubernetes.Clientset{"user": user, "serviceaccount": sa} {
		if _, err := c.CoreV1().ConfigMaps(ns).Get(ctx, "c", metav1.GetOptions{}); err != nil {
			t.Fatalf("%s get after the binding: %v", name, err)
		}
		err := c.CoreV1().ConfigMaps(ns).Delete(ctx, "c", metav1.DeleteOptions{})
		if !apierrors.IsForbidden(err) {
			t.Fatalf("%s delete (not granted): got %v, want Forbidden", name, err)
		}
	}
}

// A Service gets a cluster IP on loopback, in the range, that a local server can listen on.
func TestKubeServiceIP(t *testing.T) {
	k := SharedKube(t)
	ns := k.Namespace(t)
	ip := k.ServiceIP(t, ns, "backend", 8000)
	_, cidr, _ := net.ParseCIDR(KubeServiceCIDR)
	if parsed := net.ParseIP(ip); parsed == nil || !parsed.IsLoopback() || !cidr.Contains(parsed) {
		t.Fatalf("cluster IP %q: want a loopback address in %s", ip, KubeServiceCIDR)
	}
	l, err := net.Listen("tcp", net.JoinHostPort(ip, "0"))
	if err != nil {
		t.Fatalf("listening on the cluster IP: %v", err)
	}
	l.Close()
}
