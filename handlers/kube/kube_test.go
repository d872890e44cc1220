package kube

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/o2ims-operator/o2ims-operator/framework"
)

// The wrong answer is retried every pass; it is logged once per object and read, again only after a
// right answer in between.
func TestAWrongAnswerIsLoggedOncePerObject(t *testing.T) {
	core, logs := observer.New(zap.InfoLevel)
	cause := func(uid string) *framework.Cause {
		u := &unstructured.Unstructured{Object: map[string]any{}}
		u.SetUID(types.UID(uid))
		return &framework.Cause{Object: u, Logger: zap.New(core)}
	}
	wrong := framework.CheckNamedAnswer("get packagevariants default/x", &unstructured.Unstructured{Object: map[string]any{"items": []any{}}}, "", "", "default", "x")
	require.Error(t, wrong)
	a, b := cause("uid-a"), cause("uid-b")
	for range 3 {
		assert.True(t, errors.Is(noteAnswer(a, "get packagevariants default/x", wrong), wrong))
	}
	assert.Equal(t, 1, logs.Len(), "one line for three passes")
	noteAnswer(b, "get packagevariants default/x", wrong)
	noteAnswer(a, "get baremetalhosts metal3/netbox-1", wrong)
	assert.Equal(t, 3, logs.Len(), "another request, another read: each said once")
	assert.NoError(t, noteAnswer(a, "get packagevariants default/x", nil))
	noteAnswer(a, "get packagevariants default/x", wrong)
	assert.Equal(t, 4, logs.Len(), "said again after a right answer")
	assert.Contains(t, logs.All()[0].Message, "protocol error")
	assert.Nil(t, noteAnswer(nil, "op", nil))
}
