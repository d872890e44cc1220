package kubeapi

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Events lists the events about the object called name in namespace (of that kind, unless kind is "").
func (s *Server) Events(t testing.TB, namespace, name, kind string) []corev1.Event {
	t.Helper()
	selector := "involvedObject.name=" + name
	if kind != "" {
		selector += ",involvedObject.kind=" + kind
	}
	list, err := s.AdminClientset().CoreV1().Events(namespace).List(context.Background(), metav1.ListOptions{FieldSelector: selector})
	if err != nil {
		t.Fatalf("listing the events about %s/%s: %v", namespace, name, err)
	}
	return list.Items
}

// HasEvent reports whether evs holds an event of eventType and reason whose message contains contains.
func HasEvent(evs []corev1.Event, eventType, reason, contains string) bool {
	for _, e := range evs {
		if e.Type == eventType && e.Reason == reason && strings.Contains(e.Message, contains) {
			return true
		}
	}
	return false
}
