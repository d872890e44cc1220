package query

import (
	"fmt"
	"strings"
)

// Bounds of a provisioningRequestId, which becomes the ProvisioningRequest's metadata.name.
const (
	maxRequestIDLength = 253 // an RFC 1123 subdomain
	maxLabelLength     = 63  // each of its dot-separated labels
)

// ValidateRequestID checks that id is a lowercase RFC 1123 subdomain: at most 253 characters of
// dot-separated labels, each 1 to 63 characters of [a-z0-9-] that start and end alphanumeric. Checking
// label by label refuses "a.-b" here instead of sending it to the API server to be refused there; it is
// stricter than the API server (which does not bound labels), never looser. A refusal is a 400 *Error
// (a caller naming a request by an impossible id in the path answers 404 instead: nothing has it).
func ValidateRequestID(id string) error {
	if id == "" {
		return errorf(statusBadRequest, "provisioningRequestId is empty")
	}
	if len(id) > maxRequestIDLength {
		return errorf(statusBadRequest, "provisioningRequestId is %d characters long; at most %d are allowed",
			len(id), maxRequestIDLength)
	}
	for i, label := range strings.Split(id, ".") {
		if err := validateLabel(label); err != nil {
			return errorf(statusBadRequest, "provisioningRequestId %q is not a lowercase RFC 1123 subdomain: label %d %s",
				id, i+1, err)
		}
	}
	return nil
}

func validateLabel(label string) error {
	switch {
	case label == "":
		return fmt.Errorf("is empty")
	case len(label) > maxLabelLength:
		return fmt.Errorf("is %d characters long; at most %d are allowed", len(label), maxLabelLength)
	case !alnum(label[0]):
		return fmt.Errorf("%q must start with a lowercase letter or digit", label)
	case !alnum(label[len(label)-1]):
		return fmt.Errorf("%q must end with a lowercase letter or digit", label)
	}
	for i := 0; i < len(label); i++ {
		if c := label[i]; !alnum(c) && c != '-' {
			return fmt.Errorf("%q may contain only lowercase letters, digits and '-'", label)
		}
	}
	return nil
}

func alnum(c byte) bool { return c >= 'a' && c <= 'z' || c >= '0' && c <= '9' }
