package world

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/url"
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

// BMCFault is how a simulated BMC answers Ironic's power-state check while its host registers.
type BMCFault string

const (
	BMCHealthy BMCFault = ""
	// BMCUnreachable: no answer (a switch reboot, a BMC network outage).
	BMCUnreachable BMCFault = "unreachable"
	// BMCAuthRefused: the BMC answers 401 (wrong credentials; also every BMC Secret whose username is
	// Options.BadCredentialsUser).
	BMCAuthRefused BMCFault = "auth"
)

// metal3 plays the baremetal-operator: registering → inspecting → available with operationalStatus OK,
// or a registration error while the BMC cannot be reached or refuses the credentials.
//
// As BMO does (metal3-io/baremetal-operator@02aa5059e3482f9dc3b5115c3a45cec4b000ae16): a failed
// registration goes through recordActionFailure → setErrorMessage
// (internal/controller/metal3.io/baremetalhost_controller.go): operationalStatus "error", errorType
// "registration error", errorMessage Ironic's node last_error (pkg/provisioner/ironic/register.go,
// Enroll with LastError), errorCount incremented once per failed attempt; the next attempt comes after
// calculateBackoff(errorCount) (action_result.go: 2^n minutes, jittered down by up to half), here
// RegistrationRetry·2^(n-1). An attempt that gets through clears the error (clearError) and a completed
// registration sets errorCount back to 0 (host_state_machine.go handleRegistering).
type metal3 struct {
	w        *World
	mu       sync.Mutex
	deleting map[string]time.Time
	amu      sync.Mutex
	attempts map[string]attempt // by BareMetalHost uid: the failing registration's last attempt
}

type attempt struct {
	next  time.Time
	count int64
	fault BMCFault
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
	status, again := m.registration(ctx, bmh, first)
	if prov, ok := status["provisioning"].(map[string]any); ok && status["operationalStatus"] == "OK" {
		state, poweredOn, imageAgain := m.w.capm3.imageState(bmh, prov["state"].(string)) // a Machine's image (capm3.go)
		prov["state"], status["poweredOn"] = state, poweredOn
		if imageAgain > 0 {
			again = imageAgain
		}
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

// registration is the host's status now and when to look again.
func (m *metal3) registration(ctx context.Context, bmh *unstructured.Unstructured, first time.Time) (map[string]any, time.Duration) {
	o := m.w.opts
	uid := string(bmh.GetUID())
	status := map[string]any{
		"provisioning":      map[string]any{"ID": uid, "state": "registering"},
		"operationalStatus": "OK", "errorMessage": "", "poweredOn": false, "errorCount": int64(0),
	}
	fault := m.fault(ctx, bmh)
	m.amu.Lock()
	defer m.amu.Unlock()
	if m.attempts == nil {
		m.attempts = map[string]attempt{}
	}
	a, failing := m.attempts[uid]
	if failing && time.Now().Before(a.next) {
		// Between attempts the last failure stands (BMO requeues after its backoff).
		m.failed(status, bmh, a)
		return status, time.Until(a.next)
	}
	if fault != BMCHealthy {
		a.count++
		a.next, a.fault = time.Now().Add(o.RegistrationRetry<<min(a.count-1, 9)), fault
		m.attempts[uid] = a
		m.failed(status, bmh, a)
		return status, time.Until(a.next)
	}
	// An attempt that gets through ends the failure: errorCount is 0 again once registered.
	delete(m.attempts, uid)
	state, again := "registering", due(first, o.RegisterDelay)
	if again == 0 {
		state, again = "inspecting", due(first, o.RegisterDelay+o.InspectDelay)
		if again == 0 {
			state = "available"
		}
	}
	status["provisioning"] = map[string]any{"ID": uid, "state": state}
	return status, again
}

// failed writes a failing attempt as setErrorMessage does.
func (m *metal3) failed(status map[string]any, bmh *unstructured.Unstructured, a attempt) {
	addr, _, _ := unstructured.NestedString(bmh.Object, "spec", "bmc", "address")
	status["operationalStatus"], status["errorType"], status["errorCount"] = "error", "registration error", a.count
	status["errorMessage"] = ironicLastError(a.fault, string(bmh.GetUID()), addr)
}

// ironicLastError is the node's last_error after a failed verify (openstack/ironic@7bc6aba7dda0b8a863d0310af6f06925d30c9563
// ironic/conductor/verify.py: "Failed to get power state for node %(node)s. Error: %(msg)s"), msg the
// redfish power interface's exception (ironic/drivers/modules/redfish/utils.py): on sushy's AccessError
// (a 401/403) RedfishError "Redfish exception occurred. Error: %(error)s", on sushy's ConnectionError
// RedfishConnectionError "Redfish connection failed for node %(node)s: %(error)s"
// (ironic/common/exception.py); sushy's texts from openstack/sushy@820c32f22ced3e67873868033f8a4b36f8791b4f
// sushy/exceptions.py (HTTPError.message, ConnectionError.message).
func ironicLastError(fault BMCFault, node, addr string) string {
	target := "https://" + hostOf(addr) + "/redfish/v1/SessionService/Sessions"
	if fault == BMCAuthRefused {
		return fmt.Sprintf("Failed to get power state for node %s. Error: Redfish exception occurred. Error: HTTP POST %s "+
			"returned code 401. Base.1.0.GeneralError: unknown error. Extended information: None", node, target)
	}
	return fmt.Sprintf("Failed to get power state for node %s. Error: Redfish connection failed for node %s: "+
		"Unable to connect to %s. Error: HTTPSConnectionPool(host='%s', port=443): Max retries exceeded with url: "+
		"/redfish/v1/SessionService/Sessions (Caused by ConnectTimeoutError(connection timed out))", node, node, target, hostOf(addr))
}

// hostOf is the BMC address's host, as sushy's URL names it.
func hostOf(addr string) string {
	if u, err := url.Parse(addr); err == nil && u.Host != "" {
		return u.Host
	}
	return addr
}

// fault is how the host's BMC answers now: its own fault (World.SetBMCFault), else a refusal of
// BadCredentialsUser.
func (m *metal3) fault(ctx context.Context, bmh *unstructured.Unstructured) BMCFault {
	addr, _, _ := unstructured.NestedString(bmh.Object, "spec", "bmc", "address")
	if f := m.w.faultAt(addr); f != BMCHealthy {
		return f
	}
	if m.credentialsRefused(ctx, bmh) {
		return BMCAuthRefused
	}
	return BMCHealthy
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
