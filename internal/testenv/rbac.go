package testenv

import (
	"context"
	"fmt"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/hyperfleet/hyperfleet/internal/await"
)

// Grant gives user the rules cluster-wide (a ClusterRole and its
// ClusterRoleBinding, both named user) and returns once the
// kube-apiserver's authorizer allows every verb of every rule. The RBAC
// authorizer learns of a new binding from its informer, a moment after the
// create returns: a request made at once can still be refused. The wait
// asks the same authorizer (SubjectAccessReview) instead of sleeping.
func Grant(t testing.TB, k *Kube, user string, rules ...rbacv1.PolicyRule) {
	t.Helper()
	ctx := context.Background()
	cs, err := kubernetes.NewForConfig(k.Config)
	if err != nil {
		t.Fatal(err)
	}
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: user}, Rules: rules}
	if _, err := cs.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create ClusterRole %s: %v", user, err)
	}
	binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: user},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: user},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}}}
	if _, err := cs.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create ClusterRoleBinding %s: %v", user, err)
	}
	for _, rule := range rules {
		for _, group := range rule.APIGroups {
			for _, res := range rule.Resources {
				for _, verb := range rule.Verbs {
					attrs := authorizationv1.ResourceAttributes{Verb: verb, Group: group, Resource: res}
					await.Eventually(t, 30*time.Second, fmt.Sprintf("the authorizer to allow %s to %s %s", user, verb, res),
						func() (bool, string) { return allowed(ctx, cs, user, attrs) })
				}
			}
		}
	}
}

// allowed asks the kube-apiserver whether user may do what attrs say.
func allowed(ctx context.Context, cs kubernetes.Interface, user string, attrs authorizationv1.ResourceAttributes) (bool, string) {
	review := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{User: user, ResourceAttributes: &attrs}}
	got, err := cs.AuthorizationV1().SubjectAccessReviews().Create(ctx, review, metav1.CreateOptions{})
	if err != nil {
		return false, err.Error()
	}
	if !got.Status.Allowed {
		return false, "refused: " + got.Status.Reason
	}
	return true, ""
}
