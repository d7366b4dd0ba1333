//go:build integration

// Reading what adapters applied back from the kube-apiserver.

package reconcile

import (
	"context"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func (s *system) namespaceExists(name string) bool {
	s.t.Helper()
	_, err := s.cs.CoreV1().Namespaces().Get(context.Background(), name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return false
	}
	if err != nil {
		s.t.Fatal(err)
	}
	return true
}

func (s *system) configMapExists(namespace, name string) bool {
	s.t.Helper()
	_, err := s.cs.CoreV1().ConfigMaps(namespace).Get(context.Background(), name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return false
	}
	if err != nil {
		s.t.Fatal(err)
	}
	return true
}
