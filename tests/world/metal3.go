package world

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/o2ims-operator/o2ims-operator/api/external"
)

const bmoFinalizer = "baremetalhost.metal3.io"

var secretGVR = schema.GroupVersionResource{Version: "v1", Resource: "secrets"}

// metal3 plays the baremetal-operator: registering → inspecting → available with operationalStatus OK,
// or a registration error when the BMC credentials are refused.
type metal3 struct {
	w        *World
	mu       sync.Mutex
	deleting map[string]time.Time
}

func (m *metal3) reconcile(ctx context.Context, bmh *unstructured.Unstructured, first time.Time) (time.Duration, error) {
	o := m.w.opts
	dyn := o.Dynamic.Resource(external.BareMetalHostGVR).Namespace(bmh.GetNamespace())
	if bmh.GetDeletionTimestamp() != nil {
		return m.w.releaseFinalizer(ctx, dyn, bmh, bmoFinalizer, &m.mu, &m.deleting)
	}
	if o.Metal3Finalizer && !hasFinalizer(bmh, bmoFinalizer) {
		return 0, addFinalizer(ctx, dyn, bmh, bmoFinalizer)
	}
	state, opStatus, errType, errMsg, errCount := "registering", "OK", "", "", int64(0)
	again := due(first, o.RegisterDelay)
	if again == 0 {
		state, again = "inspecting", due(first, o.RegisterDelay+o.InspectDelay)
		if again == 0 {
			state = "available"
		}
	}
	if m.credentialsRefused(ctx, bmh) {
		state, opStatus, errType, again = "registering", "error", "registration error", 0
		errMsg, errCount = "Failed to get power state for node: authentication failed", 1
	}
	state, poweredOn, imageAgain := m.w.capm3.imageState(bmh, state) // a Machine's image (capm3.go)
	if imageAgain > 0 {
		again = imageAgain
	}
	status := map[string]any{
		"provisioning":      map[string]any{"ID": string(bmh.GetUID()), "state": state},
		"operationalStatus": opStatus,
		"errorMessage":      errMsg,
		"poweredOn":         poweredOn,
		"errorCount":        errCount,
	}
	if errType != "" {
		status["errorType"] = errType
	}
	current, _, _ := unstructured.NestedMap(bmh.Object, "status")
	if !sameIgnoringTimes(current, status) {
		body, _ := json.Marshal(map[string]any{"status": status})
		_, err := dyn.Patch(ctx, bmh.GetName(), types.MergePatchType, body, metav1.PatchOptions{}, "status")
		if err != nil && !apierrors.IsNotFound(err) {
			return 0, err
		}
	}
	return again, nil
}

func (m *metal3) credentialsRefused(ctx context.Context, bmh *unstructured.Unstructured) bool {
	if m.w.opts.BadCredentialsUser == "" {
		return false
	}
	name, _, _ := unstructured.NestedString(bmh.Object, "spec", "bmc", "credentialsName")
	sec, err := m.w.opts.Dynamic.Resource(secretGVR).Namespace(bmh.GetNamespace()).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return false
	}
	user, _, _ := unstructured.NestedString(sec.Object, "data", "username")
	return user == b64(m.w.opts.BadCredentialsUser)
}

func b64(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }
