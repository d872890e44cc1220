package hosts

import (
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/o2ims-operator/o2ims-operator/netbox"
)

// The one table of Metal3's registration errors the host step tells apart (docs/runbook.md, "BMC
// faults", lists it). A BareMetalHost is in a registration error when BMO's setErrorMessage wrote
// operationalStatus "error" and errorType "registration error"; errorMessage is then BMO's own text or
// Ironic's node last_error, and errorCount counts the failed attempts since the last success (BMO
// retries after 2^errorCount minutes, jittered down by up to half). Sources, by commit:
//   - BMO metal3-io/baremetal-operator@02aa5059e3482f9dc3b5115c3a45cec4b000ae16:
//     apis/metal3.io/v1alpha1/baremetalhost_types.go (ErrorType, ErrorCount),
//     internal/controller/metal3.io/baremetalhost_controller.go (recordActionFailure, setErrorMessage,
//     credentialsErrorResult), internal/controller/metal3.io/errors.go, pkg/hardwareutils/bmc/errors.go,
//     pkg/provisioner/ironic/register.go (Enroll with LastError → operationFailed(LastError)),
//     internal/controller/metal3.io/action_result.go (calculateBackoff).
//   - Ironic openstack/ironic@7bc6aba7dda0b8a863d0310af6f06925d30c9563: ironic/conductor/verify.py
//     ("Failed to get power state for node …"), ironic/drivers/modules/redfish/utils.py (a sushy
//     AccessError becomes RedfishError, a ConnectionError RedfishConnectionError),
//     ironic/common/exception.py (their texts; IPMIFailure "IPMI call failed: %(cmd)s.").
//   - sushy openstack/sushy@820c32f22ced3e67873868033f8a4b36f8791b4f sushy/exceptions.py
//     (raise_for_response: 401 and 403 are AccessError, "HTTP %(method)s %(url)s returned code %(code)s.").
//
// What is not in the table is a fault of uncertain cause (a timeout, a refused connection, an IPMI
// failure — ipmitool says the same for a wrong password and for no answer, so Ironic's "IPMI call
// failed: power status." cannot tell them apart): believed only once it persists.
var registrationErrors = []struct {
	contains string // a substring of status.errorMessage
	cause    faultCause
	source   string
}{
	// Our BMC Secret (the copy in METAL3_NAMESPACE) is gone or lacks a field: no fault of the host's;
	// the copy is made again from the credentials Secret, whose own absence is certain (claimed.go).
	{"BMC CredentialsName secret doesn't exist", causeOurSecret, "BMO errors.go ResolveBMCSecretRefError"},
	{"No BMC CredentialsName defined", causeOurSecret, "BMO errors.go EmptyBMCSecretError"},
	{"Validation error with BMC credentials", causeOurSecret, "BMO bmc/errors.go CredentialsValidationError"},
	// The BMC answered and refused the credentials (Redfish 401/403 through sushy's AccessError, which
	// Ironic wraps in RedfishError). Believed sooner than a timeout: the BMC itself said no.
	{"returned code 401", causeAuth, "sushy HTTPError.message via Ironic RedfishError"},
	{"returned code 403", causeAuth, "sushy HTTPError.message via Ironic RedfishError"},
}

// faultCause is how sure a registration error's cause is.
type faultCause int

const (
	causeUncertain faultCause = iota // unreachable, timed out, IPMI: only persistence says it is the host's
	causeAuth                        // the BMC refused the credentials
	causeOurSecret                   // our BMC Secret is missing or incomplete: never the host's fault
)

// reason is the NetBox quarantine reason of a persistent fault of this cause.
func (c faultCause) reason() netbox.QuarantineReason {
	if c == causeAuth {
		return netbox.ReasonCredentialsRefused
	}
	return netbox.ReasonRegistrationFailed
}

// registrationFault is what a BareMetalHost says of its registration: whether it is in a registration
// error, of which cause, after how many failed attempts, and Metal3's text (raw: sanitise before use).
type registrationFault struct {
	failing bool
	cause   faultCause
	count   int64
	message string
	detail  string // the sanitised form the status shows (hostReady)
}

func registrationFaultOf(bmh *unstructured.Unstructured) registrationFault {
	if !inRegistrationError(bmh) {
		return registrationFault{}
	}
	msg, _, _ := unstructured.NestedString(bmh.Object, "status", "errorMessage")
	count, _, _ := unstructured.NestedInt64(bmh.Object, "status", "errorCount")
	f := registrationFault{failing: true, count: count, message: msg}
	for _, row := range registrationErrors {
		if strings.Contains(msg, row.contains) && row.cause > f.cause {
			f.cause = row.cause
		}
	}
	return f
}
